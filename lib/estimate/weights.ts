import type { GgufFile } from '../file/gguf-file.js';
import type { GgufTensor } from '../file/tensor.js';

/** ggml-cpu's tensor alignment: every tensor in a CPU buffer starts on a 32-byte boundary. */
export const TENSOR_ALIGNMENT = 32;

export function alignUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}

/**
 * Which interleaved layout ggml-cpu's repack.cpp (ggml_repack_get_optimal_repack_type) picks for a
 * weight of this type and row count on a CPU with these features, or undefined when it stays as
 * is. The repacked copy has the same byte size; it lives in anonymous memory (buffer CPU_REPACK)
 * instead of being read from the mapped file.
 */
export function repackLayout(type: string, rows: number, features: ReadonlySet<string>): string | undefined {
  const avx2 = features.has('avx2');
  const avx512 = features.has('avx512f');
  const neon = features.has('asimd') || features.has('neon');
  const dotprod = neon && (features.has('asimddp') || features.has('dotprod'));
  const i8mm = neon && features.has('i8mm');
  const by = (n: number) => rows % n === 0;
  switch (type) {
    case 'Q4_0':
      if (avx2 && by(8)) return 'q4_0_8x8';
      if (i8mm && by(4)) return 'q4_0_4x8';
      if (dotprod && by(4)) return 'q4_0_4x4';
      return undefined;
    case 'Q4_K':
      if ((avx2 || i8mm) && by(8)) return 'q4_K_8x8';
      if (dotprod && by(8)) return 'q4_K_8x4';
      return undefined;
    case 'Q5_K':
      if (i8mm && by(8)) return 'q5_K_8x8';
      if (dotprod && by(8)) return 'q5_K_8x4';
      return undefined;
    case 'Q6_K':
      if (i8mm && by(8)) return 'q6_K_8x8';
      if (dotprod && by(8)) return 'q6_K_8x4';
      return undefined;
    case 'Q2_K':
      return avx512 && by(8) ? 'q2_K_8x8' : undefined;
    case 'IQ4_NL':
      if (avx2 && by(8)) return 'iq4_nl_8x8';
      if (dotprod && by(4)) return 'iq4_nl_4x4';
      return undefined;
    case 'MXFP4':
      if (avx2 && by(8)) return 'mxfp4_8x8';
      if (dotprod && by(4)) return 'mxfp4_4x4';
      return undefined;
    case 'Q8_0':
      if (i8mm && by(4)) return 'q8_0_4x8';
      if (dotprod && by(4)) return 'q8_0_4x4';
      return undefined;
    case 'Q1_0':
      if (i8mm && by(4)) return 'q1_0_4x8';
      if (dotprod && by(4)) return 'q1_0_4x4';
      return undefined;
    default:
      return undefined;
  }
}

/** Input-layer tensors read with GET_ROWS (never a matrix multiplication, so never repacked). */
const LOOKUP_TENSORS = /^(token_embd|pos_embd|token_types|per_layer_token_embd)\.weight$|\.(attn_compressor_ape)\.weight$/;

/**
 * A weight llama.cpp multiplies with MUL_MAT (2-D) or MUL_MAT_ID (3-D experts): only those may go
 * to the repack buffer (its supports_op).
 */
function isMatmulWeight(tensor: GgufTensor): boolean {
  if (!tensor.name.endsWith('.weight') || LOOKUP_TENSORS.test(tensor.name)) return false;
  const dims = tensor.shape.length;
  if (dims === 2) return tensor.shape[1]! > 1;
  return dims === 3 && tensor.name.includes('_exps');
}

export interface WeightsEstimate {
  /** All of the model's buffers (llama.cpp's `model` line), bytes. */
  readonly total: number;
  /** The part repacked into CPU_REPACK (anonymous memory beside the mapping), bytes. */
  readonly repacked: number;
  /** Tensors repacked, by target layout. */
  readonly repackedByLayout: Readonly<Record<string, number>>;
}

export function estimateWeights(file: GgufFile, features: ReadonlySet<string>): WeightsEstimate {
  let total = 0;
  let repacked = 0;
  const byLayout: Record<string, number> = {};
  for (const tensor of file.tensors) {
    const size = alignUp(tensor.nbytes, TENSOR_ALIGNMENT);
    total += size;
    const layout = isMatmulWeight(tensor) ? repackLayout(tensor.type, tensor.shape[1]!, features) : undefined;
    if (layout !== undefined) {
      repacked += size;
      byLayout[layout] = (byLayout[layout] ?? 0) + 1;
    }
  }
  // A model without output.weight multiplies by token_embd: llama.cpp creates the output copy in
  // the output layer's buffer type, a second tensor when that is the repack buffer.
  const embedding = file.tensor('token_embd.weight');
  if (embedding !== undefined && file.tensor('output.weight') === undefined && embedding.shape.length === 2) {
    const layout = repackLayout(embedding.type, embedding.shape[1]!, features);
    if (layout !== undefined) {
      const size = alignUp(embedding.nbytes, TENSOR_ALIGNMENT);
      total += size;
      repacked += size;
      byLayout[layout] = (byLayout[layout] ?? 0) + 1;
    }
  }
  return { total, repacked, repackedByLayout: byLayout };
}
