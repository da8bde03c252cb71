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
  /**
   * The block's fields wider than a byte, as ggml's block structs declare them: `[offset, width,
   * count]` (count fields of width bytes from offset). A file's byte order applies to these (a
   * big-endian file holds them byte-swapped, as gguf-py's converter and ggml on a big-endian host
   * write them); byte arrays read the same in both orders.
   */
  readonly wideFields: readonly WideField[];
}

/** `[offset, width, count]`: count fields of width bytes each, from offset within the block. */
export type WideField = readonly [offset: number, width: 2 | 4 | 8, count: number];

// [name, blockSize, typeSize, quantized, wideFields]; blockSize 0 marks a removed id. The fields
// are those of ggml-common.h's block_* structs declared wider than a byte: ggml_half scales (d, m,
// dmin, s), Q8_K's float d and int16 bsums, IQ2_XXS/IQ2_XS's uint16 qs (after d: 33 in all),
// IQ1_S's uint16 qh, IQ4_XS's uint16 scales_h. IQ1_M, MXFP4 and NVFP4 blocks are bytes only.
const ROWS = [
  ['F32', 1, 4, false, [[0, 4, 1]]],
  ['F16', 1, 2, false, [[0, 2, 1]]],
  ['Q4_0', 32, 18, true, [[0, 2, 1]]],
  ['Q4_1', 32, 20, true, [[0, 2, 2]]],
  ['Q4_2', 0, 0, false, []],
  ['Q4_3', 0, 0, false, []],
  ['Q5_0', 32, 22, true, [[0, 2, 1]]],
  ['Q5_1', 32, 24, true, [[0, 2, 2]]],
  ['Q8_0', 32, 34, true, [[0, 2, 1]]],
  ['Q8_1', 32, 36, true, [[0, 2, 2]]],
  ['Q2_K', 256, 84, true, [[80, 2, 2]]],
  ['Q3_K', 256, 110, true, [[108, 2, 1]]],
  ['Q4_K', 256, 144, true, [[0, 2, 2]]],
  ['Q5_K', 256, 176, true, [[0, 2, 2]]],
  ['Q6_K', 256, 210, true, [[208, 2, 1]]],
  ['Q8_K', 256, 292, true, [[0, 4, 1], [260, 2, 16]]],
  ['IQ2_XXS', 256, 66, true, [[0, 2, 33]]],
  ['IQ2_XS', 256, 74, true, [[0, 2, 33]]],
  ['IQ3_XXS', 256, 98, true, [[0, 2, 1]]],
  ['IQ1_S', 256, 50, true, [[0, 2, 1], [34, 2, 8]]],
  ['IQ4_NL', 32, 18, true, [[0, 2, 1]]],
  ['IQ3_S', 256, 110, true, [[0, 2, 1]]],
  ['IQ2_S', 256, 82, true, [[0, 2, 1]]],
  ['IQ4_XS', 256, 136, true, [[0, 2, 2]]],
  ['I8', 1, 1, false, []],
  ['I16', 1, 2, false, [[0, 2, 1]]],
  ['I32', 1, 4, false, [[0, 4, 1]]],
  ['I64', 1, 8, false, [[0, 8, 1]]],
  ['F64', 1, 8, false, [[0, 8, 1]]],
  ['IQ1_M', 256, 56, true, []],
  ['BF16', 1, 2, false, [[0, 2, 1]]],
  ['Q4_0_4_4', 0, 0, false, []],
  ['Q4_0_4_8', 0, 0, false, []],
  ['Q4_0_8_8', 0, 0, false, []],
  ['TQ1_0', 256, 54, true, [[52, 2, 1]]],
  ['TQ2_0', 256, 66, true, [[64, 2, 1]]],
  ['IQ4_NL_4_4', 0, 0, false, []],
  ['IQ4_NL_4_8', 0, 0, false, []],
  ['IQ4_NL_8_8', 0, 0, false, []],
  ['MXFP4', 32, 17, true, []],
  ['NVFP4', 64, 36, true, []],
  ['Q1_0', 128, 18, true, [[0, 2, 1]]],
  ['Q2_0', 64, 18, true, [[0, 2, 1]]],
] as const satisfies ReadonlyArray<readonly [string, number, number, boolean, readonly WideField[]]>;

/** Every ggml type name, as a string-literal union ('F32' | 'F16' | 'Q4_0' | ... | 'Q2_0'). */
export type GgmlTypeName = (typeof ROWS)[number][0];

export const GGML_TYPES: readonly GgmlType[] = Object.freeze(
  ROWS.map(([name, blockSize, typeSize, quantized, wideFields], id) =>
    Object.freeze({ id, name, blockSize, typeSize, quantized, removed: blockSize === 0, wideFields }),
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
