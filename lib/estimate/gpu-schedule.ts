/**
 * ggml-backend's scheduler (ggml_backend_sched_split_graph) and ggml-alloc's graph allocator with
 * one buffer per backend, replayed over a compute graph of sizes (compute-graph.ts) for a CUDA
 * device beside the CPU: which op runs where, the copies each split takes of what another backend
 * holds (activations, inputs, host weights and cache the GPU reads), and the bytes each backend's
 * compute buffer must have. The CPU backend's buffer is pinned host memory (CUDA_Host).
 */
import { DynamicAllocator, freeFinishedSources, type GraphTensor } from './graph-allocator.js';
import type { ComputeGraph } from './compute-graph.js';

export const GPU = 0;
export const HOST = 1;
type Backend = typeof GPU | typeof HOST;
/** The buffers' alignments: ggml-cuda's, and the CPU's (the pinned buffer keeps it). */
const ALIGNMENT: readonly number[] = [128, 32];

/** A tensor as the scheduler sees it. */
interface Tensor {
  readonly id: number;
  /** Bytes in each backend's buffer (a quantized tensor is padded on the GPU). */
  readonly bytes: readonly [gpu: number, host: number];
  srcs: Tensor[];
  readonly viewOf?: Tensor;
  readonly viewOp: boolean;
  readonly input: boolean;
  readonly output: boolean;
  readonly inplace: boolean;
  readonly layout: string;
  /** Memory outside the compute buffers (weights, the cache): the backend whose buffer holds it. */
  readonly pre?: Backend;
  readonly weight: boolean;
  /** An op with a weight that is a GET_ROWS (never offloaded), or a ROPE or FLASH_ATTN_EXT (weights do not choose their backend). */
  readonly getRows: boolean;
  readonly ignoresWeights: boolean;
  /** Rows the op works on: offloaded from the host when at least minBatch. */
  readonly batch: number;
  /** ggml-cuda runs the op (its supports_op); the CPU runs every op. */
  readonly gpuRuns: boolean;
  /** A leaf that is not a graph input. */
  readonly constant?: boolean;
  /** ggml-backend's input_dep: keeps a split input alive until its copy (op NONE, a view of it). */
  readonly dep?: boolean;
  backend: number;
}

export interface ScheduleInputs {
  /** Where a layer's weights and cache are (-1: the input layer; OUTPUT_LAYER and up: the output layer). */
  readonly weightsOnGpu: (layer: number) => boolean;
  readonly cacheOnGpu: (layer: number) => boolean;
  /** The weight an op reads at `srcIndex` (the graph's one `external` tensor): its GPU copy's bytes, the op's rows. */
  readonly weightOf: (op: GraphTensor, srcIndex: number) => { readonly gpuBytes: number; readonly rows: number };
  /** The bytes of a tensor in the GPU buffer (quantized cache views are padded; flash attention's output has room for f16 copies). */
  readonly gpuBytes: (t: GraphTensor) => number;
  /** GGML_OP_OFFLOAD_MIN_BATCH: 32. */
  readonly minBatch: number;
  /** Whether ggml-cuda runs the op (supports_op). */
  readonly gpuRuns: (t: GraphTensor) => boolean;
}

