import { ComputeGraph } from './compute-graph.js';
import type { ReserveShape } from './reserve-shape.js';
import type { GraphTensor } from './graph-allocator.js';
import type { LayerShape, ModelShape } from './model-shape.js';
import { kvRowBytes, type KvCacheType } from './options.js';
import { gatedDeltaNetMixer, mamba2Mixer, mambaMixer, shortConvMixer, type RecurrentInputs } from './recurrent-graph.js';
import { mlaAttention, mlaCacheInputs, mlaDecompressedModelled, mlaDecompressedQkv, mlaModelled } from './mla-graph.js';
import { msaAttention, msaEnabled, msaInputs } from './msa-graph.js';

const F32 = 4;
const I32 = 4;
const I64 = 8;

interface CacheInputs {
  readonly cells: number;
  /** Row indexes of the cache writes; none without a cache (encoders, diffusion models attend within the ubatch). */
  readonly kIdx: GraphTensor | undefined;
  readonly vIdx: GraphTensor | undefined;
  readonly mask: GraphTensor;
  readonly kRot: GraphTensor | undefined;
  readonly vRot: GraphTensor | undefined;
}

/** Architectures whose rope is multi-section (LLAMA_ROPE_TYPE_MROPE/IMROPE): 4 positions per token. */
export const MROPE = new Set(['qwen2vl', 'paddleocr', 'qwen3vl', 'qwen3vlmoe', 'qwen35', 'qwen35moe', 'qwen4exp', 'qwen3tts']);

/**
 * llama.cpp's decoder graph for one ubatch, as the allocator sees it: per layer the norm, Q/K/V,
 * the cache writes, attention (scores and softmax, or flash attention), the output projection
 * and the residual, then a dense or mixture-of-experts FFN; at the end the norm and the logits.
 * Ops that reuse their source in place (norm weights, biases, rope, softmax, residual adds) add
 * nothing; what is alive at once, and the holes between, decide the buffer. The graph is built in
 * the order llama.cpp builds it (build_inp_embd, build_attn, build_moe_ffn expand the same nodes).
 */
