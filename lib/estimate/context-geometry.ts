// How llama.cpp lays a context out in cells and streams, and the shape of a cache's estimate:
// shared by the attention cache (kv-cache.ts) and DeepSeek 4's compressed one (dsv4-cache.ts).
import type { ResolvedOptions } from './options.js';
import { alignUp } from './weights.js';

/** llama.cpp pads n_ctx (and n_ctx per sequence) to 256 cells. */
export const CONTEXT_PADDING = 256;

export interface ContextGeometry {
  /** n_ctx after padding (and rounding to a multiple of the sequences without a unified cache). */
  readonly contextSize: number;
  /** Cells per KV stream (n_ctx_seq; all of n_ctx when unified). */
  readonly cellsPerStream: number;
  readonly streams: number;
}

export function contextGeometry(options: ResolvedOptions): ContextGeometry {
  const nCtx = alignUp(options.contextSize, CONTEXT_PADDING);
  if (options.unifiedKv) return { contextSize: nCtx, cellsPerStream: nCtx, streams: 1 };
  const perSeq = alignUp(Math.floor(nCtx / options.sequences), CONTEXT_PADDING);
  return { contextSize: perSeq * options.sequences, cellsPerStream: perSeq, streams: options.sequences };
}

export interface KvCacheEstimate {
  /** Everything llama.cpp's memory breakdown calls `context`, bytes. */
  readonly total: number;
  /** Attention K and V of full-context layers. */
  readonly attention: number;
  /** Attention K and V of sliding-window layers (at their window unless swaFull). */
  readonly slidingWindow: number;
  /** Sparse-attention indexer keys (DSA, MSA, QSA). */
  readonly indexer: number;
  /** Recurrent state (conv and SSM/WKV), always f32. */
  readonly recurrent: number;
  /** Cells per stream of the full and sliding-window caches. */
  readonly cells: number;
  readonly swaCells: number;
  /** With a GPU: the cache by llama.cpp buffer type (CUDA0: the GPU layers' caches; CPU: the rest). */
  readonly byBuffer?: { readonly CUDA0: number; readonly CPU: number };
}

