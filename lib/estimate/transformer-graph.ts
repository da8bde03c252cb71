import { ComputeGraph } from './compute-graph.js';
import type { GraphTensor } from './graph-allocator.js';
import type { LayerShape, ModelShape } from './model-shape.js';

const F32 = 4;
const I32 = 4;
const I64 = 8;

/** What the worst-case graph is reserved for (llama_context::graph_reserve). */
export interface ReserveShape {
  /** Tokens in the ubatch (n_tokens, a multiple of the sequences) and the outputs asked of it. */
  readonly tokens: number;
  readonly outputs: number;
  /** KV streams: 1 with a unified cache, else the sequences. */
  readonly streams: number;
  /** Cells the full-context and sliding-window masks span (n_kv). */
  readonly fullCells: number;
  readonly swaCells: number;
  readonly flash: boolean;
  /** The K and V caches are f32 (flash attention then reads them through f16 copies). */
  readonly kF32: boolean;
  readonly vF32: boolean;
  /** Sides of the Hadamard rotations applied around a quantized K or V cache (0: none). */
  readonly kRotation: number;
  readonly vRotation: number;
}

/**
 * llama.cpp's decoder graph for one ubatch, as the allocator sees it: per layer the norm, Q/K/V,
 * the cache writes, attention (scores and softmax, or flash attention), the output projection
 * and the residual, then a dense or mixture-of-experts FFN; at the end the norm and the logits.
 * Ops that reuse their source in place (norm weights, biases, rope, softmax, residual adds) add
 * nothing; what is alive at once, and the holes between, decide the buffer.
 */
export function transformerGraph(shape: ModelShape, r: ReserveShape): ComputeGraph {
  const g = new ComputeGraph();
  const T = r.tokens;
  const E = shape.embeddingLength;
  const act = (width: number) => `f32:${width}x${T}`;
  const attention = shape.layers.filter((l) => l.attention);
  const hasFull = attention.some((l) => !l.slidingWindow);
  const hasSwa = attention.some((l) => l.slidingWindow);
  const vMax = Math.max(0, ...attention.map((l) => l.vWidth));
  const maskBytes = (cells: number) => cells * T * (r.flash ? 2 : F32);

  // inputs, in the order llama.cpp creates them
  const tokens = g.input(T * I32);
  g.input(E * T * F32); // inp_embd: the embeddings path's input, kept (no reader)
  const pos = g.input(T * I32);
  // each cache (full, sliding-window) has its own inputs
  const cacheInputs = (cells: number) => ({
    kRot: r.kRotation > 0 ? g.input(r.kRotation * r.kRotation * F32) : undefined,
    vRot: r.vRotation > 0 ? g.input(r.vRotation * r.vRotation * F32) : undefined,
    kIdx: g.input(T * I64),
    vIdx: g.input(r.flash ? T * I64 : T * vMax * I64),
    mask: g.input(maskBytes(cells)),
  });
  const full = hasFull ? cacheInputs(r.fullCells) : undefined;
  const swa = hasSwa ? cacheInputs(r.swaCells) : undefined;
  const outIds = g.input(r.outputs * I32);
  const O = r.outputs;

  let inpL = g.op(E * T * F32, [g.external, tokens], act(E));
  const last = shape.layers.length - 1;
  const ffn = (layer: LayerShape, x: GraphTensor, n: number) => (layer.experts && shape.expertCount > 0 ? moeBlock(g, shape, x, n) : denseFfn(g, shape, x, n));
  for (const layer of shape.layers) {
    const inputs = layer.slidingWindow ? swa : full;
    const normed = norm(g, inpL, act(E));
    let cur = layer.attention && inputs !== undefined
      ? attentionBlock(g, layer, normed, pos, inputs, r, shape.fusedQkv)
      // a layer without a cache (shared-KV): its mixer's output, same width
      : g.op(E * T * F32, [g.external, normed], act(E));
    let inpSA = inpL;
    let ffnIn = normed;
    if (layer.index === last) {
      cur = g.op(E * O * F32, [cur, outIds], `f32:${E}x${O}`);
      inpSA = g.op(E * O * F32, [inpSA, outIds], `f32:${E}x${O}`);
      if (shape.rule.parallelFfn === true) ffnIn = g.op(E * O * F32, [normed, outIds], `f32:${E}x${O}`);
    }
    // the last layer goes on with the output rows only
    const n = layer.index === last ? O : T;
    if (shape.rule.parallelFfn === true) {
      // FFN(norm) + residual + attention
      const sum = g.op(cur.bytes, [ffn(layer, ffnIn, n), inpSA], cur.layout, { inplace: true });
      inpL = g.op(cur.bytes, [sum, cur], cur.layout, { inplace: true });
    } else {
      const ffnInp = g.op(cur.bytes, [cur, inpSA], cur.layout, { inplace: true });
      inpL = g.op(cur.bytes, [ffn(layer, norm(g, ffnInp, ffnInp.layout), n), ffnInp], cur.layout, { inplace: true });
    }
  }
  const out = norm(g, inpL, inpL.layout);
  g.op(shape.vocabularySize * O * F32, [g.external, out], 'logits', { output: true });
  return g;
}

/** rms_norm then its weight, in place. */
function norm(g: ComputeGraph, x: GraphTensor, layout: string): GraphTensor {
  const n = g.op(x.bytes, [x], layout, { inplace: true });
  return g.op(n.bytes, [n, g.external], layout, { inplace: true });
}