export function transformerGraph(shape: ModelShape, r: ReserveShape, detailed = false, weightNames?: ReadonlySet<string>): ComputeGraph {
  const g = new ComputeGraph(detailed, weightNames);
  const T = r.tokens;
  const O = r.outputs;
  const E = shape.embeddingLength;
  const act = (width: number, n = T) => `f32:${width}x${n}`;
  // without memory every layer with heads attends (within the ubatch)
  const attention = shape.layers.filter((l) => l.attention || (shape.rule.memory === 'none' && l.headCount > 0));
  const vMax = Math.max(0, ...attention.map((l) => l.vWidth));

  // the embeddings: token rows, or the vector input (an input kept to the end: nothing reads it)
  const tokens = g.input(T * I32, 'inp_tokens');
  let inpL = g.op(E * T * F32, [g.external, tokens], act(E));
  g.expand(inpL);
  g.expand(g.input(E * T * F32, 'inp_embd'));
  // multi-section rope (M-RoPE) keeps 4 positions per token (n_pos_per_embd): only the GPU's
  // scheduler (the pinned host buffer) sees the difference
  const pos = g.input(T * I32 * (detailed && MROPE.has(shape.architecture) ? 4 : 1), 'inp_pos');
  if (shape.learnedPositions) inpL = g.op(inpL.bytes, [inpL, g.op(E * T * F32, [g.external, pos], act(E))], act(E), { inplace: true });
  // Talkie: the embeddings normed (no weight), kept for every layer's skip
  const skipped = shape.rule.embeddingSkip === true;
  if (skipped) inpL = g.op(inpL.bytes, [inpL], act(E), { inplace: true });
  const embeddings = inpL;

  // each cache (full, sliding-window) has its own inputs
  const noCache = shape.rule.memory === 'none';
  const cacheInputs = (cells: number): CacheInputs => ({
    cells,
    kIdx: noCache ? undefined : g.input(T * I64, 'k_idxs'),
    vIdx: noCache ? undefined : g.input(r.flash ? T * I64 : T * vMax * I64, 'v_idxs'),
    mask: g.input(cells * T * (r.flash ? 2 : F32), 'kq_mask'),
    kRot: r.kRotation > 0 ? g.input(r.kRotation * r.kRotation * F32, 'k_rot') : undefined,
    vRot: r.vRotation > 0 ? g.input(r.vRotation * r.vRotation * F32, 'v_rot') : undefined,
  });
  const full = attention.some((l) => !l.slidingWindow) ? cacheInputs(noCache ? T : r.fullCells) : undefined;
  const swa = attention.some((l) => l.slidingWindow) ? cacheInputs(noCache ? T : r.swaCells) : undefined;
  const recurrent: RecurrentInputs | undefined = shape.layers.some((l) => l.recurrent) ? { stateCopy: g.input(r.sequences * I32, 'rs_s_copy') } : undefined;
  const outIds = g.input(O * I32, 'out_ids');
  // MLA caches (K only), the full one with the DSA indexer's when the model has one
  const mla = mlaModelled(shape);
  const mlaFull = mla && full !== undefined ? mlaCacheInputs(g, shape, r, r.fullCells, shape.rule.indexer === 'dsa') : undefined;
  const mlaSwa = mla && swa !== undefined ? mlaCacheInputs(g, shape, r, r.swaCells, false) : undefined;
  // MiniMax-M3's sparse layers: inputs they share
  const msa = full !== undefined && msaEnabled(shape, r, r.sequences) ? msaInputs(g, shape, r, full.mask, full.cells) : undefined;

  // llama.cpp's graph runs the trunk: appended NextN blocks are not in it
  const trunk = shape.layers.slice(0, shape.layers.length - shape.nextnLayers);
  const last = trunk.at(-1)?.index ?? -1;
  const ffn = (layer: LayerShape, x: GraphTensor, n: number) => {
    if (!layer.experts || shape.expertCount === 0) return denseFfn(g, shape, x, n);
    // build_ffn with no up, gate or down tensor: the activation (SiLU) alone, in place
    if (shape.rule.ffnIgnoresExperts === true) return g.op(x.bytes, [x], x.layout, { inplace: true });
    return moeBlock(g, shape, x, n);
  };
  for (const layer of trunk) {
    g.mark();
    const inputs = layer.slidingWindow ? swa : full;
    const post = shape.rule.postNorm === true;
    const normed = post ? inpL : g.norm(inpL);
    let cur: GraphTensor;
    // Nemotron-H: a block is a mixer or an FFN, never both
    const ffnOnly = shape.rule.attentionWhereNoFfn === true && !layer.attention && !layer.recurrent && layer.ffn;
    if (ffnOnly) cur = ffn(layer, normed, T);
    else if (layer.recurrent && recurrent !== undefined) cur = recurrentMixer(shape)(g, shape, normed, T, r.sequences, recurrent);
    else if (layer.attention && (layer.slidingWindow ? mlaSwa : mlaFull) !== undefined) {
      cur = mlaAttention(g, shape, layer, normed, pos, (layer.slidingWindow ? mlaSwa : mlaFull)!, r);
    }
    else if (layer.attention && msa !== undefined && layer.indexerWidth > 0 && inputs?.kIdx !== undefined && inputs.vIdx !== undefined) {
      cur = msaAttention(g, shape, layer, normed, pos, { ...inputs, kIdx: inputs.kIdx, vIdx: inputs.vIdx }, msa, r);
    }
    else if ((layer.attention || (noCache && layer.headCount > 0)) && inputs !== undefined) {
      // Falcon 40B: attention on a second norm of the input (attn_norm_2), the FFN on the first
      const attnIn = layer.secondNorm && shape.rule.parallelFfn !== undefined ? g.norm(inpL) : normed;
      cur = attentionBlock(g, layer, attnIn, roped(shape, layer) ? pos : undefined, inputs, r, shape.fusedQkv, shape.rule.swa !== undefined,
        mlaDecompressedModelled(shape) ? mlaDecompressedQkv(g, shape, layer, normed, pos, r) : undefined);
    }
    // a layer without a cache of its own (shared KV): its attention output, same width
    else cur = g.op(E * T * F32, [g.external, normed], act(E));
    if (post) cur = g.norm(cur);
    else cur = g.normIf(cur, `blk.${layer.index}.post_attention_norm.weight`);
    let inpSA = inpL;
    let ffnIn = normed;
    // the last layer goes on with the output rows only (or all rows, picked after the final norm)
    const crop = layer.index === last && shape.rule.lateOutputRows !== true;
    const n = crop ? O : T;
    const parallel = shape.rule.parallelFfn;
    let skip = embeddings;
    if (crop) {
      cur = g.op(E * O * F32, [cur, outIds], act(E, O));
      if (parallel === 'attention-first') ffnIn = g.op(E * O * F32, [normed, outIds], act(E, O));
      inpSA = g.op(E * O * F32, [inpSA, outIds], act(E, O));
      if (parallel === true) ffnIn = g.op(E * O * F32, [normed, outIds], act(E, O));
      if (skipped) skip = g.op(E * O * F32, [embeddings, outIds], act(E, O));
    }
    if (!layer.ffn || ffnOnly) {
      inpL = g.op(cur.bytes, [cur, inpSA], cur.layout, { inplace: true });
    } else if (parallel === 'attention-first') {
      // FFN(norm) + attention + residual
      const sum = g.op(cur.bytes, [ffn(layer, ffnIn, n), cur], cur.layout, { inplace: true });
      inpL = g.op(cur.bytes, [sum, inpSA], cur.layout, { inplace: true });
    } else if (parallel === true) {
      // FFN(norm) + residual + attention
      const sum = g.op(cur.bytes, [ffn(layer, ffnIn, n), inpSA], cur.layout, { inplace: true });
      inpL = g.op(cur.bytes, [sum, cur], cur.layout, { inplace: true });
    } else {
      const first = shape.rule.residualFirst === 'both';
      const ffnFirst = shape.rule.residualFirst !== undefined;
      const ffnInp = g.op(cur.bytes, first ? [inpSA, cur] : [cur, inpSA], cur.layout, { inplace: true });
      let out = ffn(layer, post ? ffnInp : g.norm(ffnInp), n);
      if (post) out = g.norm(out);
      else out = g.normIf(out, `blk.${layer.index}.post_ffw_norm.weight`);
      inpL = g.op(cur.bytes, ffnFirst ? [ffnInp, out] : [out, ffnInp], cur.layout, { inplace: true });
      if (skipped) inpL = g.op(cur.bytes, [inpL, g.op(cur.bytes, [skip, g.external], cur.layout, { inplace: true })], cur.layout, { inplace: true });
    }
  }
  g.outputLayer();
  let out = g.norm(inpL);
  if (shape.rule.lateOutputRows === true) out = g.op(E * O * F32, [out, outIds], act(E, O));
  g.expand(g.op(shape.vocabularySize * O * F32, [g.external, out], 'logits', { output: true }));
  return g;
}

