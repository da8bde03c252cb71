import type { ComputeGraph } from './compute-graph.js';
import type { GraphTensor } from './graph-allocator.js';
import type { ModelShape } from './model-shape.js';

const F32 = 4;

/** The recurrent layers' inputs: the state slots to read (rs_s_copy). */
export interface RecurrentInputs {
  readonly stateCopy: GraphTensor;
}

/**
 * A Mamba-2 mixer as llama.cpp builds it (build_mamba2_layer): the conv state rows read out of
 * the cache, the input projection (z, xBC, dt), xBC after the conv history, the causal conv, the
 * SSM scan (its output and the new states in one tensor), the skip, the gate, the grouped norm and
 * the output projection. `sequences` is the ubatch's sequences; tokens are split evenly among them.
 */
export function mamba2Mixer(g: ComputeGraph, shape: ModelShape, x: GraphTensor, tokens: number, sequences: number, inputs: RecurrentInputs): GraphTensor {
  const { convKernel, inner, state, groups } = shape.ssm;
  const convWidth = inner + 2 * groups * state;
  const T = tokens;
  const zxBCdt = g.op(shape.ssm.inputWidth * T * F32, [g.external, x], 'zxBCdt');
  const z = g.view(zxBCdt, 'z', inner * T * F32);
  const dt = g.view(zxBCdt, 'dt', shape.ssm.heads * T * F32);
  const convX = convInput(g, g.view(zxBCdt, 'xBC', convWidth * T * F32), convWidth, convKernel, T, sequences, inputs);
  g.stateWrite('ssm-state-zero');
  let conv = g.op(convWidth * T * F32, [convX, g.external], 'xBC-conv');
  conv = g.op(conv.bytes, [conv, g.external], 'xBC-conv', { inplace: true }); // bias
  conv = g.op(conv.bytes, [conv], 'xBC-conv', { inplace: true }); // silu
  // x, B and C are strided views of the conv's rows: a copy of one spans its rows
  const span = (width: number) => ((T - 1) * convWidth + width) * F32;
  const xs = g.view(conv, 'x', inner * T * F32, [], span(inner));
  const dtBiased = g.op(shape.ssm.heads * T * F32, [g.op(shape.ssm.heads * T * F32, [dt], 'dt'), g.external], 'dt', { inplace: true });
  const scan = g.expand(
    g.op((inner * T + state * inner * sequences) * F32, [g.cacheView(state * inner * sequences * F32, 'f32', state * inner), xs, dtBiased, g.external, g.view(conv, 'B', conv.bytes, [], span(groups * state)), g.view(conv, 'C', conv.bytes, [], span(groups * state)), g.view(inputs.stateCopy, 'main')], 'y-states'),
  );
  g.stateWrite('ssm-state-extra');
  g.expand(g.view(g.external, 'ssm-state', 0, [g.view(scan, 'states', state * inner * sequences * F32), g.external]));
  const y = g.view(scan, 'y', inner * T * F32);
  const skip = g.op(inner * T * F32, [xs, g.external], 'y');
  let out = g.op(inner * T * F32, [y, skip], 'y', { inplace: true });
  out = g.op(inner * T * F32, [g.op(inner * T * F32, [z], 'z'), out], `y:${inner}x${T}`);
  if (shape.ssm.norm) {
    const grouped = g.view(out, 'y-groups');
    out = g.op(out.bytes, [g.op(out.bytes, [grouped], 'y-groups', { inplace: true }), g.external], 'y-groups', { inplace: true });
  }
  return g.op(x.bytes, [g.external, g.view(out, 'y-rows')], x.layout);
}

/** The conv history read out of the cache and joined with this ubatch's rows (build_rs + concat), its tail written back. */
function convInput(g: ComputeGraph, rows: GraphTensor, channels: number, kernel: number, tokens: number, sequences: number, inputs: RecurrentInputs): GraphTensor {
  // (the state read is a view of the layer's cache: where the layer is, for the GPU's scheduler)
  g.stateWrite('conv-state-zero');
  const history = g.expand(g.op((kernel - 1) * channels * sequences * F32, [g.cacheView((kernel - 1) * channels * sequences * F32, 'f32', (kernel - 1) * channels), g.view(inputs.stateCopy, 'main')], 'conv-rows'));
  g.stateWrite('conv-state-extra');
  const joined = g.op((kernel - 1 + tokens / sequences) * channels * sequences * F32, [g.view(history, 'conv3'), g.view(rows, 'rows-t')], 'conv-x');
  g.expand(g.view(g.external, 'conv-state', 0, [g.view(joined, 'last-conv'), g.external]));
  return joined;
}

