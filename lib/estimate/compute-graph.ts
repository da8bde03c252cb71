import { GgufError } from '../errors.js';
import { allocateGraph, type AllocatorCheckpoint, type GraphTensor } from './graph-allocator.js';

/**
 * A compute graph of sizes, built as llama.cpp builds its own: ops make tensors, and `expand`
 * adds a tensor and what it needs in ggml_build_forward_expand's order (sources depth first, left
 * to right), which is the order ggml's allocator places and frees them in.
 */
export class ComputeGraph {
  private nextId = 0;
  private readonly visited = new Set<GraphTensor>();
  readonly leafs: GraphTensor[] = [];
  readonly nodes: GraphTensor[] = [];
  /** Where each layer's building began: the graph's node count and next tensor id then. */
  readonly marks: { readonly node: number; readonly id: number }[] = [];
  /** Weights and the KV cache: memory outside the compute buffer. */
  readonly external: GraphTensor = this.make({ bytes: 0, srcs: [], external: true, layout: 'external' });

  private make(t: Omit<GraphTensor, 'id'>): GraphTensor {
    // the header's numbers are checked, but a size they combine into must still be one
    if (!Number.isSafeInteger(t.bytes) || t.bytes < 0) throw new GgufError('BAD_HYPERPARAMETER', `a tensor of the compute graph would be ${t.bytes} bytes: the header's sizes do not fit together`, 0);
    return Object.assign(t, { id: this.nextId++ });
  }

  /** An input set before the graph runs (token ids, positions, masks, cache row indexes). */
  input(bytes: number, name = 'input'): GraphTensor {
    return this.make({ bytes, srcs: [], input: true, layout: `${name}#${this.nextId}` });
  }

  /** A new tensor computed from srcs; `layout` names its type and shape (equal: same layout). */
  op(bytes: number, srcs: readonly GraphTensor[], layout: string, flags: { inplace?: boolean; output?: boolean } = {}): GraphTensor {
    return this.make({ bytes, srcs, layout, ...flags });
  }

  /**
   * A view (reshape, permute, slice: `bytes` is what it spans), or with extraSrcs a write into
   * src (set_rows into the cache). Views of weights or of the cache are nothing of the buffer's.
   */
  view(src: GraphTensor, layout: string, bytes = src.bytes, extraSrcs: readonly GraphTensor[] = []): GraphTensor {
    const root = src.viewOf ?? src;
    if (root.external) return this.make({ bytes: 0, srcs: [src, ...extraSrcs], external: true, layout });
    return this.make({ bytes, srcs: [src, ...extraSrcs], viewOf: root, layout });
  }

  /**
   * ggml_set_rows into a tensor of the buffer: a view of dest that reads the rows and their
   * indexes before dest (the order ggml lists its sources, which decides the walk's order).
   */
  setRows(dest: GraphTensor, rows: GraphTensor, indexes: GraphTensor, layout: string): GraphTensor {
    const root = dest.viewOf ?? dest;
    return this.make({ bytes: dest.bytes, srcs: [rows, indexes, dest], viewOf: root, layout });
  }

  /** A norm then its weight: both in place when x is a tensor of its own (a view's norm is a new tensor). */
  norm(x: GraphTensor, layout = x.layout, bytes = x.bytes): GraphTensor {
    const n = this.op(bytes, [x], layout, { inplace: true });
    return this.op(n.bytes, [n, this.external], layout, { inplace: true });
  }

  /** ggml_build_forward_expand: t and every source not yet in the graph, sources first. */
  expand(t: GraphTensor): GraphTensor {
    // iterative depth-first walk (graphs of thousands of nodes)
    const stack: { t: GraphTensor; next: number }[] = [];
    const enter = (x: GraphTensor) => {
      if (x === this.external || this.visited.has(x)) return;
      this.visited.add(x);
      stack.push({ t: x, next: 0 });
    };
    enter(t);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.next < top.t.srcs.length) {
        enter(top.t.srcs[top.next++]!);
        continue;
      }
      stack.pop();
      if (top.t.input === true) this.leafs.push(top.t);
      else this.nodes.push(top.t);
    }
    return t;
  }

  /** Marks the start of a layer (compute.ts replays a run of identical layers once it repeats). */
  mark(): void {
    this.marks.push({ node: this.nodes.length, id: this.nextId });
  }

  /** Bytes ggml_gallocr_reserve asks for this graph. */
  allocate(observe?: Parameters<typeof allocateGraph>[2], checkpoints?: readonly AllocatorCheckpoint[], onCheckpoint?: Parameters<typeof allocateGraph>[4]): number {
    return allocateGraph(this.leafs, this.nodes, observe, checkpoints, onCheckpoint);
  }
}
