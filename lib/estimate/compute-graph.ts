import { allocateGraph, type GraphTensor } from './graph-allocator.js';

/**
 * A compute graph of sizes, written in execution order: what graph-allocator replays. Each op
 * says its output's bytes and layout; views share their root source's memory, as in ggml.
 */
export class ComputeGraph {
  private nextId = 0;
  readonly leafs: GraphTensor[] = [];
  readonly nodes: GraphTensor[] = [];
  /** Weights and the KV cache: memory outside the compute buffer. */
  readonly external: GraphTensor = this.make({ bytes: 0, srcs: [], external: true, layout: 'external' });

  private make(t: Omit<GraphTensor, 'id'>): GraphTensor {
    return { ...t, id: this.nextId++ };
  }

  /** An input set before the graph runs (token ids, positions, masks, cache row indexes). */
  input(bytes: number): GraphTensor {
    const t = this.make({ bytes, srcs: [], input: true, layout: `in${this.nextId}` });
    this.leafs.push(t);
    return t;
  }

  /** A new tensor computed from srcs; `layout` names its type and shape (equal: same layout). */
  op(bytes: number, srcs: readonly GraphTensor[], layout: string, flags: { inplace?: boolean; output?: boolean } = {}): GraphTensor {
    const t = this.make({ bytes, srcs, layout, ...flags });
    this.nodes.push(t);
    return t;
  }

  /** A view (reshape, permute, slice) of src, or a write into it (set_rows into the cache). */
  view(src: GraphTensor, layout: string, extraSrcs: readonly GraphTensor[] = []): GraphTensor {
    const root = src.viewOf ?? src;
    if (root.external) {
      // views of weights or of the cache, and writes into the cache: nothing of the buffer's
      const t = this.make({ bytes: 0, srcs: [src, ...extraSrcs], external: true, layout });
      if (extraSrcs.length > 0) this.nodes.push(t);
      return t;
    }
    const t = this.make({ bytes: 0, srcs: [src, ...extraSrcs], viewOf: root, layout });
    this.nodes.push(t);
    return t;
  }

  /** Bytes ggml_gallocr_reserve asks for this graph. */
  allocate(): number {
    return allocateGraph(this.leafs, this.nodes);
  }
}