function attentionBlock(
  g: ComputeGraph,
  layer: LayerShape,
  x: GraphTensor,
  pos: GraphTensor,
  inputs: { kIdx: GraphTensor; vIdx: GraphTensor; mask: GraphTensor; kRot: GraphTensor | undefined; vRot: GraphTensor | undefined },
  r: ReserveShape,
  fusedQkv: boolean,
): GraphTensor {
  const T = r.tokens;
  const headK = layer.headCountKv > 0 ? layer.kWidth / layer.headCountKv : 0;
  const headV = layer.headCountKv > 0 ? layer.vWidth / layer.headCountKv : 0;
  const qWidth = layer.headCount * headK;
  const cells = layer.slidingWindow ? r.swaCells : r.fullCells;

  // a quantized cache's rotation: Q and K (or V, and the attention's output) times a Hadamard matrix
  const rotate = (t: GraphTensor, by: GraphTensor | undefined) => (by === undefined ? t : g.op(t.bytes, [by, g.view(t, 'rows')], `${t.layout}-rotated`));
  // separate projections, or views of one fused QKV (then rope cannot work in place)
  const qkv = fusedQkv ? g.op((qWidth + layer.kWidth + layer.vWidth) * T * F32, [g.external, x], 'qkv') : undefined;
  const project = (width: number, name: string) => (qkv !== undefined ? g.view(qkv, name) : g.op(width * T * F32, [g.external, x], `${name}${width}x${T}`));
  const q = rotate(rope(g, project(qWidth, 'q'), qWidth * T * F32, pos), inputs.kRot);
  const v = rotate(project(layer.vWidth, 'v'), inputs.vRot);
  const k = rotate(rope(g, project(layer.kWidth, 'k'), layer.kWidth * T * F32, pos), inputs.kRot);
  g.view(g.external, 'cache-k', [g.view(k, 'k-rows'), inputs.kIdx]);
  g.view(g.external, 'cache-v', [g.view(v, 'v-rows'), inputs.vIdx]);
  const qPermuted = g.view(q, 'q-permuted');

  let out: GraphTensor;
  if (r.flash) {
    let kCache = g.external;
    let vCache = g.external;
    if (r.kF32) kCache = g.op(cells * r.streams * layer.kWidth * 2, [g.external], 'k-f16');
    if (r.vF32) vCache = g.op(cells * r.streams * layer.vWidth * 2, [g.external], 'v-f16');
    const fa = g.op(layer.headCount * headV * T * F32, [qPermuted, kCache, vCache, inputs.mask], 'fa');
    out = g.view(fa, `attn${layer.headCount * headV}x${T}`);
  } else {
    const kq = g.op(cells * T * layer.headCount * F32, [g.external, qPermuted], 'kq');
    const softmax = g.op(kq.bytes, [kq, inputs.mask], 'kq', { inplace: true });
    const kqv = g.op(layer.headCount * headV * T * F32, [g.external, softmax], 'kqv');
    out = g.op(kqv.bytes, [g.view(kqv, 'kqv-permuted')], `attn${layer.headCount * headV}x${T}`);
  }
  out = rotate(out, inputs.vRot);
  return g.op(x.bytes, [g.external, out], x.layout);
}

/** rope over Q or K viewed per head: in place. */
function rope(g: ComputeGraph, x: GraphTensor, bytes: number, pos: GraphTensor): GraphTensor {
  const heads = g.view(x, `${x.layout}-heads`);
  return g.op(bytes, [heads, pos], `${x.layout}-heads`, { inplace: true });
}

function denseFfn(g: ComputeGraph, shape: ModelShape, x: GraphTensor, T: number): GraphTensor {
  const ff = shape.feedForwardMax;
  const layout = `f32:${ff}x${T}`;
  if (shape.ffnKind === 'plain') {
    const up = g.op(ff * T * F32, [g.external, x], layout);
    return g.op(x.bytes, [g.external, g.op(up.bytes, [up], layout, { inplace: true })], x.layout);
  }
  if (shape.ffnKind === 'fused') {
    const gateUp = g.op(2 * ff * T * F32, [g.external, x], `f32:${2 * ff}x${T}`);
    const glu = g.op(ff * T * F32, [g.view(gateUp, 'gate'), g.view(gateUp, 'up')], layout);
    return g.op(x.bytes, [g.external, glu], x.layout);
  }
  const gate = g.op(ff * T * F32, [g.external, x], layout);
  const up = g.op(ff * T * F32, [g.external, x], layout);
  const glu = g.op(ff * T * F32, [gate, up], layout);
  return g.op(x.bytes, [g.external, glu], x.layout);
}

function moeBlock(g: ComputeGraph, shape: ModelShape, x: GraphTensor, T: number): GraphTensor {
  const n = shape.expertCount;
  const used = shape.expertUsedCount;
  const ff = shape.expertFeedForward;
  const E = shape.embeddingLength;
  const logits = g.op(n * T * F32, [g.external, x], `f32:${n}x${T}`);
  const probs = g.op(logits.bytes, [logits], `f32:${n}x${T}`, { inplace: true });
  const argsort = g.op(n * T * I32, [probs], `i32:${n}x${T}`);
  const topk = g.view(argsort, 'topk');
  const weights = g.op(used * T * F32, [g.view(probs, 'probs3'), topk], `w${used}x${T}`);
  const x3 = g.view(x, 'x3');
  const gate = g.op(ff * used * T * F32, [g.external, x3, topk], 'exp');
  const up = g.op(ff * used * T * F32, [g.external, x3, topk], 'exp');
  const glu = g.op(ff * used * T * F32, [gate, up], 'exp');
  const down = g.op(E * used * T * F32, [g.external, glu, topk], 'down');
  const weighted = g.op(down.bytes, [down, weights], 'down', { inplace: true });
  let sum = g.op(E * T * F32, [g.view(weighted, 'e0'), g.view(weighted, 'e1')], x.layout);
  for (let i = 2; i < used; i++) sum = g.op(sum.bytes, [sum, g.view(weighted, `e${i}`)], x.layout, { inplace: true });
  return sum;
}
