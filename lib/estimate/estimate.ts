import type { GgufFile } from '../file/gguf-file.js';
import { estimateCompute, graphModelled } from './compute.js';
import { hostCpuFeatures } from '#platform/cpu-features';
import { contextGeometry, type KvCacheEstimate } from './context-geometry.js';
import { estimateKvCache } from './kv-cache.js';
import { readModelShape, type ModelShape } from './model-shape.js';
import { MAX_CONTEXT_SIZE, resolveOptions, type EstimateOptions, type ResolvedOptions } from './options.js';
import { estimateWeights, skippedTensor, type WeightsEstimate } from './weights.js';
import { estimateGpuWeights, GPU_BUFFERS, layerOnGpu, type GpuBufferName, type GpuWeights } from './gpu-weights.js';
import { estimateGpuCompute } from './gpu-compute.js';

/** One llama.cpp buffer type's share, bytes. */
export interface BufferEstimate {
  readonly weights: number;
  readonly kvCache: number;
  readonly compute: number;
}

export interface MemoryEstimate {
  readonly architecture: string;
  /** The settings the figures are for, defaults filled in (contextSize as asked, before padding). */
  readonly settings: ResolvedOptions;
  /** n_ctx as llama.cpp uses it (padded to 256, a multiple of the sequences without a unified cache). */
  readonly contextSize: number;
  /** The model's buffers, bytes; `repacked` of them are CPU_REPACK copies in anonymous memory. */
  readonly weights: number;
  readonly repacked: number;
  readonly weightsDetail: WeightsEstimate;
  /** KV cache, sliding-window cache, indexer keys and recurrent state, bytes. */
  readonly kvCache: number;
  readonly kvCacheDetail: KvCacheEstimate;
  /** Logits (and embeddings) buffer as reserved at context creation, bytes. */
  readonly output: number;
  /** Compute (scratch) buffer, bytes. */
  readonly compute: number;
  /**
   * How `compute` was found: 'replayed' (ggml's graph allocator over llama.cpp's graph: exact or
   * within 0.2% where checked) or 'moments' (the graph's largest moments, for architectures whose
   * graph is not written out: within 15% where checked).
   */
  readonly computeMethod: 'replayed' | 'moments';
  /** weights + kvCache + output + compute. */
  readonly total: number;
  /**
   * With `gpu`: the figures by llama.cpp buffer type (CUDA0: the GPU; CUDA_Host: pinned host
   * memory; CPU: plain host memory), as its memory breakdown names them; `weights`, `kvCache`
   * and `compute` are their sums. Absent without `gpu`.
   */
  readonly buffers?: Readonly<Record<GpuBufferName, BufferEstimate>>;
  /** With `gpu`: the buffer the output (logits) buffer is in: pinned when the output layer is on the GPU. */
  readonly outputBuffer?: 'CUDA_Host' | 'CPU';
  /**
   * With `gpu`: what the GPU must hold, CUDA0's weights + kvCache + compute. Not counted, as
   * llama.cpp's own breakdown leaves them out: the CUDA context, cuBLAS workspace, CUDA graphs.
   */
  readonly gpuTotal?: number;
}

function featureSet(options: EstimateOptions): ReadonlySet<string> {
  return new Set(options.cpuFeatures ?? hostCpuFeatures());
}

/** The settings, the KV cache and the output buffer: all but the compute buffer. */
function memoryBesideCompute(shape: ModelShape, options: EstimateOptions): { settings: ResolvedOptions; kv: KvCacheEstimate; output: number } {
  const settings = resolveOptions(options, shape.trainedContext);
  const kv = estimateKvCache(shape, settings);
  // llama_context::output_reserve(n_seq_max): n_vocab logits per sequence, in f32
  return { settings, kv, output: shape.vocabularySize * settings.sequences * 4 };
}

function estimateFor(file: GgufFile, shape: ModelShape, options: EstimateOptions, weights: WeightsEstimate, computeCache?: Map<string, number>, gpuWeights?: GpuWeights): MemoryEstimate {
  if (options.gpu !== undefined) return estimateWithGpu(file, shape, options, weights, gpuWeights ?? gpuWeightsOf(file, shape, options), computeCache);
  const { settings, kv, output } = memoryBesideCompute(shape, options);
  const geometry = contextGeometry(settings);
  const compute = estimateCompute(shape, settings, kv, computeCache);
  return {
    architecture: shape.architecture,
    settings,
    contextSize: geometry.contextSize,
    weights: weights.total,
    repacked: weights.repacked,
    weightsDetail: weights,
    kvCache: kv.total,
    kvCacheDetail: kv,
    output,
    compute,
    computeMethod: graphModelled(shape) ? 'replayed' : 'moments',
    total: weights.total + kv.total + output + compute,
  };
}

