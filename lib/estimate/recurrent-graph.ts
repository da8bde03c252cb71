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
  const perSeq = T / sequences;

  // the conv history of each sequence (get_rows from the cache), written back after
  const history = g.expand(g.op((convKernel - 1) * convWidth * sequences * F32, [g.external, g.view(inputs.stateCopy, 'main')], 'conv-rows'));
  const zxBCdt = g.op(shape.ssm.inputWidth * T * F32, [g.external, x], 'zxBCdt');
  const z = g.view(zxBCdt, 'z', inner * T * F32);
  const xBC = g.view(zxBCdt, 'xBC', convWidth * T * F32);
  const dt = g.view(zxBCdt, 'dt', shape.ssm.heads * T * F32);
  const convX = g.op((convKernel - 1 + perSeq) * convWidth * sequences * F32, [g.view(history, 'conv3'), g.view(xBC, 'xBC-t')], 'conv-x');
  g.expand(g.view(g.external, 'conv-state', 0, [g.view(convX, 'last-conv'), g.external]));
  let conv = g.op(convWidth * T * F32, [convX, g.external], 'xBC-conv');
  conv = g.op(conv.bytes, [conv, g.external], 'xBC-conv', { inplace: true }); // bias
  conv = g.op(conv.bytes, [conv], 'xBC-conv', { inplace: true }); // silu
  const xs = g.view(conv, 'x', inner * T * F32);
  const dtBiased = g.op(shape.ssm.heads * T * F32, [g.op(shape.ssm.heads * T * F32, [dt], 'dt'), g.external], 'dt', { inplace: true });
  const scan = g.expand(
    g.op((inner * T + state * inner * sequences) * F32, [g.external, xs, dtBiased, g.external, g.view(conv, 'B'), g.view(conv, 'C'), g.view(inputs.stateCopy, 'main')], 'y-states'),
  );
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
