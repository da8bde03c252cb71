import { assetPath, readAsset } from '#platform/assets';

/**
 * ggml's lookup tables for the IQ, IQ4 and FP4 types, shipped as raw little-endian files in
 * data/tables (copied from ggml's ggml-common.h; a test checks each against ggml's sha256). Grid
 * entries are 8 (or 4) one-byte element values, so every table is read as bytes.
 */
export const TABLE_FILES = {
  kmask_iq2xs: 'kmask_iq2xs.u8.bin',
  ksigns_iq2xs: 'ksigns_iq2xs.u8.bin',
  iq2xxs_grid: 'iq2xxs_grid.u64.bin',
  iq2xs_grid: 'iq2xs_grid.u64.bin',
  iq2s_grid: 'iq2s_grid.u64.bin',
  iq3xxs_grid: 'iq3xxs_grid.u32.bin',
  iq3s_grid: 'iq3s_grid.u32.bin',
  iq1s_grid: 'iq1s_grid.u64.bin',
  kvalues_iq4nl: 'kvalues_iq4nl.i8.bin',
  kvalues_fp4: 'kvalues_fp4.i8.bin',
} as const;

export type TableName = keyof typeof TABLE_FILES;

/** The tables the C++ kernels read, native and WebAssembly (kmask_iq2xs is folded into their code). */
export const KERNEL_TABLES: readonly TableName[] = ['kvalues_iq4nl', 'kvalues_fp4', 'ksigns_iq2xs', 'iq2xxs_grid', 'iq2xs_grid', 'iq2s_grid', 'iq3xxs_grid', 'iq3s_grid', 'iq1s_grid'];

const loaded = new Map<TableName, Uint8Array>();

export function tablePath(name: TableName): string {
  return assetPath(`data/tables/${TABLE_FILES[name]}`);
}

/** A table's bytes, read once. */
export function tableBytes(name: TableName): Uint8Array {
  let bytes = loaded.get(name);
  if (bytes === undefined) {
    bytes = readAsset(`data/tables/${TABLE_FILES[name]}`);
    if (bytes === undefined) throw new Error(`gguf-mmap: ${tablePath(name)} is missing`);
    loaded.set(name, bytes);
  }
  return bytes;
}

/** A table of signed bytes (iq1s_grid, kvalues_*). */
export function tableInt8(name: TableName): Int8Array {
  const bytes = tableBytes(name);
  return new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
