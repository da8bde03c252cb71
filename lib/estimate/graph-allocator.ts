/**
 * ggml's graph allocator (ggml-alloc.c), replayed over a graph of sizes only: how large the
 * compute buffer must be for the tensors alive at once, including the holes its best-fit
 * placement leaves. Only what the CPU backend's single buffer needs: one chunk, 32-byte alignment.
 */

/** A tensor of the compute graph. A leaf has no op; a view shares its source's memory. */
export interface GraphTensor {
  readonly id: number;
  readonly bytes: number;
  readonly srcs: readonly GraphTensor[];
  /** The tensor whose memory this one views (a reshape, permute, view, or a write into the cache). */
  readonly viewOf?: GraphTensor;
  /** Memory outside the compute buffer (weights, the KV cache): never allocated here. */
  readonly external?: boolean;
  /** Set by llama.cpp before the graph runs: allocated first, kept until its last reader. */
  readonly input?: boolean;
  /** Read after the graph (logits, embeddings): never freed. */
  readonly output?: boolean;
  /** ggml_op_can_inplace: may take over a source's memory when that source dies here. */
  readonly inplace?: boolean;
  /** Same type, shape and strides: what in-place reuse requires (a string; equal means same layout). */
  readonly layout: string;
  // What the GPU scheduler replay (gpu-schedule.ts) reads; the CPU replay ignores them.
  /** The layer being built when the tensor was made (-1: the input layer; OUTPUT_LAYER: after the blocks). */
  readonly layer?: number;
  /** A view op (reshape, permute, view): not scheduled itself, it goes where its source is. */
  readonly viewOp?: boolean;
  /** A view of the KV cache (or recurrent state) read by an op: external memory that is not a weight. */
  readonly cache?: boolean;
  /** A write into the cache (set_rows): runs where the cache is. */
  readonly write?: boolean;
  /** A leaf that is not a graph input (a new tensor an op fills): where its reader runs, not on the CPU. */
  readonly constant?: boolean;
  /** The weight the op reads, by name, where the graph knows it (the GPU's scheduler copies it). */
  readonly weightName?: string;
  /** A strided view's span, first element to last: the bytes a copy of it takes (ggml_dup_tensor_layout). */
  readonly span?: number;
}

/** GraphTensor.layer of the final norm and the logits. */
export const OUTPUT_LAYER = 1e9;

const ALIGNMENT = 32;
const align = (n: number) => Math.ceil(n / ALIGNMENT) * ALIGNMENT;

/** The free list of ggml_dyn_tallocr: blocks sorted by offset, the last one open-ended. */
export class DynamicAllocator {
  readonly blocks: { offset: number; size: number }[] = [{ offset: 0, size: Number.MAX_SAFE_INTEGER }];
  maxSize = 0;

  constructor(private readonly alignment = ALIGNMENT) {}

  private align(n: number): number {
    return Math.ceil(n / this.alignment) * this.alignment;
  }

  alloc(bytes: number): number {
    const size = this.align(bytes);
    let best = -1;
    let bestSize = Infinity;
    // best fit among all blocks but the last; the last only when none fits
    for (let i = 0; i < this.blocks.length - 1; i++) {
      const b = this.blocks[i]!;
      if (b.size >= size && b.size <= bestSize) {
        best = i;
        bestSize = b.size;
      }
    }
    if (best === -1) best = this.blocks.length - 1;
    const block = this.blocks[best]!;
    const offset = block.offset;
    block.offset += size;
    block.size -= size;
    if (block.size === 0) this.blocks.splice(best, 1);
    this.maxSize = Math.max(this.maxSize, offset + size);
    return offset;
  }

  free(offset: number, bytes: number): void {
    const size = this.align(bytes);
    for (let i = 0; i < this.blocks.length; i++) {
      const b = this.blocks[i]!;
      if (b.offset + b.size === offset) {
        b.size += size;
        const next = this.blocks[i + 1];
        if (next !== undefined && b.offset + b.size === next.offset) {
          b.size += next.size;
          this.blocks.splice(i + 1, 1);
        }
        return;
      }
      if (offset + size === b.offset) {
        b.offset = offset;
        b.size += size;
        const prev = this.blocks[i - 1];
        if (prev !== undefined && prev.offset + prev.size === b.offset) {
          prev.size += b.size;
          this.blocks.splice(i, 1);
        }
        return;
      }
    }
    let at = 0;
    while (at < this.blocks.length && this.blocks[at]!.offset < offset) at++;
    this.blocks.splice(at, 0, { offset, size });
  }
}

/**
 * A point of the allocation (before node `node` is placed) whose state is asked for: tensors
 * from id `idBase` on are named relative to it, those below `sharedBelow` by their own id.
 */
export interface AllocatorCheckpoint {
  readonly node: number;
  readonly idBase: number;
  readonly sharedBelow: number;
}

interface State {
  children: number;
  views: number;
  allocated: boolean;
  offset: number;
}

/**
 * The compute buffer ggml_gallocr_reserve would ask for this graph: leafs first, then each node
 * in order, a source freed when its last reader has run (a view's source when its last view has).
 * Tensors are told apart by id: unique within one graph (ComputeGraph numbers them).
 */
