import type { GgufFile } from '../file/gguf-file.js';
import type { GgufTensor } from '../file/tensor.js';
import type { KvCacheEstimate } from './context-geometry.js';
import { cudaTensorBytes, type GpuBufferName } from './gpu-weights.js';
import type { ModelShape } from './model-shape.js';
import { KV_TYPE_SIZE, kvRowBytes, type KvCacheType, type ResolvedOptions } from './options.js';
import { estimateCompute, graphModelled, reserveShape } from './compute.js';
import { estimateFromMoments, layerActivations } from './compute-moments.js';
import { MROPE, transformerGraph } from './transformer-graph.js';
import { OUTPUT_LAYER, type GraphTensor } from './graph-allocator.js';
import { scheduleGraph } from './gpu-schedule.js';
import type { ReserveShape } from './reserve-shape.js';

/** The recurrent graphs' convolutions (recurrent-graph.ts layouts): their weight is the layer's conv kernel. */
const CONV_OPS = /^(xBC-conv|conv|y:\d+x\d+)$/;

/** GGML_OP_OFFLOAD_MIN_BATCH's default: ops of fewer rows stay where their host weights are. */
const OFFLOAD_MIN_BATCH = 32;

/** The file's weights by llama.cpp layer (-1: input layer; OUTPUT_LAYER: output layer). */
function weightsByLayer(file: GgufFile): Map<number, GgufTensor[]> {
  const byLayer = new Map<number, GgufTensor[]>();
  const add = (layer: number, t: GgufTensor) => {
    const list = byLayer.get(layer);
    if (list === undefined) byLayer.set(layer, [t]);
    else list.push(t);
  };
  for (const t of file.tensors) {
    const m = /^blk\.(\d+)\./.exec(t.name);
    if (m !== null) add(Number(m[1]), t);
    else if (/^(token_embd|position_embd|token_types|per_layer_token_embd)\.weight$/.test(t.name)) add(-1, t);
    else add(OUTPUT_LAYER, t);
  }
  // tied embeddings: the output layer multiplies by token_embd
  const embedding = file.tensor('token_embd.weight');
  if (embedding !== undefined && file.tensor('output.weight') === undefined) add(OUTPUT_LAYER, embedding);
  return byLayer;
}

/**
 * The weight an op reads: the layer's tensor whose shape gives the op's size from its other
 * operand (a matrix product: rows x ne1 floats; a norm's weight: rows x ne0; experts: rows x
 * used x ne1), for rows the ubatch's tokens or outputs; the largest of those that fit.
 */