/** Compute buffer bytes per backend: [GPU, host]. */
export function scheduleGraph(g: ComputeGraph, inputs: ScheduleInputs): [number, number] {
  let nextId = 0;
  const made = new Map<GraphTensor, Tensor>();
  // the literal itself becomes the tensor (no copy: graphs have tens of thousands)
  const make = (t: Omit<Tensor, 'id' | 'backend'> & { backend?: number }): Tensor => {
    const tensor = t as { -readonly [K in keyof Tensor]: Tensor[K] };
    tensor.id = nextId++;
    tensor.backend ??= -1;
    return tensor;
  };

  // the scheduler's tensors: one per graph tensor, a weight per use (each use reads its own tensor)
  const weightUse = (op: GraphTensor, weight: { readonly gpuBytes: number }): Tensor => {
    const { gpuBytes } = weight;
    const onGpu = inputs.weightsOnGpu(op.layer ?? -1);
    return make({ bytes: [gpuBytes, gpuBytes], srcs: [], viewOp: false, input: false, output: false, inplace: false, layout: 'weight', pre: onGpu ? GPU : HOST, weight: true, getRows: false, ignoresWeights: false, batch: 0, gpuRuns: true });
  };
  const cacheOf = (t: GraphTensor): Tensor => make({
    bytes: [inputs.gpuBytes(t), t.bytes], srcs: [], viewOp: true, input: false, output: false, inplace: false, layout: 'cache', pre: inputs.cacheOnGpu(t.layer ?? -1) ? GPU : HOST, weight: false, getRows: false, ignoresWeights: false, batch: 0, gpuRuns: true,
  });
  const convert = (t: GraphTensor): Tensor => {
    const known = made.get(t);
    if (known !== undefined) return known;
    let result: Tensor;
    if (t.external && t.cache === true && t.srcs.length === 0) {
      result = cacheOf(t);
    } else {
      // (a row lookup of the position embeddings reads the positions too: not a rope)
      const isRope = (t.layer ?? -1) >= 0 && t.srcs.some((s) => s.input === true && s.layout.startsWith('inp_pos'));
      const isFa = t.layout.startsWith('fa:');
      let batch = 0;
      const srcs = t.srcs.map((s, i) => {
        if (s.external && s.layout === 'external') {
          // the cache a write (set_rows) goes into, else a weight
          if (t.write === true) return make({ bytes: [0, 0], srcs: [], viewOp: true, input: false, output: false, inplace: false, layout: 'cache', pre: inputs.cacheOnGpu(t.layer ?? -1) ? GPU : HOST, weight: false, getRows: false, ignoresWeights: false, batch: 0, gpuRuns: true });
          const weight = inputs.weightOf(t, i);
          batch = Math.max(batch, weight.rows);
          return weightUse(t, weight);
        }
        return convert(s);
      });
      const pre: Backend | undefined = t.write === true ? (inputs.cacheOnGpu(t.layer ?? -1) ? GPU : HOST) : undefined;
      const gpu = inputs.gpuBytes(t);
      result = make({
        bytes: t.span !== undefined ? [t.span, t.span] : [gpu, t.bytes],
        srcs,
        ...(t.viewOf !== undefined ? { viewOf: convert(t.viewOf) } : {}),
        viewOp: t.viewOp === true,
        input: t.input === true && t.constant !== true,
        ...(t.constant === true ? { constant: true } : {}),
        output: t.output === true,
        inplace: t.inplace === true,
        layout: t.layout,
        ...(pre !== undefined ? { pre } : {}),
        weight: false,
        // a weight read in the input layer is a row lookup (token and position embeddings)
        getRows: (t.layer ?? -1) < 0,
        ignoresWeights: isRope || isFa,
        batch,
        gpuRuns: inputs.gpuRuns(t),
      });
    }
    made.set(t, result);
    return result;
  };
  const leafs = g.leafs.map(convert);
  const nodes = g.nodes.map(convert);
  // graph inputs on the CPU; a leaf that is not one where its reader runs (pass 4)
  for (const leaf of leafs) if (!leaf.constant) leaf.backend = HOST;

  // pass 1: pre-allocated tensors where their buffer is, inputs on the CPU, ops with a weight
  // where the weight is (or offloaded to the GPU: a batch of minBatch rows or more)
  for (const node of nodes) {
    if (node.pre !== undefined) node.backend = node.pre;
    else if (node.input) node.backend = HOST;
    else if (!node.ignoresWeights) {
      const w = node.srcs.find((s) => s.weight);
      if (w !== undefined) {
        // the weight's backend if it runs the op (a GPU weight the GPU cannot use: the CPU), or
        // offloaded to the GPU from the host
        if (w.pre === GPU) node.backend = node.gpuRuns ? GPU : -1;
        else node.backend = node.gpuRuns && !node.getRows && node.batch >= inputs.minBatch ? GPU : HOST;
      }
    }
  }
  const ops = nodes.filter((n) => !n.viewOp);
  // pass 2: the GPU's ops expanded down and up (the CPU's stop it), then every backend's
  const expand = (list: readonly Tensor[], gpuOnly: boolean) => {
    let cur = -1;
    for (const node of list) {
      if (node.backend !== -1) cur = gpuOnly && node.backend === HOST ? -1 : node.backend;
      else if (cur !== -1 && (cur === HOST || node.gpuRuns)) node.backend = cur;
    }
  };
  const reversed = [...ops].reverse();
  expand(ops, true);
  expand(reversed, true);
  expand(ops, false);
  expand(reversed, false);
  // pass 3: a node still unassigned (the GPU's expansion cannot take it): the backend that runs
  // it with the most of its sources in that backend's memory (the GPU first on a tie)
  for (const node of ops) {
    if (node.backend !== -1) continue;
    const on = (b: number) => node.srcs.filter((s) => (s.backend !== -1 ? s.backend : s.pre ?? s.viewOf?.backend ?? -1) === b).length;
    node.backend = node.gpuRuns && on(GPU) >= on(HOST) ? GPU : HOST;
  }
  // pass 4: views where their source is, sources left unassigned where their reader is
  for (const node of nodes) {
    if (node.viewOf !== undefined && node.backend === -1) node.backend = node.viewOf.backend;
    for (const src of node.srcs) {
      if (src.backend !== -1) continue;
      src.backend = src.pre ?? (src.viewOf !== undefined ? src.viewOf.backend : node.backend);
    }
    if (node.backend === -1) node.backend = node.gpuRuns ? GPU : HOST;
  }

  // pass 5: splits, and a copy in the split's backend of each source from another
  interface Split {
    readonly start: number;
    readonly backend: number;
    readonly inputs: Tensor[];
  }
  const splits: Split[] = [];
  const copies = new Map<string, Tensor>();
  const copyKey = (t: Tensor, backend: number) => `${t.id}:${backend}`;
  let split: Split | undefined;
  const firstOp = nodes.findIndex((n) => !n.viewOp);
  for (let i = Math.max(0, firstOp); i < nodes.length; i++) {
    const node = nodes[i]!;
    if (node.viewOp) continue;
    if (split === undefined) {
      split = { start: 0, backend: node.backend, inputs: [] };
      splits.push(split);
    }
    // a weight on another backend starts a split (its copy's memory can then be reused)
    const newSplit = node.backend !== split.backend
      || (split.inputs.length > 0 && node.srcs.some((s) => s.weight && s.pre !== split!.backend));
    if (newSplit) {
      split = { start: i, backend: node.backend, inputs: [] };
      splits.push(split);
    }
    node.srcs = node.srcs.map((src) => {
      if (src.backend === split!.backend) return src;
      let copy = copies.get(copyKey(src, split!.backend));
      if (copy === undefined) {
        copy = make({
          bytes: src.bytes, srcs: [], viewOp: false, input: false, output: false, inplace: false, layout: src.layout,
          weight: false, getRows: false, ignoresWeights: false, batch: 0, gpuRuns: true, backend: split!.backend,
        });
        copies.set(copyKey(src, split!.backend), copy);
        split!.inputs.push(src);
      }
      return copy;
    });
  }

  // the graph ggml-alloc gets: per split, each input's dependency and copy, then its nodes
  const sequence: Tensor[] = [];
  splits.forEach((s, k) => {
    for (const input of s.inputs) {
      sequence.push(make({ bytes: [0, 0], srcs: [input], viewOp: false, input: false, output: false, inplace: false, layout: 'dep', weight: false, getRows: false, ignoresWeights: false, batch: 0, gpuRuns: true, dep: true, backend: input.backend }));
      sequence.push(copies.get(copyKey(input, s.backend))!);
    }
    const end = k + 1 < splits.length ? splits[k + 1]!.start : nodes.length;
    for (let i = s.start; i < end; i++) sequence.push(nodes[i]!);
  });
  return allocate(leafs, sequence);
}

