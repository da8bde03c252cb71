// The README's examples as a consumer writes them: compiled under `strict` with no casts by
// scripts/package-test.sh against the installed package (and by `npm test` against lib/).
import { openGguf, type ExpertHyperparameters, type GgmlTypeName, type ModelHyperparameters, type PerBlock, type RecurrentStateSize, type SsmHyperparameters } from 'gguf-mmap';

export function example(path: string): number {
  using model = openGguf(path);
  const blocks: number = model.metadata.getNumber('llama.block_count') ?? 0;
  const arch: string | undefined = model.metadata.getString('general.architecture');
  const token: string | undefined = model.metadata.array('tokenizer.ggml.tokens')?.at(1)?.toString();

  const norm = model.tensor('output_norm.weight');
  const doubled = norm ? norm.f32()[0]! * 2 : 0;
  const embd = model.tensor('token_embd.weight');
  const type: GgmlTypeName | undefined = embd?.type;
  const dmin = embd && type === 'Q4_K' ? embd.blockQ4K(0).dmin : 0;
  const row: Float32Array | undefined = embd?.dequantizeRows(1, 1);
  return blocks + doubled + dmin + (row?.[0] ?? 0) + (arch?.length ?? 0) + (token?.length ?? 0);
}

// The typed hyperparameters: a family's fields exist only where its type says (each assignment
// below compiles only if the field's type is exactly that), reached by narrowing on `family`.
export function hyperparameterFields(h: ModelHyperparameters): number {
  const blocks: number = h.blockCount;
  const kvHeads: PerBlock = h.headCountKv;
  switch (h.family) {
    case 'transformer': {
      const none: undefined = h.ssm;
      const noExperts: undefined = h.experts;
      return blocks + (none ?? 0) + (noExperts ?? 0) + (h.rope?.freqBase ?? 0);
    }
    case 'mixture-of-experts': {
      const experts: ExpertHyperparameters = h.experts;
      const noState: undefined = h.recurrentState;
      return experts.count + (noState ?? 0);
    }
    case 'recurrent': {
      const state: RecurrentStateSize = h.recurrentState;
      const ssm: SsmHyperparameters | undefined = h.ssm;
      const noRope: undefined = h.rope;
      const noWindow: undefined = h.slidingWindow;
      return state.state + (ssm?.stateSize ?? 0) + (noRope ?? 0) + (noWindow ?? 0);
    }
    case 'hybrid': {
      const experts: ExpertHyperparameters | undefined = h.experts;
      return h.recurrentState.convolution + (experts?.count ?? 0) + (typeof kvHeads === 'number' ? kvHeads : kvHeads.length);
    }
  }
}

export function hyperparameterErrors(h: ModelHyperparameters): number {
  // @ts-expect-error: not every family has experts
  const experts: ExpertHyperparameters = h.experts;
  // @ts-expect-error: not every family has recurrent state
  const state: RecurrentStateSize = h.recurrentState;
  if (h.family === 'transformer') {
    // @ts-expect-error: a transformer has no SSM
    return h.ssm.stateSize + experts.count + state.state;
  }
  return 0;
}
