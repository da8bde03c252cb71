import type { GgufFile } from '../file/gguf-file.js';
import { estimateCompute, graphModelled } from './compute.js';
import { hostCpuFeatures } from './cpu-features.js';
import { contextGeometry, estimateKvCache, type KvCacheEstimate } from './kv-cache.js';
import { readModelShape, type ModelShape } from './model-shape.js';
import { resolveOptions, type EstimateOptions, type ResolvedOptions } from './options.js';
import { estimateWeights, type WeightsEstimate } from './weights.js';

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
}

function featureSet(options: EstimateOptions): ReadonlySet<string> {
  return new Set(options.cpuFeatures ?? hostCpuFeatures());
}

function estimateFor(file: GgufFile, shape: ModelShape, options: EstimateOptions, weights: WeightsEstimate): MemoryEstimate {
  const settings = resolveOptions(options, shape.trainedContext);
  const geometry = contextGeometry(settings);
  const kv = estimateKvCache(shape, settings);
  // llama_context::output_reserve(n_seq_max): n_vocab logits per sequence, in f32
  const output = shape.vocabularySize * settings.sequences * 4;
  const compute = estimateCompute(shape, settings, kv);
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
 * trained context unless `beyondTrained`.
 */
export function largestContext(file: GgufFile, bytes: number, options: Omit<EstimateOptions, 'contextSize'> & { beyondTrained?: boolean } = {}): number {
  const shape = readModelShape(file);
  const weights = estimateWeights(file, featureSet(options));
  const step = 256;
  const cap = options.beyondTrained === true || shape.trainedContext === undefined ? 1 << 24 : Math.max(step, shape.trainedContext);
  const fits = (n: number) => estimateFor(file, shape, { ...options, contextSize: n }, weights).total <= bytes;
  const minimum = step * (options.unifiedKv === true ? 1 : Math.max(1, options.sequences ?? 1));
  if (!fits(minimum)) return 0;
  // the total grows with the context: binary search over multiples of 256
  let lo = minimum / step;
  let hi = Math.floor(cap / step);
  if (fits(hi * step)) return hi * step;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (fits(mid * step)) lo = mid;
    else hi = mid;
  }
  return lo * step;
}