/** The recurrent layers' mixer (compute.ts replays only architectures that name one). */
function recurrentMixer(shape: ModelShape): typeof mamba2Mixer {
  switch (shape.rule.mixer) {
    case 'mamba': return mambaMixer;
    case 'mamba2': return mamba2Mixer;
    case 'gated-delta-net': return gatedDeltaNetMixer;
    case 'short-conv': return shortConvMixer;
    default: throw new Error(`${shape.architecture}: recurrent layers without a mixer to replay`);
  }
}

/** Whether the layer's attention ropes Q and K (llama.cpp's rope type and each model's own rule). */
function roped(shape: ModelShape, layer: LayerShape): boolean {
  const rule = shape.rule;
  if (rule.noRope === true) return false;
  if (rule.ropeOnlyWithLayers !== undefined && rule.ropeOnlyWithLayers !== shape.layerCount) return false;
  if (rule.ropeOnlySwa === undefined || layer.slidingWindow) return true;
  return rule.ropeOnlySwa === 'and-leading-dense' && layer.index < shape.leadingDenseBlocks;
}

function attentionBlock(
  g: ComputeGraph,
  layer: LayerShape,
  x: GraphTensor,
  pos: GraphTensor | undefined,
  inputs: CacheInputs,
  r: ReserveShape,
  fusedQkv: boolean,
  iswa: boolean,
  /** Q, K and V as the architecture makes them (roped), instead of this block's projections. */
  projected?: { readonly q: GraphTensor; readonly k: GraphTensor; readonly v: GraphTensor },
): GraphTensor {
  const T = r.tokens;
  const headK = layer.headCountKv > 0 ? layer.kWidth / layer.headCountKv : 0;
  const headV = layer.headCountKv > 0 ? layer.vWidth / layer.headCountKv : 0;
  const qWidth = layer.headCount * headK;
  const attnWidth = layer.headCount * headV;

  // separate projections, or views of one fused QKV (not contiguous: copied where a kernel needs rows)
  const qkv = fusedQkv ? g.affine(g.op((qWidth + layer.kWidth + layer.vWidth) * T * F32, [g.external, x], 'qkv'), layer.index, 'attn_qkv') : undefined;
  const project = (width: number, name: string) =>
    qkv !== undefined
      ? g.view(qkv, `${name}-view`, width * T * F32, [], ((T - 1) * (qWidth + layer.kWidth + layer.vWidth) + width) * F32)
      : g.normIf(g.affine(g.op(width * T * F32, [g.external, x], `${name}:${width}x${T}`), layer.index, `attn_${name}`), `blk.${layer.index}.attn_${name}_norm.weight`);
  // views of the fused QKV are the only operands here that are not contiguous rows
  const contiguous = (t: GraphTensor) => qkv === undefined || t.viewOf !== qkv;
  // rope in place over the heads (a new tensor when its source is a view of the fused QKV)
  const rope = (t: GraphTensor) => (pos === undefined ? t : g.op(t.bytes, [g.view(t, `${t.layout}-heads`), pos], `${t.layout}-heads`, { inplace: true }));
  // a quantized cache's rotation: rows times a Hadamard matrix (copied first when not contiguous)
  const rotate = (t: GraphTensor, by: GraphTensor | undefined) => {
    if (by === undefined) return t;
    const rows = contiguous(t) ? g.view(t, 'rows') : g.op(t.bytes, [t], `${t.layout}-rows`);
    return g.view(g.op(t.bytes, [by, rows], `${t.layout}-rotated`), t.layout);
  };
  // expanded Q, V, K (Q, K, V with the sliding-window cache's build_attn, and without a cache)
  // a gated query (Qwen 3.5): Q and its output gate from one projection; Q normed out of it, the
  // gate copied out only after attention, so the whole projection lives through attention
  const qFull = layer.gatedQuery ? g.op(2 * qWidth * T * F32, [g.external, x], 'q-gate') : undefined;
  const qProjected = qFull !== undefined
    ? g.op(qWidth * T * F32, [g.op(qWidth * T * F32, [g.view(qFull, 'q', qWidth * T * F32)], `q:${qWidth}x${T}`), g.external], `q:${qWidth}x${T}`, { inplace: true })
    : project(qWidth, 'q');
  const q = g.expand(rotate(projected?.q ?? (qFull !== undefined && pos !== undefined ? g.op(qProjected.bytes, [qProjected, pos], qProjected.layout, { inplace: true }) : rope(qProjected)), inputs.kRot));
  const vOf = () => rotate(projected?.v ?? project(layer.vWidth, 'v'), inputs.vRot);
  const kOf = () => rotate(projected?.k ?? rope(project(layer.kWidth, 'k')), inputs.kRot);
  let k: GraphTensor;
  let v: GraphTensor;
  if (iswa || inputs.kIdx === undefined) {
    k = g.expand(kOf());
    v = g.expand(vOf());
  } else {
    v = g.expand(vOf());
    k = g.expand(kOf());
  }

  const qHeads = g.view(q, 'q-permuted');
  let out: GraphTensor;
  if (inputs.kIdx === undefined || inputs.vIdx === undefined) {
    // no cache: K and V as projected (f32), over the ubatch's own tokens
    if (r.flash) {
      const kHalf = g.op(layer.kWidth * T * 2, [g.view(k, 'k-permuted')], 'k-f16');
      const vHalf = g.op(layer.vWidth * T * 2, [g.view(v, 'v-permuted')], 'v-f16');
      out = g.view(g.op(attnWidth * T * F32, [qHeads, kHalf, vHalf, inputs.mask], `fa:${headK}:${headV}:${layer.headCount / layer.headCountKv}`), `f32:${attnWidth}x${T}`);
    } else {
      const kq = g.op(T * T * layer.headCount * F32, [g.view(k, 'k-permuted'), qHeads], 'kq');
      const softmax = g.op(kq.bytes, [kq, inputs.mask], 'kq', { inplace: true });
      const vT = g.op(layer.vWidth * T * F32, [g.view(v, 'v-transposed')], 'v-t');
      const kqv = g.op(attnWidth * T * F32, [vT, softmax], 'kqv');
      out = g.op(kqv.bytes, [g.view(kqv, 'kqv-permuted')], `f32:${attnWidth}x${T}`);
    }
    g.expand(out);
    return g.op(x.bytes, [g.external, out], x.layout);
  }
  // the cache writes (set_rows into views of the cache)
  g.expand(g.view(g.external, 'cache-k', 0, [g.view(k, 'k-rows'), inputs.kIdx]));
  // without flash attention V is written transposed: from contiguous rows (copied if need be)
  const vRows = r.flash || contiguous(v) ? g.view(v, 'v-rows') : g.op(v.bytes, [v], 'v-rows');
  g.expand(g.view(g.external, 'cache-v', 0, [vRows, inputs.vIdx]));

  // the layer's K and V as attention reads them (all cells of every stream)
  const cells = inputs.cells * r.streams;
  // (viewed per head: rows of the head size; V without flash attention is transposed: rows of cells)
  const kView = () => g.cacheView(kvRowBytes(r.typeK as KvCacheType, layer.kWidth) * cells, r.typeK, headK);
  const vView = () => g.cacheView(kvRowBytes(r.typeV as KvCacheType, layer.vWidth) * cells, r.typeV, r.flash ? headV : inputs.cells);
  if (r.flash) {
    const kCache = r.kF32 ? g.op(cells * layer.kWidth * 2, [kView()], 'k-f16') : kView();
    const vCache = r.vF32 ? g.op(cells * layer.vWidth * 2, [vView()], 'v-f16') : vView();
    const fa = g.op(attnWidth * T * F32, [qHeads, kCache, vCache, inputs.mask], `fa:${headK}:${headV}:${layer.headCount / layer.headCountKv}`);
    out = g.view(fa, `f32:${attnWidth}x${T}`);
  } else {
    const kq = g.op(inputs.cells * T * layer.headCount * F32, [kView(), qHeads], 'kq');
    const softmax = g.op(kq.bytes, [kq, inputs.mask], 'kq', { inplace: true });
    const kqv = g.op(attnWidth * T * F32, [vView(), softmax], 'kqv');
    out = g.op(kqv.bytes, [g.view(kqv, 'kqv-permuted')], `f32:${attnWidth}x${T}`);
  }
  g.expand(out);
  out = rotate(out, inputs.vRot);
  if (layer.outputGateWidth > 0) {
    // out times sigmoid(gate projection of the layer's input), before the output projection
    const gate = g.op(layer.outputGateWidth * T * F32, [g.external, x], `f32:${layer.outputGateWidth}x${T}`);
    const sigmoid = g.op(gate.bytes, [gate], gate.layout, { inplace: true });
    out = g.op(out.bytes, [out, sigmoid], out.layout, { inplace: true });
  }
  if (qFull !== undefined) {
    const gate = g.op(qWidth * T * F32, [g.view(qFull, 'gate', qWidth * T * F32)], `f32:${qWidth}x${T}`);
    out = g.op(out.bytes, [out, g.op(gate.bytes, [gate], gate.layout, { inplace: true })], `f32:${attnWidth}x${T}`, { inplace: true });
  }
  return g.affine(g.op(x.bytes, [g.external, out], x.layout), layer.index, 'attn_output');
}