/**
 * A gated delta net mixer (Qwen 3.5, Qwen3-Next; build_layer_attn_linear with llama.cpp's fused
 * kernel, which the CPU backend has): the QKV and gate projections, the conv over QKV, Q and K
 * L2-normed, the decay and beta from their own projections, the state rows, one op giving the
 * output and the new state, then the gated norm and the output projection.
 */
export function gatedDeltaNetMixer(g: ComputeGraph, shape: ModelShape, x: GraphTensor, tokens: number, sequences: number, inputs: RecurrentInputs): GraphTensor {
  const { convKernel, inner, state: headK, groups: headsK, heads: headsV } = shape.ssm;
  const headV = inner / headsV;
  const channels = inner + 2 * headsK * headK;
  const T = tokens;
  // Qwen3-Next: Q, K, V and z from one projection (ssm_in), Q, K and V copied out and joined;
  // the projection lives on until z is copied out of it, after the delta net
  const fused = shape.architecture === 'qwen3next';
  const qkvz = fused ? g.op((channels + inner) * T * F32, [g.external, x], 'qkvz') : undefined;
  let qkv: GraphTensor;
  if (qkvz !== undefined) {
    const part = (name: string, width: number) => g.op(width * T * F32, [g.view(qkvz, name)], name);
    const qk = g.op(2 * headsK * headK * T * F32, [part('q-flat', headsK * headK), part('k-flat', headsK * headK)], 'qk');
    qkv = g.op(channels * T * F32, [qk, part('v-flat', inner)], 'qkv');
  } else qkv = g.op(channels * T * F32, [g.external, x], 'qkv');
  const conv = convInput(g, qkv, channels, convKernel, T, sequences, inputs);
  g.stateWrite('ssm-state-zero');
  const states = g.expand(g.op(headV * headV * headsV * sequences * F32, [g.cacheView(headV * headV * headsV * sequences * F32, 'f32', headV * headV * headsV), g.view(inputs.stateCopy, 'main')], 'state-rows'));
  g.stateWrite('ssm-state-extra');
  let mixed = g.op(channels * T * F32, [conv, g.external], 'conv');
  mixed = g.op(mixed.bytes, [mixed], 'conv', { inplace: true }); // silu
  // Q and K viewed out of the conv output, L2-normed into new tensors
  const l2 = (name: string) => {
    const n = g.op(headK * headsK * T * F32, [g.view(mixed, name)], name);
    return g.op(n.bytes, [n], name, { inplace: true });
  };
  const q = l2('q');
  const k = l2('k');
  const v = g.view(mixed, 'v');
  let decay: GraphTensor;
  let beta: GraphTensor;
  if (fused) {
    // beta and alpha from one projection (ssm_ba), each copied out of it
    const ba = g.op(2 * headsV * T * F32, [g.external, x], 'ba');
    const alpha = g.op(headsV * T * F32, [g.view(ba, 'a')], 'alpha');
    decay = g.op(alpha.bytes, [alpha, g.external], 'decay', { inplace: true }); // plus dt bias
    decay = g.op(decay.bytes, [decay], 'decay', { inplace: true }); // softplus
    decay = g.op(decay.bytes, [decay, g.external], 'decay', { inplace: true }); // times A
    const b = g.op(headsV * T * F32, [g.view(ba, 'b')], 'beta');
    beta = g.op(b.bytes, [b], 'beta', { inplace: true }); // sigmoid
  } else {
    const alpha = g.op(headsV * T * F32, [g.external, x], 'alpha');
    decay = g.op(headsV * T * F32, [g.view(alpha, 'alpha3'), g.external], 'decay');
    decay = g.op(decay.bytes, [decay], 'decay', { inplace: true }); // softplus
    decay = g.op(decay.bytes, [decay, g.external], 'decay', { inplace: true }); // times A
    const betaRows = g.op(headsV * T * F32, [g.external, x], 'beta');
    beta = g.op(betaRows.bytes, [g.view(betaRows, 'beta4')], 'beta'); // sigmoid of a view: a new tensor
  }
  const result = g.op((headV * headsV * T + headV * headV * headsV * sequences) * F32, [q, k, v, g.view(decay, 'g4'), beta, g.view(states, 's4')], 'gdn');
  g.expand(g.view(g.external, 'ssm-state', 0, [g.view(result, 'new-state'), g.external]));
  // the gated norm: norm(output) * silu(z)
  const normed = g.op(headV * headsV * T * F32, [g.view(result, 'output')], 'y');
  const weighted = g.op(normed.bytes, [normed, g.external], 'y', { inplace: true });
  const z = qkvz !== undefined ? g.op(inner * T * F32, [g.view(qkvz, 'z')], 'z') : g.op(inner * T * F32, [g.external, x], 'z');
  const gated = g.op(weighted.bytes, [weighted, g.op(z.bytes, [g.view(z, 'z4')], 'y')], 'y', { inplace: true });
  // returned reshaped: a view, which the residual add cannot take over
  return g.view(g.op(x.bytes, [g.external, g.view(gated, 'y-rows')], 'gdn-out'), x.layout);
}

