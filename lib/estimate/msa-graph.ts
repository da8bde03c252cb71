import type { ComputeGraph } from './compute-graph.js';
import type { GraphTensor } from './graph-allocator.js';
import type { LayerShape, ModelShape } from './model-shape.js';
import type { ReserveShape } from './reserve-shape.js';

const F32 = 4;
const F16 = 2;
const I32 = 4;
const I64 = 8;

/**
 * llama.cpp pads the positions MSA scores to whole blocks of at least 256 (the cache's padding);
 * while reserving the cache is empty, so that floor is the axis.
 */
const MSA_POSITION_FLOOR = 256;

/**
 * MiniMax-M3's sparse attention runs only with flash attention and per-sequence streams (one
 * sequence, or a cache that is not unified); otherwise every layer attends densely.
 */
export function msaEnabled(shape: ModelShape, r: ReserveShape, sequences: number): boolean {
  return shape.rule.indexer === 'msa' && r.flash && (sequences === 1 || r.streams > 1);
}

/** The inputs the sparse layers share (llm_graph_input_msa and the indexer cache's row indexes). */
export interface MsaInputs {
  readonly positions: number;
  readonly blocks: number;
  readonly posSlot: GraphTensor;
  readonly posMask: GraphTensor;
  readonly bias: GraphTensor;
  readonly cellBlock: GraphTensor;
  /** The causal mask cast to f32 once, for every sparse layer. */
  readonly maskF32: GraphTensor;
  readonly indexerKIdx: GraphTensor;
}

export function msaInputs(g: ComputeGraph, shape: ModelShape, r: ReserveShape, mask: GraphTensor, cells: number): MsaInputs {
  const T = r.tokens;
  const ns = r.streams;
  const block = Math.max(1, shape.indexerBlockSize);
  const positions = Math.ceil(MSA_POSITION_FLOOR / block) * block;
  const blocks = positions / block;
  return {
    positions,
    blocks,
    bias: g.input(blocks * T * F32, 'msa_bias'),
    posMask: g.input(positions * T * F32, 'msa_pos_mask'),
    posSlot: g.input(positions * ns * I32, 'msa_pos_slot'),
    cellBlock: g.input(cells * ns * I32, 'msa_cell_blk'),
    maskF32: g.op(cells * T * F32, [mask], 'msa_mask_f32'),
    indexerKIdx: g.input(T * I64, 'msa_k_idxs'),
  };
}

/** The cache inputs a sparse layer reads (the plain KV cache's). */
export interface MsaCacheInputs {
  readonly cells: number;
  readonly kIdx: GraphTensor;
  readonly vIdx: GraphTensor;
  readonly kRot: GraphTensor | undefined;
  readonly vRot: GraphTensor | undefined;
}

/**
 * A MiniMax-M3 sparse (MSA) attention layer as llama.cpp builds it for a batch: the indexer's key
 * (normed, roped) into its cache; Q, K, V (biased, Q and K normed and roped) into the KV cache;
 * then per stream the indexer's block scores over the positions, the top-k blocks, a block mask
 * expanded to the cells and added to the causal mask (f32, then f16), and flash attention with
 * that mask; the streams' outputs concatenated; the output projection. Returns it (before the residual).
 */