function gpuWeightsOf(file: GgufFile, shape: ModelShape, options: EstimateOptions): GpuWeights {
  return estimateGpuWeights(file, shape, resolveOptions(options, shape.trainedContext).gpuLayers, skippedTensor(file));
}

/** The estimate with a CUDA device beside the CPU, split by buffer type. */
function estimateWithGpu(file: GgufFile, shape: ModelShape, options: EstimateOptions, cpuWeights: WeightsEstimate, weights: GpuWeights, computeCache?: Map<string, number>): MemoryEstimate {
  const settings = resolveOptions(options, shape.trainedContext);
  const onGpu = (il: number) => layerOnGpu(il, shape.layerCount, settings.gpuLayers);
  const kv = estimateKvCache(shape, settings, onGpu);
  const output = shape.vocabularySize * settings.sequences * 4;
  const geometry = contextGeometry(settings);
  const compute = estimateGpuCompute(file, shape, settings, kv, onGpu, computeCache);
  const buffers = Object.fromEntries(GPU_BUFFERS.map((name) => [name, {
    weights: weights[name],
    kvCache: name === 'CUDA_Host' ? 0 : kv.byBuffer![name],
    compute: compute[name],
  }])) as Record<GpuBufferName, BufferEstimate>;
  const sum = (key: keyof BufferEstimate) => GPU_BUFFERS.reduce((s, name) => s + buffers[name][key], 0);
  const totals = { weights: sum('weights'), kvCache: sum('kvCache'), compute: sum('compute') };
  return {
    architecture: shape.architecture,
    settings,
    contextSize: geometry.contextSize,
    weights: totals.weights,
    // pinned host memory is never repacked
    repacked: 0,
    weightsDetail: { ...cpuWeights, total: totals.weights, repacked: 0, repackedByLayout: {}, amx: 0 },
    kvCache: totals.kvCache,
    kvCacheDetail: kv,
    output,
    compute: totals.compute,
    computeMethod: graphModelled(shape) ? 'replayed' : 'moments',
    total: totals.weights + totals.kvCache + output + totals.compute,
    buffers,
    outputBuffer: onGpu(shape.layerCount) ? 'CUDA_Host' : 'CPU',
    gpuTotal: buffers.CUDA0.weights + buffers.CUDA0.kvCache + buffers.CUDA0.compute,
  };
}

/**
 * What llama.cpp v0.5.0 allocates on the CPU to run this model with these settings, from the
 * header alone (a local or remote GgufFile): weights, KV cache, output and compute buffers.
 * An architecture llama.cpp's estimate rules are not known for is UNSUPPORTED_ARCHITECTURE.
 */
export function estimateMemory(file: GgufFile, options: EstimateOptions = {}): MemoryEstimate {
  const shape = readModelShape(file);
  return estimateFor(file, shape, options, estimateWeights(file, featureSet(options)));
}

/**
 * The largest context size (a multiple of 256, as llama.cpp pads it) whose total fits in `bytes`
 * with the other settings as given, or 0 when not even 256 tokens fit. Capped at the model's
 * trained context unless `beyondTrained` (then at 2^24), and at llama.cpp's uint32 n_ctx.
 *
 * The total is not monotone in the context: the compute buffer dips where the allocator's holes
 * fall better (llama.cpp's does too), so a bisection over it can stop below the answer. What is
 * monotone is the rest (weights, KV cache, output): past the largest context where that alone
 * fits nothing fits, and from there down the first context that fits is the answer. Contexts
 * that give the same graph share one replay.
 */