/**
 * LFM2's short convolution (build_shortconv_block): B, C and x from one projection, B*x through a
 * causal conv over the cached history, times C, then the output projection.
 */
export function shortConvMixer(g: ComputeGraph, shape: ModelShape, x: GraphTensor, tokens: number, sequences: number, inputs: RecurrentInputs): GraphTensor {
  const E = shape.embeddingLength;
  const T = tokens;
  const bcx = g.op(3 * E * T * F32, [g.external, x], 'bcx');
  const bx = g.op(E * T * F32, [g.view(bcx, 'b'), g.view(bcx, 'x')], 'bx');
  const joined = convInput(g, bx, E, shape.shortConvCache, T, sequences, inputs);
  const conv = g.op(E * T * F32, [joined, g.external], `y:${E}x${T}`);
  const y = g.op(conv.bytes, [g.view(bcx, 'c'), conv], `y:${E}x${T}`, { inplace: true });
  return g.op(x.bytes, [g.external, y], x.layout);
}

/**
 * A Mamba (1) mixer (build_mamba_layer): x and z from one projection, the causal conv over the
 * cached history, dt, B and C from x (dt projected up to the inner width), the selective scan,
 * the skip, the gate and the output projection. With dt/B/C norms (Falcon-Mamba style) each is
 * normed out of its view; otherwise dt is copied out.
 */
export function mambaMixer(g: ComputeGraph, shape: ModelShape, x: GraphTensor, tokens: number, sequences: number, inputs: RecurrentInputs): GraphTensor {
  const { convKernel, inner, state, heads: dtRank } = shape.ssm;
  const T = tokens;
  const xz = g.op(2 * inner * T * F32, [g.external, x], 'xz');
  const joined = convInput(g, g.view(xz, 'x', inner * T * F32), inner, convKernel, T, sequences, inputs);
  g.stateWrite('ssm-state-zero');
  let xs = g.op(inner * T * F32, [joined, g.external], `y:${inner}x${T}`);
  xs = g.op(xs.bytes, [xs, g.external], xs.layout, { inplace: true }); // bias
  xs = g.op(xs.bytes, [xs], xs.layout, { inplace: true }); // silu
  const xdb = g.op((dtRank + 2 * state) * T * F32, [g.external, xs], 'x_db');
  let dtRows: GraphTensor;
  let B: GraphTensor = g.view(xdb, 'B');
  let C: GraphTensor = g.view(xdb, 'C');
  if (shape.ssm.dtBcNorm) {
    const normed = (v: GraphTensor, width: number) => g.op(width * T * F32, [g.op(width * T * F32, [v], `n${width}`), g.external], `n${width}`, { inplace: true });
    dtRows = normed(g.view(xdb, 'dt'), dtRank);
    B = normed(B, state);
    C = normed(C, state);
  } else {
    dtRows = g.op(dtRank * T * F32, [g.view(xdb, 'dt')], 'dt');
  }
  let dt = g.op(inner * T * F32, [g.external, dtRows], 'dt-up');
  dt = g.op(dt.bytes, [dt, g.external], dt.layout, { inplace: true });
  const scan = g.expand(g.op((inner * T + state * inner * sequences) * F32, [g.cacheView(state * inner * sequences * F32, 'f32', state * inner), g.view(xs, 'x4'), dt, g.external, B, C, g.view(inputs.stateCopy, 'main')], 'y-states'));
  g.stateWrite('ssm-state-extra');
  g.expand(g.view(g.external, 'ssm-state', 0, [g.view(scan, 'states', state * inner * sequences * F32), g.external]));
  // the skip x * D: in place over x, whose scan and projection have read it by then
  const skip = g.op(inner * T * F32, [xs, g.external], xs.layout, { inplace: true });
  const y = g.op(skip.bytes, [g.view(scan, 'y', inner * T * F32), skip], xs.layout, { inplace: true });
  const gated = g.op(inner * T * F32, [g.op(inner * T * F32, [g.view(xz, 'z', inner * T * F32)], 'z'), y], `y:${inner}x${T}`);
  // returned reshaped: a view, which the residual add cannot take over (it takes the residual)
  return g.view(g.op(x.bytes, [g.external, gated], 'mamba-out'), x.layout);
}