export function msaAttention(
  g: ComputeGraph,
  shape: ModelShape,
  layer: LayerShape,
  x: GraphTensor,
  pos: GraphTensor,
  cache: MsaCacheInputs,
  msa: MsaInputs,
  r: ReserveShape,
): GraphTensor {
  const T = r.tokens;
  const ns = r.streams;
  const perStream = T / ns;
  const H = layer.headCount;
  const HKV = layer.headCountKv;
  const D = HKV > 0 ? layer.kWidth / HKV : 0;
  const Hd = shape.indexerHeads;
  const width = shape.indexerKeyLength;
  const cells = cache.cells;
  const K = Math.min(shape.indexerTopK, msa.blocks);

  // a projection with its scale and bias in place, viewed as heads; normed into a new tensor, its weight and rope in place
  const project = (rows: number, name: string) => {
    const p = g.op(rows * T * F32, [g.external, x], `${name}:${rows}x${T}`);
    return g.op(p.bytes, [g.op(p.bytes, [p, g.external], p.layout, { inplace: true }), g.external], p.layout, { inplace: true });
  };
  const normRope = (t: GraphTensor, name: string) => {
    const n = g.op(t.bytes, [g.view(t, `${name}-heads`)], `${name}-normed`);
    const w = g.op(n.bytes, [n, g.external], n.layout, { inplace: true });
    return g.op(w.bytes, [w, pos], w.layout, { inplace: true });
  };
  const rotate = (t: GraphTensor, by: GraphTensor | undefined) =>
    by === undefined ? t : g.view(g.op(t.bytes, [by, g.view(t, 'rows')], `${t.layout}-rotated`), `${t.layout}-rotated-heads`);

  // the indexer: queries (not expanded yet) and the key written to its cache
  const iq = normRope(g.op(width * Hd * T * F32, [g.external, x], `f32:${width * Hd}x${T}`), 'iq');
  const ik = normRope(g.op(width * T * F32, [g.external, x], `f32:${width}x${T}`), 'ik');
  g.expand(g.view(g.external, 'cache-indexer-k', 0, [g.view(ik, 'ik-rows'), msa.indexerKIdx]));

  const q = g.expand(rotate(normRope(project(H * D, 'q'), 'q'), cache.kRot));
  const k = g.expand(rotate(normRope(project(HKV * D, 'k'), 'k'), cache.kRot));
  const v = g.expand(rotate(g.view(project(HKV * D, 'v'), 'v-heads'), cache.vRot));
  g.expand(g.view(g.external, 'cache-k', 0, [g.view(k, 'k-rows'), cache.kIdx]));
  g.expand(g.view(g.external, 'cache-v', 0, [g.view(v, 'v-rows'), cache.vIdx]));

  const outs: GraphTensor[] = [];
  for (let st = 0; st < ns; st++) {
    // block scores: the indexer keys gathered by position, times the queries, masked, max-pooled per block, biased
    const keys = g.op(width * msa.positions * F32, [g.external, g.view(msa.posSlot, 'pos_slot-s')], `f32:${width}x${msa.positions}`);
    const scores = g.op(msa.positions * Hd * perStream * F32, [keys, g.view(iq, 'iq-s')], 'msa_scores');
    const masked = g.view(scores, 'msa_scores-masked', scores.bytes, [g.view(msa.posMask, 'pos_mask-s')]);
    const pooled = g.op(msa.blocks * Hd * perStream * F32, [masked], `f32:${msa.blocks}x${Hd}x${perStream}`);
    const biased = g.op(pooled.bytes, [pooled, g.view(msa.bias, 'bias-s')], pooled.layout, { inplace: true });
    const chosen = g.op(K * Hd * perStream * I32, [biased], `i32:${K}x${Hd}x${perStream}`);
    // the block mask: -inf everywhere (f16), zeros written at the chosen blocks
    const zeroF32 = g.op(K * Hd * perStream * F32, [chosen], `f32:${K}x${Hd}x${perStream}`);
    const zero = g.op(zeroF32.bytes, [zeroF32], zeroF32.layout, { inplace: true });
    const negF32 = g.op(msa.blocks * perStream * F32, [g.view(msa.bias, 'bias-s')], `f32:${msa.blocks}x1x${perStream}`);
    const neg = g.op(msa.blocks * Hd * perStream * F16, [g.op(msa.blocks * perStream * F16, [negF32], `f16:${msa.blocks}x1x${perStream}`)], `f16:${msa.blocks}x${Hd}x${perStream}`);
    const blockMask = g.setRows(g.view(neg, 'ninf-rows'), g.view(zero, 'zero-rows'), g.view(chosen, 'idx-rows'), 'block-mask');
    const permuted = g.op(msa.blocks * perStream * Hd * F16, [g.view(blockMask, 'block-mask-permuted')], 'msa_block_mask');
    const transposed = g.op(permuted.bytes, [g.view(permuted, 'block-mask-transposed')], 'msa_block_mask-t');
    // to the cells (f32), transposed back, plus the causal mask, cast to f16 for flash attention
    const byCell = g.op(perStream * Hd * cells * F32, [transposed, g.view(msa.cellBlock, 'cell_blk-s')], 'msa_cells');
    const cellMask = g.op(byCell.bytes, [g.view(byCell, 'msa_cells-t')], 'msa_cells-cont');
    const withCausal = g.view(cellMask, 'msa_mask-added', cellMask.bytes, [g.view(msa.maskF32, 'mask-s')]);
    const mask4 = g.op(cells * perStream * Hd * F16, [g.view(withCausal, 'msa_mask4-view')], 'msa_mask4');
    const fa = g.op(D * H * perStream * F32, [g.view(q, 'q-s'), g.external, g.external, mask4], 'msa_fattn');
    // the output back to [heads, tokens]: copied unless the channel axis is one (a no-op permute)
    outs.push(HKV > 1 ? g.view(g.op(fa.bytes, [g.view(fa, 'msa_fattn-permuted')], 'msa_fattn-cont'), 'msa-out') : g.view(fa, 'msa-out'));
  }
  let cur = outs[0]!;
  for (let st = 1; st < ns; st++) cur = g.op(D * H * perStream * (st + 1) * F32, [cur, outs[st]!], `f32:${D * H}x${perStream * (st + 1)}`);
  if (cache.vRot !== undefined) cur = rotate(cur, cache.vRot);
  return g.op(x.bytes, [g.external, cur], x.layout);
}