export function largestContext(file: GgufFile, bytes: number, options: Omit<EstimateOptions, 'contextSize'> & { beyondTrained?: boolean } = {}): number {
  const shape = readModelShape(file);
  const weights = estimateWeights(file, featureSet(options));
  const gpuWeights = options.gpu === undefined ? undefined : gpuWeightsOf(file, shape, options);
  const step = 256;
  const trained = shape.trainedContext;
  const cap = Math.min(MAX_CONTEXT_SIZE, options.beyondTrained === true || trained === undefined ? 1 << 24 : Math.max(step, trained));
  const computeCache = new Map<string, number>();
  // with a GPU the budget is the GPU's: CUDA0's weights, KV cache and compute
  const measure = (e: MemoryEstimate) => e.gpuTotal ?? e.total;
  const estimate = (n: number) => estimateFor(file, shape, { ...options, contextSize: n }, weights, computeCache, gpuWeights);
  // weights + KV cache (+ output on the CPU; + the logits on the GPU): non-decreasing in the context (the KV cache's cells are)
  const withoutCompute = (n: number) => {
    if (gpuWeights !== undefined) {
      const settings = resolveOptions({ ...options, contextSize: n }, shape.trainedContext);
      const kv = estimateKvCache(shape, settings, (il) => layerOnGpu(il, shape.layerCount, settings.gpuLayers));
      return gpuWeights.CUDA0 + kv.byBuffer!.CUDA0 + gpuLogits(shape, settings);
    }
    const { kv, output } = memoryBesideCompute(shape, { ...options, contextSize: n });
    return weights.total + kv.total + output;
  };
  let hi = Math.floor(cap / step);
  if (withoutCompute(step) > bytes) return 0;
  if (withoutCompute(hi * step) > bytes) {
    // the largest m with withoutCompute(m * step) <= bytes (lo fits, hi does not; no 32-bit wrap)
    let lo = 1;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (withoutCompute(mid * step) <= bytes) lo = mid;
      else hi = mid;
    }
    hi = lo;
  }
  for (let m = hi; m >= 1; m--) if (measure(estimate(m * step)) <= bytes) return m * step;
  return 0;
}

/**
 * The logits: a part of the GPU's compute buffer that is never freed (a graph output), wherever
 * the output layer is once the ubatch is large enough to offload its product
 * (GGML_OP_OFFLOAD_MIN_BATCH): a lower bound of that buffer, non-decreasing in the context.
 */
function gpuLogits(shape: ModelShape, settings: ResolvedOptions): number {
  const outputs = Math.min(settings.ubatchSize, settings.contextSize);
  return settings.gpuLayers > 0 || outputs >= 32 ? shape.vocabularySize * outputs * 4 : 0;
}

/**
 * The most layers llama.cpp can offload (its n_gpu_layers: blocks + 1 is all, the output layer
 * counting as one) whose GPU buffers (CUDA0: weights + KV cache + compute) fit in `bytes`, with
 * the other settings as given; 0 when none does (at 0 layers the GPU still holds copies of the
 * host weights it multiplies by: estimateMemory's gpuTotal at 0 says whether even that fits). The GPU's share of the
 * weights and the KV cache grows with the layers, its compute buffer does not (with host layers
 * it holds copies of their weights and cache, and can shrink as layers move over): so from the
 * most layers whose weights and KV cache alone fit, each count down is estimated, and the first
 * that fits whole is the answer (a count whose weights, cache and logits alone do not fit is
 * passed over without replaying its graph).
 * Not counted: the CUDA context, cuBLAS workspace and CUDA graphs (leave a margin for them).
 */
export function fitGpuLayers(file: GgufFile, bytes: number, options: Omit<EstimateOptions, 'gpuLayers'> & { gpu: 'cuda' }): number {
  const shape = readModelShape(file);
  const weights = estimateWeights(file, featureSet(options));
  const skip = skippedTensor(file);
  const settings = resolveOptions(options, shape.trainedContext);
  const computeCache = new Map<string, number>();
  const all = shape.layerCount + 1;
  const logits = (n: number) => gpuLogits(shape, { ...settings, gpuLayers: n });
  for (let n = all; n >= 0; n--) {
    const onGpu = (il: number) => layerOnGpu(il, shape.layerCount, n);
    const gpuWeights = estimateGpuWeights(file, shape, n, skip);
    const kv = estimateKvCache(shape, settings, onGpu);
    if (gpuWeights.CUDA0 + kv.byBuffer!.CUDA0 + logits(n) > bytes) continue;
    const e = estimateFor(file, shape, { ...options, gpuLayers: n }, weights, computeCache, gpuWeights);
    if (e.gpuTotal! <= bytes) return n;
  }
  return 0;
}
