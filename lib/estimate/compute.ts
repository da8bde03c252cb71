import { GgufError } from '../errors.js';
import type { LayerShape, ModelShape } from './model-shape.js';
import { transformerGraph, type ReserveShape } from './transformer-graph.js';
import type { ResolvedOptions } from './options.js';
import type { KvCacheEstimate } from './kv-cache.js';
import { mlaDecompressedModelled, mlaModelled } from './mla-graph.js';
import { estimateFromMoments } from './compute-moments.js';
import { hadamardSide } from './hadamard.js';

/**
 * The compute (scratch) buffer llama.cpp reserves: ggml's graph allocator replayed
 * (graph-allocator.ts) over the worst-case graph as llama.cpp builds it (transformer-graph.ts and
 * the mixers it dispatches to); architectures whose graph is not written out yet go by their
 * largest moments (compute-moments.ts).
 */
export function estimateCompute(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): number {
  const bytes = graphModelled(shape) ? transformerGraph(shape, reserveShape(shape, options, kv)).allocate() : estimateFromMoments(shape, options, kv);
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new GgufError('BAD_HYPERPARAMETER', `${shape.architecture}: the header's sizes give no compute buffer (${bytes})`, 0);
  return bytes;
}

/**
 * Whether the compute buffer is replayed: every attention-cache architecture but those with a
 * sparse indexer or MLA outside the checked ones (mla-graph.ts, msa-graph.ts say which), the
 * recurrent and hybrid ones whose mixer is written out (architectures.ts `mixer`), and diffusion
 * decoders. An attention architecture goes through the generic decoder graph even where
 * llama.cpp's differs in ways not modelled (T5's encoder-decoder, Grok, Arctic, Gemma 3n's
 * shared-KV layers): unchecked. The rest (RWKV, encoders, PLaMo 2, Qwen4-exp, Kimi Linear/K3,
 * Bailing 3, Falcon-H1, MiniMax-01, Hunyuan v4, DeepSeek 4) go by the largest moments (compute-moments.ts).
 */
export function graphModelled(shape: ModelShape): boolean {
  // MLA (the latent cache, with or without a DSA indexer, or its weights over a plain cache) and MiniMax-M3's MSA
  if (shape.rule.memory === 'kv' && (mlaModelled(shape) || mlaDecompressedModelled(shape))) return true;
  if (shape.rule.memory === 'kv' && shape.architecture === 'minimax-m3') return true;
  if (shape.rule.indexer !== undefined || shape.kvLoraRank > 0 || shape.latentWidth > 0) return false;
  return shape.rule.memory === 'kv' || shape.rule.mixer !== undefined || shape.rule.diffusion === true;
}


const QUANTIZED_CACHE = new Set(['q8_0', 'q4_0', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1']);

/** The worst-case ubatch llama.cpp reserves its graph for, in the terms transformer-graph needs. */
export function reserveShape(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): ReserveShape {
  // with sliding-window layers their cache takes its rotation from the full-context cache's layers
  const withKv = shape.layers.filter((l) => l.attention && l.headCountKv > 0);
  const attention = withKv.some((l) => l.slidingWindow) ? withKv.filter((l) => !l.slidingWindow) : withKv;
  // one head size across the cache's layers, a multiple of 64: a quantized cache is rotated
  const sameHead = (width: (l: LayerShape) => number): number => {
    const sizes = new Set(attention.map((l) => width(l) / l.headCountKv));
    const [size] = sizes;
    return sizes.size === 1 && size !== undefined && size > 0 && size % 64 === 0 ? size : 0;
  };
  const headK = QUANTIZED_CACHE.has(options.typeK) ? sameHead((l) => l.kWidth) : 0;
  const headV = QUANTIZED_CACHE.has(options.typeV) ? sameHead((l) => l.vWidth) : 0;
  const kRotation = headK > 0 ? hadamardSide(headK) : 0;
  // min(n_ctx as asked, n_ubatch), rounded up to a multiple of the sequences; outputs: one per token asked
  const outputs = Math.min(options.ubatchSize, options.contextSize);
  return {
    tokens: Math.ceil(outputs / options.sequences) * options.sequences,
    outputs,
    streams: options.unifiedKv ? 1 : options.sequences,
    sequences: options.sequences,
    fullCells: kv.cells,
    swaCells: kv.swaCells,
    flash: options.flashAttention && !shape.attentionSoftcap,
    kF32: options.typeK === 'f32',
    vF32: options.typeV === 'f32',
    typeK: options.typeK,
    kRotation,
    vRotation: headV > 0 ? 64 : 0,
  };
}