export function allocateGraph(
  leafs: readonly GraphTensor[],
  nodes: readonly GraphTensor[],
  /** Sees each placement and release (to compare with ggml-alloc.c's own trace). */
  observe?: (event: 'alloc' | 'free', tensor: GraphTensor, offset: number) => void,
  /** Where to take the allocator's state (see AllocatorCheckpoint), in node order. */
  checkpoints: readonly AllocatorCheckpoint[] = [],
  /** Hears each checkpoint's state, by its index in `checkpoints`. */
  onCheckpoint?: (index: number, state: string) => void,
): number {
  const heap = new DynamicAllocator();
  // per tensor, by id (ids are small and dense: one graph's tensors)
  const states: (State | undefined)[] = [];
  const get = (t: GraphTensor): State => {
    let s = states[t.id];
    if (s === undefined) {
      s = { children: 0, views: 0, allocated: false, offset: 0 };
      states[t.id] = s;
    }
    return s;
  };
  const own = (t: GraphTensor) => get(t).allocated;

  const allocate = (node: GraphTensor): void => {
    const s = get(node);
    if (node.external || node.viewOf !== undefined || s.allocated) return;
    s.allocated = true;
    if (node.inplace) {
      for (const parent of node.srcs) {
        if (!own(parent) || parent.output || parent.viewOf?.output) continue;
        // ggml_are_same_layout: same type, shape and strides, hence the same size too
        if (parent.layout !== node.layout || parent.bytes !== node.bytes) continue;
        const p = get(parent);
        if (p.children !== 1 || p.views !== 0) continue;
        // never taken, as in ggml: a view is never allocated, so never `own` above; kept as ggml has it
        if (parent.viewOf !== undefined) {
          const source = parent.viewOf;
          const v = get(source);
          if (v.views === 1 && v.children === 0) {
            s.offset = v.offset;
            p.allocated = false;
            v.allocated = false;
            freeExtra(node, source);
            return;
          }
        } else {
          s.offset = p.offset;
          p.allocated = false;
          freeExtra(node, parent);
          observe?.('alloc', node, s.offset);
          return;
        }
      }
    }
    s.offset = heap.alloc(node.bytes);
    observe?.('alloc', node, s.offset);
  };
  const freeExtra = (node: GraphTensor, parent: GraphTensor): void => {
    const parentSize = align(parent.bytes);
    const nodeSize = align(node.bytes);
    if (parentSize > nodeSize) heap.free(get(parent).offset + nodeSize, parentSize - nodeSize);
  };
  const release = (t: GraphTensor): void => {
    if (t.output) return;
    const s = get(t);
    heap.free(s.offset, t.bytes);
    observe?.('free', t, s.offset);
    s.allocated = false;
  };

  for (const leaf of leafs) allocate(leaf);
  for (const node of nodes) {
    if (node.viewOf !== undefined) get(node.viewOf).views++;
    if (node.input) allocate(node);
    for (const src of node.srcs) {
      get(src).children++;
      if (src.input) allocate(src);
    }
  }
  // the state at a checkpoint: the free blocks, and every tensor still to be read or held, named
  // relative to the checkpoint's first id (tensors made before `sharedBelow`: by id, their
  // reader counts left out, as they differ from one repeated block to the next)
  const stateAt = (c: AllocatorCheckpoint): string => {
    const parts = [heap.blocks.slice(0, -1).map((b) => `${b.offset}+${b.size}`).join(','), String(heap.blocks.at(-1)!.offset)];
    states.forEach((st, id) => {
      if (st === undefined) return;
      if (id < c.sharedBelow) {
        if (st.allocated) parts.push(`s${id}@${st.offset}`);
      } else if (st.allocated || (id < c.idBase && (st.children > 0 || st.views > 0))) {
        parts.push(`${id - c.idBase}@${st.allocated ? st.offset : '-'}:${st.children}:${st.views}`);
      }
    });
    return parts.join(' ');
  };
  let next = 0;
  for (let i = 0; i < nodes.length; i++) {
    while (next < checkpoints.length && checkpoints[next]!.node === i) onCheckpoint?.(next, stateAt(checkpoints[next++]!));
    const node = nodes[i]!;
    for (const src of node.srcs) allocate(src);
    allocate(node);
    freeFinishedSources(node, get, release);
  }
  return heap.maxSize;
}

/** What the allocator keeps per tensor that freeing reads: readers and views still to come. */
export interface ReaderCounts {
  children: number;
  views: number;
  allocated: boolean;
}

/**
 * After `node` has run (ggml_gallocr_alloc_graph_impl): each source it was the last reader of is
 * freed, a view's through the tensor it views once that has no reader or view left. Shared by the
 * CPU allocator and the GPU scheduler's per-backend replay.
 */
export function freeFinishedSources<T extends { readonly srcs: readonly T[]; readonly viewOf?: T | undefined }>(
  node: T,
  get: (t: T) => ReaderCounts,
  release: (t: T) => void,
): void {
  for (const parent of node.srcs) {
    const p = get(parent);
    p.children--;
    if (p.children !== 0 || p.views !== 0) continue;
    if (parent.viewOf !== undefined) {
      const v = get(parent.viewOf);
      v.views--;
      if (v.views === 0 && v.children === 0 && v.allocated) release(parent.viewOf);
    } else if (p.allocated) {
      release(parent);
    }
  }
}
