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
 * instead of being read from the mapped file. AMX (amxSize) is tried first.
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

/**
 * Intel AMX (ggml-cpu's amx/: CPUs with `amx_int8` and `avx512_vnni`) comes before the repack
 * buffer: a 2-D MUL_MAT weight of these types, rows a multiple of 32 and columns of the block
 * alignment, goes to the AMX buffer, re-laid-out as row blocks with per-block extras
 * (mmq.cpp's get_row_size), so its size changes.
 */
const AMX_TYPES: Readonly<Record<string, { align: number; block: number; bytes: number; extra: number } | undefined>> = {
  Q4_0: { align: 32, block: 32, bytes: 18, extra: 0 },
  Q4_1: { align: 32, block: 32, bytes: 20, extra: 0 },
  Q8_0: { align: 32, block: 32, bytes: 34, extra: 4 },
  Q4_K: { align: 256, block: 256, bytes: 144, extra: 4 },
  Q5_K: { align: 256, block: 256, bytes: 176, extra: 4 },
  Q6_K: { align: 256, block: 256, bytes: 210, extra: 0 },
  IQ4_XS: { align: 256, block: 256, bytes: 136, extra: 2 },
  // F16 goes to the AMX buffer too, unchanged in size
  F16: { align: 16, block: 1, bytes: 2, extra: 0 },
};

/** The AMX buffer's size for the tensor, or undefined when it does not go there. */
export function amxSize(type: string, columns: number, rows: number, features: ReadonlySet<string>): number | undefined {
  if (!features.has('amx_int8') || !features.has('avx512_vnni')) return undefined;
  const rule = AMX_TYPES[type];
  if (rule === undefined || rows % 32 !== 0 || columns % rule.align !== 0) return undefined;
  const blocks = columns / rule.block;
  return rows * blocks * (rule.bytes + rule.extra);
}

/** Input-layer tensors read with GET_ROWS (never a matrix multiplication, so never repacked). */
const LOOKUP_TENSORS = /^(token_embd|position_embd|token_types|per_layer_token_embd)\.weight$|\.(attn_compressor_ape)\.weight$/;

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
  /** Tensors repacked, by target layout ('amx' for the AMX buffer). */
  readonly repackedByLayout: Readonly<Record<string, number>>;
  /** Of `repacked`, the bytes in the AMX buffer (0 without AMX). */
  readonly amx: number;
}

interface Placement {
  readonly size: number;
  readonly layout: string | undefined;
  readonly amx: boolean;
}

/** Where llama.cpp puts a weight (its first buffer type that supports the weight's op) and its size there. */
function place(tensor: GgufTensor, matmul: boolean, features: ReadonlySet<string>): Placement {
  const size = alignUp(tensor.nbytes, TENSOR_ALIGNMENT);
  if (!matmul) return { size, layout: undefined, amx: false };
  if (tensor.shape.length === 2) {
    const amx = amxSize(tensor.type, tensor.shape[0]!, tensor.shape[1]!, features);
    if (amx !== undefined) return { size: alignUp(amx, TENSOR_ALIGNMENT), layout: 'amx', amx: true };
  }
  return { size, layout: repackLayout(tensor.type, tensor.shape[1]!, features), amx: false };
}

export function estimateWeights(file: GgufFile, features: ReadonlySet<string>): WeightsEstimate {
  let total = 0;
  let repacked = 0;
  let amx = 0;
  const byLayout: Record<string, number> = {};
  const add = (p: Placement) => {
    total += p.size;
    if (p.layout === undefined) return;
    repacked += p.size;
    if (p.amx) amx += p.size;
    byLayout[p.layout] = (byLayout[p.layout] ?? 0) + 1;
  };
  const firstSkipped = firstSkippedBlock(file);
  for (const tensor of file.tensors) {
    if (firstSkipped !== undefined && blockOf(tensor.name) >= firstSkipped) continue;
    add(place(tensor, isMatmulWeight(tensor), features));
  }
  // A model without output.weight multiplies by token_embd: llama.cpp creates the output copy in
  // the output layer's buffer type, a second tensor when that is the repack buffer.
  const embedding = file.tensor('token_embd.weight');
  if (embedding !== undefined && file.tensor('output.weight') === undefined && embedding.shape.length === 2) {
    const output = place(embedding, true, features);
    if (output.layout !== undefined) add(output);
  }
  return { total, repacked, repackedByLayout: byLayout, amx };
}

/** A tensor llama.cpp leaves unloaded (see firstSkippedBlock). */
export function skippedTensor(file: GgufFile): (tensor: GgufTensor) => boolean {
  const firstSkipped = firstSkippedBlock(file);
  return (tensor) => firstSkipped !== undefined && blockOf(tensor.name) >= firstSkipped;
}

const blockOf = (name: string): number => {
  const m = /^blk\.(\d+)\./.exec(name);
  return m === null ? -1 : Number(m[1]);
};

/**
 * The first NextN (MTP) block whose tensors llama.cpp leaves unloaded (TENSOR_SKIP without
 * load_mtp, its default): DeepSeek 4's, when the file has them (its loader checks for the first
 * one's nextn.eh_proj). Other architectures with NextN blocks are counted whole (unchecked).
 */
function firstSkippedBlock(file: GgufFile): number | undefined {
  const arch = file.metadata.getString('general.architecture');
  if (arch !== 'deepseek4') return undefined;
  const blocks = Number(file.metadata.get(`${arch}.block_count`) ?? 0);
  const nextn = Number(file.metadata.get(`${arch}.nextn_predict_layers`) ?? 0);
  if (!(nextn > 0 && nextn <= blocks)) return undefined;
  return file.tensor(`blk.${blocks - nextn}.nextn.eh_proj.weight`) === undefined ? undefined : blocks - nextn;
}