function weightResolver(file: GgufFile, shape: ModelShape, r: ReserveShape) {
  const byLayer = weightsByLayer(file);
  const memo = new Map<string, { gpuBytes: number; rows: number }>();
  return (op: GraphTensor, srcIndex: number) => {
    const layer = op.layer ?? -1;
    const other = op.srcs.find((s, i) => i !== srcIndex && !s.external && s.input !== true);
    if (op.weightName !== undefined) {
      const named = file.tensor(op.weightName);
      if (named !== undefined) return { gpuBytes: cudaTensorBytes(named.nbytes, named.ggmlType, named.shape[0] ?? 1), rows: r.tokens };
    }
    const key = `${layer}:${srcIndex}:${op.bytes}:${other?.bytes ?? -1}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    // a matrix product reads its weight first; an elementwise op (a norm's weight, a bias) after its operand
    const product = srcIndex === 0;
    const convWeight = (tensors: readonly GgufTensor[]) => {
      if (!CONV_OPS.test(op.layout)) return undefined;
      const t = tensors.find((w) => /\.(ssm_conv1d|shortconv\.conv)\.weight$/.test(w.name));
      return t === undefined ? undefined : { gpuBytes: cudaTensorBytes(t.nbytes, t.ggmlType, t.shape[0] ?? 1), rows: r.tokens };
    };
    const pick = (strict: boolean) => {
      let best: { gpuBytes: number; rows: number } | undefined;
      for (const t of byLayer.get(layer >= shape.layerCount ? OUTPUT_LAYER : layer) ?? []) {
        const [ne0 = 1, ne1 = 1, ne2 = 1] = t.shape;
        for (const rows of [r.tokens, r.outputs]) {
          let fits: boolean;
          if (!product || t.shape.length === 1) fits = !product && t.shape.length === 1 && ne0 * rows * 4 === op.bytes;
          else if (ne2 > 1) fits = ne1 * shape.expertUsedCount * rows * 4 === op.bytes || ne0 * shape.expertUsedCount * rows * 4 === op.bytes;
          else fits = ne1 * rows * 4 === op.bytes && (other === undefined || (strict ? ne0 * rows * 4 === other.bytes : ne0 * rows * 4 <= other.bytes * 2));
          if (!fits) continue;
          const gpuBytes = cudaTensorBytes(t.nbytes, t.ggmlType, ne0);
          if (best === undefined || gpuBytes > best.gpuBytes) best = { gpuBytes, rows };
        }
      }
      return best;
    };
    // a convolution's kernel (read second); the SSM scan's output is one row (never offloaded)
    const conv = !product ? convWeight(byLayer.get(layer) ?? []) : undefined;
    const found = conv ?? pick(true) ?? pick(false) ?? { gpuBytes: 0, rows: r.tokens };
    const best = op.layout === 'y-states' ? { ...found, rows: 1 } : found;
    memo.set(key, best);
    return best;
  };
}

/** A cache view's type and row length (its layout: cache:TYPE:ROW). */
function cacheLayout(t: GraphTensor): { type: KvCacheType; rowLength: number } | undefined {
  const m = /^cache:([a-z0-9_]+):(\d+)$/.exec(t.layout);
  return m === null ? undefined : { type: m[1] as KvCacheType, rowLength: Number(m[2]) };
}

/**
 * Bytes of a compute tensor in the GPU's buffer (ggml_backend_cuda_buffer_type_get_alloc_size):
 * a quantized cache view's copy has room to pad its row to 512; flash attention's output, with a
 * cache CUDA's kernels read only as f16 (a batch of more than 2 rows takes the MMA kernel), room
 * for the f16 copies of K and V after it, each 128-aligned.
 */
function gpuBytesOf(r: ReserveShape) {
  return (t: GraphTensor): number => {
    const cache = cacheLayout(t);
    if (cache !== undefined) {
      const [blockSize, typeSize] = KV_TYPE_SIZE[cache.type];
      const rest = cache.rowLength % 512;
      return blockSize > 1 && rest !== 0 ? t.bytes + ((512 - rest) / blockSize) * typeSize : t.bytes;
    }
    if (!t.layout.startsWith('fa:') || r.tokens <= 2) return t.bytes;
    let end = t.bytes;
    for (const src of [t.srcs[1], t.srcs[2]]) {
      const view = src === undefined ? undefined : cacheLayout(src);
      if (view === undefined || view.type === 'f16' || view.type === 'f32') continue;
      const [blockSize, typeSize] = KV_TYPE_SIZE[view.type];
      end = Math.ceil(end / 128) * 128 + (src!.bytes / typeSize) * blockSize * 2;
    }
    return end;
  };
}

/**
 * The graph's inputs as llama.cpp makes them, 32-byte aligned, and the token embeddings' rows (a
 * row lookup in the host's token_embd): what the CPU's compute buffer holds when every layer is
 * on the GPU (the inputs are allocated first and kept until copied).
 */
function hostInputs(shape: ModelShape, r: ReserveShape, onGpu: (il: number) => boolean): number {
  const a = (n: number) => Math.ceil(n / 32) * 32;
  const E = shape.embeddingLength;
  const T = r.tokens;
  // token ids, the vector input, positions, output ids; the embeddings' rows
  let bytes = a(T * 4) + a(E * T * 4) + a(T * 4 * (MROPE.has(shape.architecture) ? 4 : 1)) + a(r.outputs * 4) + a(E * T * 4);
  const attention = shape.layers.filter((l) => l.attention);
  const vMax = Math.max(0, ...attention.map((l) => l.vWidth));
  const caches = [attention.some((l) => !l.slidingWindow) ? r.fullCells : 0, attention.some((l) => l.slidingWindow) ? r.swaCells : 0].filter((c) => c > 0);
  // per cache: K and V row indexes (V's per element without flash attention), the mask
  for (const cells of caches) bytes += a(T * 8) + a(r.flash ? T * 8 : T * vMax * 8) + a(cells * T * (r.flash ? 2 : 4));
  if (shape.layers.some((l) => l.recurrent)) bytes += a(r.sequences * 4);
  // MLA attention CUDA has no flash attention kernel for runs on the CPU: with the queries, its
  // output, and copies of the latent cache as K and as V
  const mla = shape.mla;
  const heads = Math.max(0, ...attention.map((l) => l.headCount));
  if (mla?.absorbed === true && r.flash && !cudaFlashAttention(mla.kvLoraRank + mla.rope, mla.kvLoraRank, heads, r.typeK, r.typeV)) {
    const latent = mla.kvLoraRank + mla.rope;
    bytes += a(latent * heads * T * 4) + a(mla.kvLoraRank * heads * T * 4);
    // the cache copied over from the GPU where its layers are there
    if (attention.some((l) => onGpu(l.index))) bytes += 2 * a(kvRowBytes(r.typeK as KvCacheType, latent) * r.fullCells * r.streams);
  }
  return bytes;
}

/**
 * For an estimate by moments: the room CUDA's flash attention takes beside its output for f16
 * copies of a cache of another type (one layer's, the widest), as gpuBytesOf adds it to the op.
 */
function flashAttentionF16(shape: ModelShape, r: ReserveShape): number {
  if (!r.flash || r.tokens <= 2) return 0;
  let most = 0;
  for (const l of shape.layers.filter((x) => x.attention && x.headCountKv > 0)) {
    const cells = (l.slidingWindow ? r.swaCells : r.fullCells) * r.streams;
    const headK = l.kWidth / l.headCountKv;
    const headV = l.vWidth / l.headCountKv;
    if (!cudaFlashAttention(headK, headV, l.headCount / l.headCountKv, r.typeK, r.typeV)) continue;
    let bytes = 0;
    if (r.typeK !== 'f16' && r.typeK !== 'f32') bytes += Math.ceil(cells * l.kWidth * 2 / 128) * 128;
    if (r.typeV !== 'f16' && r.typeV !== 'f32') bytes += Math.ceil(cells * l.vWidth * 2 / 128) * 128;
    most = Math.max(most, bytes);
  }
  return most;
}

/**
 * Whether ggml-cuda has a flash attention kernel for these head sizes, query heads per KV head
 * and cache types (ggml_cuda_get_best_fattn_kernel: the larger heads only where its GQA
 * optimisation applies, which needs 2 or more query heads per KV head).
 */
function cudaFlashAttention(headK: number, headV: number, gqa: number, typeK: string, typeV: string): boolean {
  const types = ['f16', 'f32', 'bf16', 'q4_0', 'q4_1', 'q5_0', 'q5_1', 'q8_0'];
  if (!types.includes(typeK) || !types.includes(typeV)) return false;
  if ([40, 64, 72, 80, 96, 112, 128, 256].includes(headK)) return headV === headK;
  if (gqa < 2) return false;
  if (headK === 192) return headV === 128 && gqa % 8 === 0;
  if (headK === 320) return headV === 256 && gqa % 32 === 0;
  return (headK === 512 && headV === 512) || (headK === 576 && headV === 512);
}

/**
 * Whether ggml-cuda runs the op (its supports_op): every op the graph has but flash attention it
 * has no kernel for, and the SSM scan and convolution of sizes its kernels do not take.
 */
function gpuRunsWith(r: ReserveShape, shape: ModelShape) {
  const { state, inner, heads, groups } = shape.ssm;
  return (t: GraphTensor): boolean => {
    const fa = /^fa:(\d+):(\d+):(\d+(?:\.\d+)?)$/.exec(t.layout);
    if (fa !== null) return cudaFlashAttention(Number(fa[1]), Number(fa[2]), Number(fa[3]), r.typeK, r.typeV);
    if (t.layout === 'y-states') {
      // Mamba 2: state 128 or 256, head size a multiple of 16; Mamba 1: state 16, inner a multiple of 128, one group
      if (shape.rule.mixer === 'mamba2') return (state === 128 || state === 256) && heads > 0 && (inner / heads) % 16 === 0;
      return state === 16 && inner % 128 === 0 && Math.max(1, groups) === 1;
    }
    // a causal convolution: its channels a multiple of 128
    if (CONV_OPS.test(t.layout) && shape.rule.mixer !== undefined) return (t.bytes / (r.tokens * 4)) % 128 === 0;
    return true;
  };
}

/**
 * The compute buffers llama.cpp reserves with one CUDA device: its scheduler's split of the
 * worst-case graph replayed (gpu-schedule.ts) where the graph is written out; by buffer type.
 */
export function estimateGpuCompute(
  file: GgufFile,
  shape: ModelShape,
  options: ResolvedOptions,
  kv: KvCacheEstimate,
  onGpu: (il: number) => boolean,
  cache?: Map<string, number>,
): Readonly<Record<GpuBufferName, number>> {
  const r = reserveShape(shape, options, kv);
  // the graph and its split are a function of the reserve shape and which layers are on the GPU
  const key = cache === undefined ? '' : `gpu:${JSON.stringify(r)}:${shape.layers.map((l) => (onGpu(l.index) ? 1 : 0)).join('')}${onGpu(shape.layerCount) ? 1 : 0}`;
  const known = cache?.get(key);
  if (known !== undefined) return { CUDA0: known, CUDA_Host: cache!.get(`${key}:host`)!, CPU: 0 };
  const result = replayGpu(file, shape, options, kv, onGpu, r);
  cache?.set(key, result.CUDA0);
  cache?.set(`${key}:host`, result.CUDA_Host);
  return result;
}

function replayGpu(file: GgufFile, shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate, onGpu: (il: number) => boolean, r: ReserveShape): Readonly<Record<GpuBufferName, number>> {
  if (!graphModelled(shape)) return momentsOnGpu(file, shape, options, kv, onGpu, r);
  const g = transformerGraph(shape, r, true, new Set(file.tensors.map((t) => t.name)));
  const layerOnGpu = (layer: number) => layer >= 0 && onGpu(Math.min(layer, shape.layerCount));
  const [gpu, host] = scheduleGraph(g, {
    weightsOnGpu: layerOnGpu,
    cacheOnGpu: layerOnGpu,
    weightOf: weightResolver(file, shape, r),
    gpuBytes: gpuBytesOf(r),
    minBatch: OFFLOAD_MIN_BATCH,
    gpuRuns: gpuRunsWith(r, shape),
  });
  return { CUDA0: gpu, CUDA_Host: host, CPU: 0 };
}

/**
 * The compute buffers of an architecture whose graph is not written out (PLaMo 2, Qwen4-exp, Kimi
 * K3, Bailing 3...): the CPU's figure (its largest moments) on the GPU, the graph's inputs and the
 * token embeddings' rows on the host, where llama.cpp keeps them, and what moves where the
 * scheduler splits the graph. Fitted to llama.cpp's CUDA figures (../shared/memory/gpu-expected.json
 * and settings held out, docs/api.md), not replayed: within 15% where checked.
 */
function momentsOnGpu(file: GgufFile, shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate, onGpu: (il: number) => boolean, r: ReserveShape): Readonly<Record<GpuBufferName, number>> {
  const T = r.tokens;
  const E = shape.embeddingLength;
  const a = (n: number) => Math.ceil(n / 32) * 32;
  const attention = shape.layers.filter((l) => l.attention);
  const heads = Math.max(0, ...attention.map((l) => l.headCount));
  const mla = shape.mla;
  // layers left on the host whose attention the scheduler runs on the GPU (spread there from
  // the GPU's ops, whatever the batch), not Qwen4-exp's sparse attention, which gathers the
  // cells it reads: there the layer's figure stands as it is on the GPU
  const offloaded = shape.rule.indexer === undefined ? (il: number) => !onGpu(il) : undefined;
  // the CPU's figure, checked (a header whose sizes give none is refused there)
  const cpu = estimateCompute(shape, options, kv);
  let gpu = (offloaded === undefined ? cpu : estimateFromMoments(shape, options, kv, offloaded)) + flashAttentionF16(shape, r);
  let host = hostInputs(shape, r, onGpu) + indexerInputs(file, shape, r);
  // MLA attention CUDA has no flash attention kernel for runs on the host (hostInputs counts it):
  // the GPU keeps the layers' activations, or the output's rows, whichever is larger, and no
  // scores or masks over the cache
  const mlaOnHost = mla?.absorbed === true && r.flash && !cudaFlashAttention(mla.kvLoraRank + mla.rope, mla.kvLoraRank, heads, r.typeK, r.typeV);
  if (mlaOnHost) {
    // attention residuals (Kimi K3's res_score weights): every block's output, and the input's,
    // stays alive for the later blocks to attend over
    const residuals = file.tensor('output_res_score.weight') !== undefined ? 4 * E * (shape.layerCount + 1) : 0;
    gpu = T * (Math.max(layerActivations(shape, attention, true), 4 * (shape.vocabularySize + 2 * E)) + residuals);
  } else if (offloaded !== undefined && attention.some((l) => !onGpu(l.index))) {
    // an attention layer on the host with its attention offloaded: three rows of the embedding
    // (the layer's input, its norm and the norm scaled by the host's weight) in the host's buffer;
    // one with a quantized V cache (fitted to llama.cpp's figures)
    const quantized = KV_TYPE_SIZE[r.typeV as KvCacheType][0] > 1;
    const rows = quantized ? 1 : 3;
    // every layer on the host, Q and K normed by host weights (PLaMo 2): the scheduler keeps the
    // attention on the host, its scores (without flash attention) and a row more there, wherever
    // the output layer is; the GPU holds the offloaded products and the recurrent state (fitted)
    const qNormed = attention.every((l) => file.tensor(`blk.${l.index}.attn_q_norm.weight`) !== undefined);
    if (qNormed && shape.layers.every((l) => !onGpu(l.index))) {
      const scores = r.flash ? 0 : Math.max(0, ...attention.map((l) => l.headCount)) * r.fullCells * T * 4;
      host += scores + (rows + 1) * a(E * T * 4);
      // (the output's rows, the logits among them, when they are more: offloaded, as a batch of 32 or more is)
      gpu = T * 4 * Math.max(2 * shape.ssmInputWidth + 3 * shape.ssmInner, shape.vocabularySize + 2 * E) + shape.recurrentS * 4 * r.sequences;
    } else host += rows * a(E * T * 4);
  }
  return { CUDA0: gpu, CUDA_Host: host, CPU: 0 };
}

/**
 * Qwen4-exp's inputs beside the usual ones (read from llama.cpp's graph): the sparse attention's
 * block mask (f32, a quarter of a stream's cells per token) and three i32 lists of the cells, the
 * per-layer embeddings' ids and rows (one per hyper-connection stream and token: output_hc_norm's
 * second dimension) and four positions a token.
 */
function indexerInputs(file: GgufFile, shape: ModelShape, r: ReserveShape): number {
  if (shape.rule.indexer !== 'qsa') return 0;
  const a = (n: number) => Math.ceil(n / 32) * 32;
  const T = r.tokens;
  let bytes = a((r.fullCells / 4) * T * 4) + 3 * a(r.fullCells * r.streams * 4) + a(T * 4 * 3);
  const ple = file.tensor('per_layer_token_embd.weight');
  if (ple !== undefined) {
    const streams = file.tensor('output_hc_norm.weight')?.shape[1] ?? 1;
    bytes += a(T * streams * 4) + a(T * streams * (ple.shape[0] ?? 0) * 4);
  }
  return bytes;
}
