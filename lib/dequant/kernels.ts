import type { BlockKernel } from './kernel.js';
import { dequantIQ1_M, dequantIQ1_S, dequantIQ2_S, dequantIQ2_XS, dequantIQ2_XXS, dequantIQ3_S, dequantIQ3_XXS, dequantIQ4_NL, dequantIQ4_XS } from './iq-quants.js';
import { dequantQ2_K, dequantQ3_K, dequantQ4_K, dequantQ5_K, dequantQ6_K, dequantQ8_K } from './k-quants.js';
import { dequantMXFP4, dequantNVFP4, dequantQ1_0, dequantQ2_0, dequantQ4_0, dequantQ4_1, dequantQ5_0, dequantQ5_1, dequantQ8_0 } from './legacy-quants.js';
import { convertBF16, convertF16, convertF32, convertF64, convertI16, convertI32, convertI8 } from './plain-types.js';
import { dequantTQ1_0, dequantTQ2_0 } from './ternary-quants.js';

/**
 * The TypeScript dequantizer of every ggml type that has one, by ggml type name. Missing on
 * purpose: Q8_1 (ggml has no dequantizer; it is an activation format), I64 (no float conversion in
 * ggml), and the removed ids.
 */
export const TS_KERNELS: Readonly<Record<string, BlockKernel>> = {
  F32: convertF32,
  F16: convertF16,
  BF16: convertBF16,
  F64: convertF64,
  I8: convertI8,
  I16: convertI16,
  I32: convertI32,
  Q4_0: dequantQ4_0,
  Q4_1: dequantQ4_1,
  Q5_0: dequantQ5_0,
  Q5_1: dequantQ5_1,
  Q8_0: dequantQ8_0,
  Q1_0: dequantQ1_0,
  Q2_0: dequantQ2_0,
  MXFP4: dequantMXFP4,
  NVFP4: dequantNVFP4,
  Q2_K: dequantQ2_K,
  Q3_K: dequantQ3_K,
  Q4_K: dequantQ4_K,
  Q5_K: dequantQ5_K,
  Q6_K: dequantQ6_K,
  Q8_K: dequantQ8_K,
  IQ2_XXS: dequantIQ2_XXS,
  IQ2_XS: dequantIQ2_XS,
  IQ2_S: dequantIQ2_S,
  IQ3_XXS: dequantIQ3_XXS,
  IQ3_S: dequantIQ3_S,
  IQ1_S: dequantIQ1_S,
  IQ1_M: dequantIQ1_M,
  IQ4_NL: dequantIQ4_NL,
  IQ4_XS: dequantIQ4_XS,
  TQ1_0: dequantTQ1_0,
  TQ2_0: dequantTQ2_0,
};
