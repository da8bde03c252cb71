import { GgufError } from '../errors.js';

/** The KV cache element types llama.cpp accepts for `typeK`/`typeV`. */
export const KV_CACHE_TYPES = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1'] as const;
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];

/** Elements per block and bytes per block of each KV cache type (ggml's type traits). */
export const KV_TYPE_SIZE: Readonly<Record<KvCacheType, readonly [block: number, bytes: number]>> = {
  f32: [1, 4],
  f16: [1, 2],
  bf16: [1, 2],
  q8_0: [32, 34],
  q4_0: [32, 18],
  q4_1: [32, 20],
  iq4_nl: [32, 18],
  q5_0: [32, 22],
  q5_1: [32, 24],
};

/** Bytes of `n` elements of a KV type (ggml_row_size). */
export function kvRowBytes(type: KvCacheType, n: number): number {
  const [block, bytes] = KV_TYPE_SIZE[type];
  return Math.ceil(n / block) * bytes;
}

/**
 * Settings mirroring llama.cpp's `llama_context_params`, with the defaults llama-server and
 * llama-cli start from: n_ctx 4096, n_batch 2048, n_ubatch 512, n_seq_max 1, kv_unified false,
 * f16 caches, flash attention "auto" (on, for the CPU), swa_full false.
 */
export interface EstimateOptions {
  /** `n_ctx`: tokens of context over all sequences (0: the model's trained length). Default 4096. */
  contextSize?: number;
  /** `n_batch`. Default 2048. */
  batchSize?: number;
  /** `n_ubatch`: tokens per graph evaluation; sizes the compute buffer. Default 512. */
  ubatchSize?: number;
  /** `n_seq_max`: parallel sequences. Default 1. */
  sequences?: number;
  /** `kv_unified`: one KV stream shared by all sequences. Default false (one stream per sequence). */
  unifiedKv?: boolean;
  typeK?: KvCacheType;
  typeV?: KvCacheType;
  /** Flash attention. Default true (llama.cpp's "auto" turns it on for the CPU). */
  flashAttention?: boolean;
  /** Sliding-window layers keep the whole context instead of their window. Default false. */
  swaFull?: boolean;
  /**
   * A GPU llama.cpp runs on beside the CPU: 'cuda' (one CUDA device). The estimate then splits
   * by buffer type (`buffers`) as llama.cpp's CUDA backend allocates. Default: none (CPU only).
   */
  gpu?: 'cuda';
  /**
   * Layers offloaded to the GPU (llama.cpp's n_gpu_layers: the last blocks first, the output
   * layer counting as one; blocks + 1 or more, e.g. 999, is all). Read only with `gpu`; default 0.
   */
  gpuLayers?: number;
  /** CPU features deciding weight repacking (see cpu-features.ts); default: this machine's. */
  cpuFeatures?: readonly string[];
}

export interface ResolvedOptions {
  readonly contextSize: number;
  readonly batchSize: number;
  readonly ubatchSize: number;
  readonly sequences: number;
  readonly unifiedKv: boolean;
  readonly typeK: KvCacheType;
  readonly typeV: KvCacheType;
  readonly flashAttention: boolean;
  readonly swaFull: boolean;
  readonly gpuLayers: number;
  readonly gpu: 'cuda' | undefined;
}

function positiveInteger(name: string, value: number | undefined, fallback: number, allowZero = false): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < (allowZero ? 0 : 1)) throw new TypeError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, not ${String(value)}`);
  return value;
}

/** llama.cpp's LLAMA_MAX_SEQ: a context of more sequences is refused. */
const MAX_SEQUENCES = 256;

function sequences(value: number | undefined): number {
  const n = positiveInteger('sequences', value, 1);
  if (n > MAX_SEQUENCES) throw new TypeError(`sequences must be at most ${MAX_SEQUENCES} (llama.cpp's limit), not ${n}`);
  return n;
}

function cacheType(name: string, value: string | undefined): KvCacheType {
  if (value === undefined) return 'f16';
  const lower = value.toLowerCase();
  if (!(KV_CACHE_TYPES as readonly string[]).includes(lower)) {
    throw new TypeError(`${name} ${value} is not a KV cache type llama.cpp accepts (${KV_CACHE_TYPES.join(', ')})`);
  }
  return lower as KvCacheType;
}

function gpuKind(value: string | undefined): 'cuda' | undefined {
  if (value === undefined) return undefined;
  if (value !== 'cuda') throw new TypeError(`gpu ${String(value)} is not a GPU backend the estimate knows (cuda)`);
  return value;
}

/**
 * The largest n_ctx llama.cpp can take: its n_ctx, n_batch and n_ubatch are uint32, and n_ctx is
 * padded to 256 within that type.
 */
export const MAX_CONTEXT_SIZE = 2 ** 32 - 256;

/** A count llama.cpp keeps in a uint32 (n_batch, n_ubatch; n_ctx as padded): a RangeError past it. */
function uint32Count(name: string, value: number, max: number): number {
  if (value > max) throw new RangeError(`${name} must be at most ${max} (llama.cpp keeps it in a uint32), not ${value}`);
  return value;
}

export function resolveOptions(options: EstimateOptions, trainedContext: number | undefined): ResolvedOptions {
  let contextSize = uint32Count('contextSize', positiveInteger('contextSize', options.contextSize, 4096, true), MAX_CONTEXT_SIZE);
  if (contextSize === 0) {
    // the header's own length: past uint32 it is the header's fault, not the caller's
    if (trainedContext !== undefined && trainedContext > MAX_CONTEXT_SIZE) {
      throw new GgufError('BAD_HYPERPARAMETER', `the trained context (context_length ${trainedContext}) is beyond llama.cpp's uint32 n_ctx: ask for a contextSize`, 0);
    }
    contextSize = trainedContext ?? 4096;
  }
  const batchSize = uint32Count('batchSize', positiveInteger('batchSize', options.batchSize, 2048), 2 ** 32 - 1);
  return {
    contextSize,
    batchSize,
    ubatchSize: Math.min(uint32Count('ubatchSize', positiveInteger('ubatchSize', options.ubatchSize, 512), 2 ** 32 - 1), batchSize),
    sequences: sequences(options.sequences),
    unifiedKv: options.unifiedKv ?? false,
    typeK: cacheType('typeK', options.typeK),
    typeV: cacheType('typeV', options.typeV),
    flashAttention: options.flashAttention ?? true,
    swaFull: options.swaFull ?? false,
    gpuLayers: positiveInteger('gpuLayers', options.gpuLayers, 0, true),
    gpu: gpuKind(options.gpu),
  };
}
