import type { ModelShape } from './model-shape.js';
import type { ResolvedOptions } from './options.js';
import type { KvCacheEstimate } from './kv-cache.js';

const F32 = 4;

/**
 * The compute (scratch) buffer. ggml's graph allocator reuses memory, so the buffer is the peak
 * of what is alive at once while llama.cpp's worst-case graph (one full ubatch against the whole
 * cache) runs; every term is per token of the ubatch, so the buffer is n_ubatch times:
 * - the attention masks, graph inputs alive throughout: n_kv cells each (f32, or f16 with flash
 *   attention), one per cache (full and sliding-window);
 * plus the largest of the moments:
 * - attention: the scores, n_kv x n_head in f32 (none with flash attention), beside the layer's
 *   activations (residual stream, its norm, Q, K, V and the output: 4 n_embd + q + k + v);
 * - the mixture of experts: those activations plus gate and up rows for each used expert;
 * - the sparse-attention indexer (DSA, QSA): its query heads' scores;
 * - the SSM scan (Mamba): the input projection and the inner activations;
 * - the output: logits (n_vocab, the reserve asks one output per token) beside two hidden rows.
 * Fitted to llama.cpp's own figures (see docs/api.md for the error per family), not exact.
 */
export function estimateCompute(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): number {
  const tokens = Math.min(options.ubatchSize, options.contextSize);
  const flash = options.flashAttention && !shape.attentionSoftcap;
  const maskElement = flash ? 2 : 4;
  const embd = shape.embeddingLength;
  const attention = shape.layers.filter((l) => l.attention);
  // models without memory (encoders, diffusion) attend within the ubatch
  const noMemory = shape.rule.memory === 'none';
  const fullCells = noMemory ? tokens : attention.some((l) => !l.slidingWindow) ? kv.cells : 0;
  const swaCells = attention.some((l) => l.slidingWindow) ? kv.swaCells : 0;
  const nKv = Math.max(fullCells, swaCells);

  const masks = (fullCells + swaCells) * maskElement;

  let activations = F32 * 4 * embd;
  let scores = 0;
  const layers = noMemory ? shape.layers.filter((l) => l.headCount > 0) : attention;
  if (layers.length > 0) {
    const widest = layers.reduce((a, b) => (a.kWidth + a.vWidth >= b.kWidth + b.vWidth ? a : b));
    const headK = widest.headCountKv > 0 ? widest.kWidth / widest.headCountKv : 0;
    activations += F32 * (widest.headCount * headK + widest.kWidth + widest.vWidth);
    const heads = Math.max(...layers.map((l) => l.headCount));
    if (!flash) scores = nKv * heads * F32;
  }
  if (shape.rule.indexer === 'dsa') scores += fullCells * (flash ? 10 : 12);
  if (shape.rule.indexer === 'msa' && flash) scores += fullCells * 16;
  if (shape.rule.indexer === 'qsa') scores += fullCells * (2 * shape.indexerHeads + 6);

  // The masks are freed after the last layer's attention: a moment after it (a last MoE or SSM
  // layer, the output) does not carry them.
  const lastAttention = Math.max(-1, ...layers.map((l) => l.index));
  const beforeLastAttention = (pick: (l: (typeof shape.layers)[number]) => boolean) => shape.layers.some((l) => pick(l) && l.index < lastAttention);
  const attentionMoment = scores + activations;
  const expertMoment = shape.expertCount > 0 ? activations + F32 * 2 * shape.expertUsedCount * shape.expertFeedForward : 0;
  const indexerMoment = shape.indexerHeads > 0 ? activations + F32 * 2 * shape.indexerHeads * shape.indexerKeyLength : 0;
  const ssmMoment = shape.ssmInputWidth > 0 ? F32 * (2 * shape.ssmInputWidth + 3.5 * shape.ssmInner) : 0;
  const outputMoment = F32 * (shape.vocabularySize + 2 * embd);

  const withMasks = [attentionMoment, indexerMoment];
  const withoutMasks = [outputMoment];
  (beforeLastAttention((l) => l.experts) ? withMasks : withoutMasks).push(expertMoment);
  (beforeLastAttention((l) => l.recurrent) ? withMasks : withoutMasks).push(ssmMoment);
  const perToken = Math.max(masks + Math.max(...withMasks), ...withoutMasks);
  // a recurrent layer's state is copied out whole for one sequence
  const state = shape.layers.some((l) => l.recurrent) ? (shape.recurrentR + shape.recurrentS) * F32 : 0;
  return Math.round(tokens * perToken + state);
}