function denseFfn(g: ComputeGraph, shape: ModelShape, x: GraphTensor, T: number): GraphTensor {
  const ff = shape.feedForwardMax;
  const layout = `f32:${ff}x${T}`;
  let hidden: GraphTensor;
  if (shape.ffnKind === 'plain') {
    // up, then the activation in place
    const up = bias(g, g.op(ff * T * F32, [g.external, x], layout), 'ffn_up');
    hidden = g.op(up.bytes, [up], layout, { inplace: true });
  } else if (shape.ffnKind === 'fused') {
    const gateUp = g.op(2 * ff * T * F32, [g.external, x], `f32:${2 * ff}x${T}`);
    hidden = g.op(ff * T * F32, [g.view(gateUp, 'gate', ff * T * F32), g.view(gateUp, 'up', ff * T * F32)], layout);
  } else {
    return gatedFfn(g, ff, x, T);
  }
  return bias(g, g.op(x.bytes, [g.external, hidden], x.layout), 'ffn_down');
}

/** A feed-forward projection's bias where the file has one (llama.cpp's build_ffn adds it; the GPU's scheduler sees the op). */
function bias(g: ComputeGraph, t: GraphTensor, name: string): GraphTensor {
  return g.affine(t, g.currentLayer, name, ['bias']);
}

