import { GgufError } from '../errors.js';
import { allocateGraph, OUTPUT_LAYER, type AllocatorCheckpoint, type GraphTensor } from './graph-allocator.js';

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
  readonly external: GraphTensor;
  /** The layer being built (-1 before the first: the input layer). */
  private layer = -1;

  /**
   * `detailed`: tell the KV cache's reads from the weights (cacheView) for the GPU scheduler's
   * replay; without it they are the one `external` tensor, as the CPU replay has them.
   */
  constructor(readonly detailed = false, private readonly weightNames: ReadonlySet<string> = new Set()) {
    this.external = this.make({ bytes: 0, srcs: [], external: true, layout: 'external' });
  }

  /**
   * A projection's per-tensor scale (`.scale`, a multiply) and bias (`.bias`, an add) where the
   * file has them, each in place (detailed only: they allocate nothing, but with host weights
   * each is an op the GPU's scheduler gives a split of its own).
   */
  affine(t: GraphTensor, il: number, name: string, suffixes: readonly string[] = ['scale', 'bias']): GraphTensor {
    if (!this.detailed) return t;
    let out = t;
    for (const suffix of suffixes) {
      const weight = `blk.${il}.${name}.${suffix}`;
      if (this.weightNames.has(weight)) out = this.make({ bytes: out.bytes, srcs: [out, this.external], layout: out.layout, inplace: true, weightName: weight });
    }
    return out;
  }

  private make(t: Omit<GraphTensor, 'id'>): GraphTensor {
    // the header's numbers are checked, but a size they combine into must still be one
    if (!Number.isSafeInteger(t.bytes) || t.bytes < 0) throw new GgufError('BAD_HYPERPARAMETER', `a tensor of the compute graph would be ${t.bytes} bytes: the header's sizes do not fit together`, 0);
    return Object.assign(t, { id: this.nextId++, layer: this.layer });
  }

  /**
   * A view of the KV cache an op reads, spanning `bytes` (the GPU copies it whole where the
   * cache is on the host); the plain `external` tensor unless detailed.
   */
  cacheView(bytes: number, type: string, rowLength: number): GraphTensor {
    if (!this.detailed) return this.external;
    return this.make({ bytes, srcs: [], external: true, cache: true, viewOp: true, layout: `cache:${type}:${rowLength}` });
  }

  /**
   * An op writing into the recurrent state cache that allocates nothing (llama.cpp's build_rs
   * zeroes a state and copies the states no sequence uses): detailed only, as the GPU's
   * scheduler runs it where the cache is, which bounds where the ops around it go.
   */
  stateWrite(layout: string): void {
    if (this.detailed) this.expand(this.make({ bytes: 0, srcs: [this.external], external: true, write: true, layout }));
  }

  /**
   * A norm over its weight where the file has `name` and the graph would otherwise leave it out
   * (in place: nothing of the buffer's; detailed only, for the GPU's scheduler's splits).
   */
  normIf(t: GraphTensor, name: string): GraphTensor {
    if (!this.detailed || !this.weightNames.has(name)) return t;
    const n = this.op(t.bytes, [t], t.layout, { inplace: true });
    return this.make({ bytes: n.bytes, srcs: [n, this.external], layout: t.layout, inplace: true, weightName: name });
  }

  /** The layer being built (-1: the input layer). */
  get currentLayer(): number {
    return this.layer;
  }

  /** The blocks are built: the final norm and the logits are the output layer's. */
  outputLayer(): void {
    this.layer = OUTPUT_LAYER;
  }

  /**
   * An input set before the graph runs (token ids, positions, masks, cache row indexes); with
   * `constant`, a new tensor an op fills (a leaf allocated first like the inputs, but not a graph
   * input: the scheduler puts it where its reader runs).
   */
  input(bytes: number, name = 'input', constant = false): GraphTensor {
    return this.make({ bytes, srcs: [], input: true, layout: `${name}#${this.nextId}`, ...(constant ? { constant } : {}) });
  }

  /** A new tensor computed from srcs; `layout` names its type and shape (equal: same layout). */
  op(bytes: number, srcs: readonly GraphTensor[], layout: string, flags: { inplace?: boolean; output?: boolean } = {}): GraphTensor {
    return this.make({ bytes, srcs, layout, ...flags });
  }

  /**
   * A view (reshape, permute, slice: `bytes` is what it spans), or with extraSrcs a write into
   * src (set_rows into the cache). Views of weights or of the cache are nothing of the buffer's.
   * `span`: the bytes a strided view spans, first element to last (what a copy of it takes).
   */
  view(src: GraphTensor, layout: string, bytes = src.bytes, extraSrcs: readonly GraphTensor[] = [], span?: number): GraphTensor {
    const root = src.viewOf ?? src;
    // a view of a strided view spans what it spans
    span ??= src.span;
    if (span !== undefined && root.external !== true) return this.make({ bytes, srcs: [src, ...extraSrcs], viewOf: root, layout, viewOp: true, span });
    // a write into the cache (set_rows) runs where the cache is; a plain view of it is a view op
    if (root.external) return this.make({ bytes: 0, srcs: [src, ...extraSrcs], external: true, layout, ...(extraSrcs.length > 0 ? { write: true } : { viewOp: true, cache: src.cache }) });
    return this.make({ bytes, srcs: [src, ...extraSrcs], viewOf: root, layout, viewOp: true });
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
    this.layer = this.marks.length - 1;
  }

  /** Bytes ggml_gallocr_reserve asks for this graph. */
  allocate(observe?: Parameters<typeof allocateGraph>[2], checkpoints?: readonly AllocatorCheckpoint[], onCheckpoint?: Parameters<typeof allocateGraph>[4]): number {
    return allocateGraph(this.leafs, this.nodes, observe, checkpoints, onCheckpoint);
  }
}
