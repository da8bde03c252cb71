import type { ModelShape } from './model-shape.js';
import type { ResolvedOptions } from './options.js';
import type { KvCacheEstimate } from './kv-cache.js';

/**
 * The compute (scratch) buffer: ggml's graph allocator reuses memory, so the buffer is the peak of
 * the tensors alive at once while llama.cpp's worst-case graph (one full ubatch over the whole
 * cache) runs. Three moments bound it:
 * - attention: the scores n_kv x n_ubatch x n_head in f32 (not with flash attention), the mask
 *   n_kv x n_ubatch (f32, or f16 with flash attention), beside the layer's activations (the
 *   residual stream, its norm, Q, K, V and the attention output: about 4 n_embd + q + k + v per
 *   token);
 * - the output: logits n_vocab x n_outputs in f32 (n_outputs = n_ubatch in the reserve) beside
 *   two hidden-state rows per token;
 * - the feed-forward: gate and up projections (n_ff, or n_expert_used x n_ff_exp for MoE) beside
 *   the residual stream.
 * This is an estimate calibrated against llama.cpp's own figures; see docs/api.md for its error.
 */
export function estimateCompute(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): number {
  const tokens = Math.min(options.ubatchSize, options.contextSize);
  const f32 = 4;
  const maskElement = options.flashAttention ? 2 : 4;
  const embd = shape.embeddingLength;

  let attentionPeak = 0;
  const attention = shape.layers.filter((l) => l.attention);
  if (attention.length > 0) {
    const nKv = Math.max(kv.cells, kv.swaCells);
    const headMax = Math.max(...attention.map((l) => l.headCount), 1);
    const widest = attention.reduce((a, b) => (a.kWidth + a.vWidth >= b.kWidth + b.vWidth ? a : b));
    const qWidth = widest.headCount * (widest.headCountKv > 0 ? widest.kWidth / widest.headCountKv : 0);
    let masks = kv.cells * tokens * maskElement;
    if (kv.swaCells > 0 && kv.swaCells !== kv.cells) masks += kv.swaCells * tokens * maskElement;
    const scores = options.flashAttention ? 0 : nKv * tokens * headMax * f32;
    attentionPeak = scores + masks + tokens * f32 * (4 * embd + qWidth + widest.kWidth + widest.vWidth);
  }

  const outputPeak = tokens * f32 * (shape.vocabularySize + 2 * embd);

  const ffnWidth = Math.max(shape.feedForwardMax, shape.expertUsedCount * shape.expertFeedForward);
  const ffnPeak = tokens * f32 * (3 * embd + 2 * ffnWidth);

  let recurrentPeak = 0;
  if (shape.layers.some((l) => l.recurrent)) {
    recurrentPeak = tokens * f32 * (3 * embd + 2 * (shape.recurrentR + shape.recurrentS) / Math.max(1, tokens));
  }

  return Math.max(attentionPeak, outputPeak, ffnPeak, recurrentPeak);
}