/** gate and up projections, their product, the down projection. */
function gatedFfn(g: ComputeGraph, ff: number, x: GraphTensor, T: number, names = ['ffn_gate', 'ffn_up', 'ffn_down']): GraphTensor {
  const layout = `f32:${ff}x${T}`;
  const gate = bias(g, g.op(ff * T * F32, [g.external, x], layout), names[0]!);
  const up = bias(g, g.op(ff * T * F32, [g.external, x], layout), names[1]!);
  return bias(g, g.op(x.bytes, [g.external, g.op(ff * T * F32, [gate, up], layout)], x.layout), names[2]!);
}

function moeBlock(g: ComputeGraph, shape: ModelShape, x: GraphTensor, T: number): GraphTensor {
  const n = shape.expertCount;
  const used = shape.expertUsedCount;
  const ff = shape.expertFeedForward;
  const E = shape.embeddingLength;
  const logits = bias(g, g.op(n * T * F32, [g.external, x], `f32:${n}x${T}`), 'ffn_gate_inp');
  const probs = g.op(logits.bytes, [logits], `f32:${n}x${T}`, { inplace: true });
  // experts chosen on the probabilities, plus a learned bias when the model has one (exp_probs_b)
  const selection = shape.expertProbsBias ? g.op(probs.bytes, [probs, g.external], probs.layout, { inplace: true }) : probs;
  const topk = g.view(g.op(n * T * I32, [selection], `i32:${n}x${T}`), 'topk', used * T * I32);
  let chosen = g.op(used * T * F32, [g.view(probs, 'probs3'), topk], `w:${used}x${T}`);
  if (shape.expertWeightsNorm) {
    // divided by their sum (clamped in place)
    const sum = g.op(T * F32, [g.view(chosen, 'w2')], `f32:1x${T}`);
    chosen = g.op(chosen.bytes, [g.view(chosen, 'w2'), g.op(sum.bytes, [sum], sum.layout, { inplace: true })], `w2:${used}x${T}`);
  }
  if (shape.expertWeightsScale !== 0 && shape.expertWeightsScale !== 1) chosen = g.op(chosen.bytes, [chosen], chosen.layout, { inplace: true });
  // the routing weights are expanded early (llama.cpp does, for its fused top-k)
  const weights = g.expand(chosen);
  let x3 = g.view(x, 'x3');
  if (shape.rule.moeWeightBeforeFfn === true) {
    // the input repeated per used expert and scaled by its weight
    const repeated = g.op(E * used * T * F32, [x3], 'repeated');
    x3 = g.op(repeated.bytes, [repeated, weights], 'repeated', { inplace: true });
  }
  let glu: GraphTensor;
  if (shape.fusedExpertGateUp) {
    const gateUp = bias(g, g.op(2 * ff * used * T * F32, [g.external, x3, topk], 'experts2'), 'ffn_gate_up_exps');
    glu = g.op(ff * used * T * F32, [g.view(gateUp, 'gate', ff * used * T * F32), g.view(gateUp, 'up', ff * used * T * F32)], 'experts');
  } else {
    // up is built first, but the gate is the product's first source
    const up = bias(g, g.op(ff * used * T * F32, [g.external, x3, topk], 'experts'), 'ffn_up_exps');
    const gate = bias(g, g.op(ff * used * T * F32, [g.external, x3, topk], 'experts'), 'ffn_gate_exps');
    glu = g.op(ff * used * T * F32, [gate, up], 'experts');
  }
  const down = bias(g, g.op(E * used * T * F32, [g.external, glu, topk], 'down'), 'ffn_down_exps');
  const weighted = g.expand(shape.rule.moeWeightBeforeFfn === true ? down : g.op(down.bytes, [down, weights], 'down', { inplace: true }));
  // the experts' rows summed: views of the weighted rows, added up. The first add makes the sum,
  // each later one adds in place and allocates nothing, so one stands for them all (the weighted
  // rows live until it, as until the last); one expert: its row copied out.
  const row = (i: number) => g.view(weighted, `expert${i}`, E * T * F32);
  let sum = used > 1 ? g.op(E * T * F32, [row(0), row(1)], x.layout) : g.op(E * T * F32, [row(0)], x.layout);
  if (used > 2) sum = g.op(sum.bytes, [sum, row(2)], x.layout, { inplace: true });
  // a shared expert beside the routed ones, on the same input, added
  if (shape.sharedExpertFeedForward > 0) {
    let shared = gatedFfn(g, shape.sharedExpertFeedForward, x, T, ['ffn_gate_shexp', 'ffn_up_shexp', 'ffn_down_shexp']);
    if (shape.sharedExpertGated) {
      const gate = g.op(T * F32, [g.external, x], `f32:1x${T}`);
      shared = g.op(shared.bytes, [shared, g.op(gate.bytes, [gate], gate.layout, { inplace: true })], shared.layout, { inplace: true });
    }
    sum = g.op(sum.bytes, [sum, shared], x.layout, { inplace: true });
  }
  return sum;
}
