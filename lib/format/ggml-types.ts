/**
 * The ggml tensor type table: one row per type id, 0 to 42, in ggml's enum order. This is the
 * only place block sizes and byte sizes live. Removed ids keep a row (blockSize 0) so they can be
 * named in errors; they are never valid tensor types.
 */
export interface GgmlType {
  readonly id: number;
  /** ggml's enum name without the GGML_TYPE_ prefix: F32, Q4_K, IQ4_NL, BF16, ... */
  readonly name: GgmlTypeName;
  /** Elements per block (1 for plain types, 0 for removed ids). */
  readonly blockSize: number;
  /** Bytes per block (0 for removed ids). */
  readonly typeSize: number;
  readonly quantized: boolean;
  readonly removed: boolean;
}

// [name, blockSize, typeSize, quantized]; blockSize 0 marks a removed id.
const ROWS = [
  ['F32', 1, 4, false],
  ['F16', 1, 2, false],
  ['Q4_0', 32, 18, true],
  ['Q4_1', 32, 20, true],
  ['Q4_2', 0, 0, false],
  ['Q4_3', 0, 0, false],
  ['Q5_0', 32, 22, true],
  ['Q5_1', 32, 24, true],
  ['Q8_0', 32, 34, true],
  ['Q8_1', 32, 36, true],
  ['Q2_K', 256, 84, true],
  ['Q3_K', 256, 110, true],
  ['Q4_K', 256, 144, true],
  ['Q5_K', 256, 176, true],
  ['Q6_K', 256, 210, true],
  ['Q8_K', 256, 292, true],
  ['IQ2_XXS', 256, 66, true],
  ['IQ2_XS', 256, 74, true],
  ['IQ3_XXS', 256, 98, true],
  ['IQ1_S', 256, 50, true],
  ['IQ4_NL', 32, 18, true],
  ['IQ3_S', 256, 110, true],
  ['IQ2_S', 256, 82, true],
  ['IQ4_XS', 256, 136, true],
  ['I8', 1, 1, false],
  ['I16', 1, 2, false],
  ['I32', 1, 4, false],
  ['I64', 1, 8, false],
  ['F64', 1, 8, false],
  ['IQ1_M', 256, 56, true],
  ['BF16', 1, 2, false],
  ['Q4_0_4_4', 0, 0, false],
  ['Q4_0_4_8', 0, 0, false],
  ['Q4_0_8_8', 0, 0, false],
  ['TQ1_0', 256, 54, true],
  ['TQ2_0', 256, 66, true],
  ['IQ4_NL_4_4', 0, 0, false],
  ['IQ4_NL_4_8', 0, 0, false],
  ['IQ4_NL_8_8', 0, 0, false],
  ['MXFP4', 32, 17, true],
  ['NVFP4', 64, 36, true],
  ['Q1_0', 128, 18, true],
  ['Q2_0', 64, 18, true],
] as const satisfies ReadonlyArray<readonly [string, number, number, boolean]>;

/** Every ggml type name, as a string-literal union ('F32' | 'F16' | 'Q4_0' | ... | 'Q2_0'). */
export type GgmlTypeName = (typeof ROWS)[number][0];

export const GGML_TYPES: readonly GgmlType[] = Object.freeze(
  ROWS.map(([name, blockSize, typeSize, quantized], id) =>
    Object.freeze({ id, name, blockSize, typeSize, quantized, removed: blockSize === 0 }),
  ),
);

const BY_NAME = new Map(GGML_TYPES.map((t) => [t.name, t]));

/** The type with this id, removed ids included; undefined past the table. */
export function ggmlTypeById(id: number): GgmlType | undefined {
  return GGML_TYPES[id];
}

/** The type with this name (F32, Q4_K, ...), case-sensitive; undefined if there is none. */
export function ggmlTypeByName(name: string): GgmlType | undefined {
  return BY_NAME.get(name as GgmlTypeName);
}
