// A GGUF v3 header as ggml's gguf writer lays it out: magic, version, counts, the key-value pairs
// (copied as they were, or encoded here), the tensor infos, zeros up to the alignment.
import { GgufError } from '../errors.js';
import type { GgufLayout, KvRecord } from '../format/parse.js';
import { alignUp } from '../format/parse.js';
import type { ByteSource } from '../file/source.js';
import { valueTypeId, type GgufValueType } from '../format/value-types.js';

const encoder = new TextEncoder();

/** One key-value pair's bytes, as the header holds them. */
export interface KvBytes {
  readonly key: string;
  readonly bytes: Uint8Array;
}

export interface TensorInfo {
  readonly name: string;
  /** ggml order (ne[0] first). */
  readonly shape: readonly number[];
  readonly typeId: number;
  /** Offset within the data section. */
  readonly offset: number;
}

/**
 * The pairs of a parsed header, each as its bytes in the file (so values round-trip bit for bit,
 * NaN payloads included). The file must be GGUF v3 little-endian, as the tools write it.
 */
export function kvBytesOf(source: ByteSource, layout: GgufLayout): KvBytes[] {
  if (layout.version !== 3 || !layout.littleEndian) {
    throw new GgufError('CANNOT_REWRITE', `rewriting needs a GGUF v3 little-endian file, not v${layout.version} ${layout.littleEndian ? 'little' : 'big'}-endian`, 4);
  }
  const end = layout.tensors.count > 0 ? layout.tensors.record(0).infoOffset : layout.headerEnd;
  return layout.kvs.map((kv: KvRecord, i) => {
    const next = layout.kvs[i + 1]?.offset ?? end;
    const { buffer, byteOffset } = source.locate(kv.offset, next - kv.offset);
    return { key: kv.key, bytes: new Uint8Array(buffer, byteOffset, next - kv.offset).slice() };
  });
}

/** A scalar pair encoded (the split keys: UINT16 and INT32). */
export function scalarKv(key: string, type: Extract<GgufValueType, 'UINT16' | 'INT32'>, value: number): KvBytes {
  const name = encoder.encode(key);
  const bytes = new Uint8Array(8 + name.length + 4 + (type === 'UINT16' ? 2 : 4));
  const view = new DataView(bytes.buffer);
  view.setBigUint64(0, BigInt(name.length), true);
  bytes.set(name, 8);
  view.setUint32(8 + name.length, valueTypeId(type), true);
  if (type === 'UINT16') view.setUint16(12 + name.length, value, true);
  else view.setInt32(12 + name.length, value, true);
  return { key, bytes };
}

/** ggml's gguf_set_*: a key set again leaves its place and goes last. */
export function setKv(kvs: KvBytes[], kv: KvBytes): void {
  const at = kvs.findIndex((k) => k.key === kv.key);
  if (at >= 0) kvs.splice(at, 1);
  kvs.push(kv);
}

/** Sets a pair where it is (a new key goes last), as an editor keeps the file's order. */
export function setKvInPlace(kvs: KvBytes[], kv: KvBytes): void {
  const at = kvs.findIndex((k) => k.key === kv.key);
  if (at >= 0) kvs[at] = kv;
  else kvs.push(kv);
}

/** ggml_n_dims: trailing dimensions of 1 are not written (at least one is). */
function writtenDims(shape: readonly number[]): number {
  for (let i = shape.length - 1; i >= 1; i--) if (shape[i]! > 1) return i + 1;
  return 1;
}

/** The tensor infos of a parsed header as their bytes in the file, and how many. */
export interface TensorInfoBytes {
  readonly count: number;
  readonly bytes: Uint8Array;
}

export function tensorInfoBytesOf(source: ByteSource, layout: GgufLayout): TensorInfoBytes {
  const start = layout.tensors.count > 0 ? layout.tensors.record(0).infoOffset : layout.headerEnd;
  const { buffer, byteOffset } = source.locate(start, layout.headerEnd - start);
  return { count: layout.tensors.count, bytes: new Uint8Array(buffer, byteOffset, layout.headerEnd - start).slice() };
}

/** The header's length before its padding. */
export function headerLength(kvs: readonly KvBytes[], tensors: readonly TensorInfo[] | TensorInfoBytes): number {
  let length = 24 + kvs.reduce((n, kv) => n + kv.bytes.length, 0);
  if ('bytes' in tensors) return length + tensors.bytes.length;
  for (const t of tensors) length += 8 + encoder.encode(t.name).length + 4 + 8 * writtenDims(t.shape) + 4 + 8;
  return length;
}

/**
 * The whole header, zero-padded to `alignment`: the pairs, then the tensor infos, encoded from
 * `tensors` or copied as they were.
 */
export function encodeHeader(kvs: readonly KvBytes[], tensors: readonly TensorInfo[] | TensorInfoBytes, alignment: number): Uint8Array {
  const out = new Uint8Array(alignUp(headerLength(kvs, tensors), alignment));
  const view = new DataView(out.buffer);
  out.set(encoder.encode('GGUF'), 0);
  view.setUint32(4, 3, true);
  view.setBigUint64(8, BigInt('bytes' in tensors ? tensors.count : tensors.length), true);
  view.setBigUint64(16, BigInt(kvs.length), true);
  let at = 24;
  for (const kv of kvs) {
    out.set(kv.bytes, at);
    at += kv.bytes.length;
  }
  if ('bytes' in tensors) {
    out.set(tensors.bytes, at);
    return out;
  }
  const names = tensors.map((t) => encoder.encode(t.name));
  tensors.forEach((t, i) => {
    const name = names[i]!;
    view.setBigUint64(at, BigInt(name.length), true);
    out.set(name, at + 8);
    at += 8 + name.length;
    const dims = writtenDims(t.shape);
    view.setUint32(at, dims, true);
    at += 4;
    for (let d = 0; d < dims; d++, at += 8) view.setBigUint64(at, BigInt(t.shape[d] ?? 1), true);
    view.setUint32(at, t.typeId, true);
    view.setBigUint64(at + 4, BigInt(t.offset), true);
    at += 12;
  });
  return out;
}