interface State {
  children: number;
  views: number;
  allocated: boolean;
  buffer: number;
  offset: number;
}

/** ggml_gallocr_alloc_graph_impl with one dynamic allocator per backend's buffer. */
function allocate(leafs: readonly Tensor[], nodes: readonly Tensor[]): [number, number] {
  const heaps = ALIGNMENT.map((a) => new DynamicAllocator(a));
  const states = new Map<Tensor, State>();
  const get = (t: Tensor): State => {
    let s = states.get(t);
    if (s === undefined) {
      s = { children: 0, views: 0, allocated: false, buffer: 0, offset: 0 };
      states.set(t, s);
    }
    return s;
  };
  const isView = (t: Tensor) => t.viewOf !== undefined || t.dep === true;
  const allocateNode = (node: Tensor, buffer: number): void => {
    const s = get(node);
    if (node.pre !== undefined || node.weight || isView(node) || s.allocated) return;
    s.allocated = true;
    if (node.inplace) {
      for (const parent of node.srcs) {
        const p = get(parent);
        if (!p.allocated || parent.output || parent.viewOf?.output === true) continue;
        if (parent.layout !== node.layout || parent.bytes[HOST] !== node.bytes[HOST]) continue;
        if (p.children !== 1 || p.views !== 0) continue;
        s.buffer = p.buffer;
        s.offset = p.offset;
        p.allocated = false;
        return;
      }
    }
    s.buffer = buffer;
    s.offset = heaps[buffer]!.alloc(node.bytes[buffer]!);
  };
  const release = (t: Tensor): void => {
    if (t.output) return;
    const s = get(t);
    heaps[s.buffer]!.free(s.offset, t.bytes[s.buffer]!);
    s.allocated = false;
  };
  for (const leaf of leafs) allocateNode(leaf, leaf.backend === GPU ? GPU : HOST);
  for (const node of nodes) {
    if (node.viewOf !== undefined) get(node.viewOf).views++;
    if (node.input) allocateNode(node, node.backend);
    for (const src of node.srcs) {
      get(src).children++;
      if (src.input) allocateNode(src, node.backend);
    }
  }
  for (const node of nodes) {
    for (const src of node.srcs) allocateNode(src, node.backend);
    allocateNode(node, node.backend);
    freeFinishedSources(node, get, release);
  }
  return [heaps[GPU]!.maxSize, heaps[HOST]!.maxSize];
}
