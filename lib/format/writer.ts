import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { ggmlTypeById, ggmlTypeByName, type GgmlType } from './ggml-types.js';
import { alignUp, DEFAULT_ALIGNMENT, isPowerOfTwo, MAX_TENSOR_NAME_BYTES } from './parse.js';
import { FIXED_VALUE_SIZE, valueTypeId, type GgufValueType } from './value-types.js';

type NumberType = 'UINT8' | 'INT8' | 'UINT16' | 'INT16' | 'UINT32' | 'INT32' | 'FLOAT32' | 'FLOAT64';

/** The elements of an ARRAY value: numbers, bigints, booleans, strings, or nested arrays. */
export interface GgufWriteArray {
  arrayType: GgufValueType;
  value: ArrayLike<number | bigint | boolean | string | GgufWriteArray>;
}

/** A metadata value with its GGUF type spelled out, so nothing is guessed. */
export type GgufWriteValue =
  | { type: NumberType; value: number }
  | { type: 'UINT64' | 'INT64'; value: number | bigint }
  | { type: 'BOOL'; value: boolean }
  | { type: 'STRING'; value: string }
  | ({ type: 'ARRAY' } & GgufWriteArray);

export interface GgufWriteTensor {
  name: string;
  /** ggml type name (F32, Q4_K, ...) or id. */
  type: string | number;
  /** ggml order: ne[0] first. */
  shape: readonly number[];
  /** Exactly the tensor's bytes as stored; omitted means zeros (left sparse by writeGgufFile). */
  data?: Uint8Array;
  /**
   * For deliberately invalid test files only: written into the tensor info as given, unchecked,
   * instead of the type's id / the computed data offset.
   */
  forgeTypeId?: number;
  forgeOffset?: number | bigint;
  /** For deliberately invalid test files only: write `name` even when the reader rejects it. */
  forgeName?: boolean;
}

export interface GgufWriteSpec {
  /**
   * 3 (the default) or 2, which share one layout; or 1, the first GGUF, whose counts, lengths and
   * tensor dimensions are uint32.
   */
  version?: 1 | 2 | 3;
  endian?: 'little' | 'big';
  /**
   * Data alignment, a power of two. Written as general.alignment unless it is the default (32)
   * or the metadata already holds that key with the same value.
   */
  alignment?: number;
  /** Pairs in file order. */
  metadata?: Iterable<readonly [string, GgufWriteValue]> | Record<string, GgufWriteValue>;
  tensors?: readonly GgufWriteTensor[];
}

/** Where everything goes: the header bytes and each tensor's place in the file. */
export interface GgufWriteLayout {
  header: Uint8Array;
  dataOffset: number;
  /** File offsets of the tensors' bytes, in spec order. */
  tensorOffsets: number[];
  /** Total file size; every tensor is padded to the alignment, the last one too. */
  fileSize: number;
}

/** Encodes a whole GGUF file in memory. */
export function encodeGguf(spec: GgufWriteSpec): Uint8Array {
  const layout = layoutGguf(spec);
  const out = new Uint8Array(layout.fileSize);
  out.set(layout.header);
  (spec.tensors ?? []).forEach((t, i) => {
    if (t.data) out.set(t.data, layout.tensorOffsets[i]!);
  });
  return out;
}

/**
 * Writes a GGUF file to `path`. Tensors without `data` are left as holes, so multi-gigabyte test
 * files cost only their header on disk.
 */
export function writeGgufFile(path: string, spec: GgufWriteSpec): GgufWriteLayout {
  const layout = layoutGguf(spec);
  const fd = openSync(path, 'w');
  try {
    writeAll(fd, layout.header, 0);
    (spec.tensors ?? []).forEach((t, i) => {
      if (t.data) writeAll(fd, t.data, layout.tensorOffsets[i]!);
    });
    ftruncateSync(fd, layout.fileSize);
  } finally {
    closeSync(fd);
  }
  return layout;
}

function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  for (let done = 0; done < bytes.byteLength; ) {
    done += writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
  }
}

export function layoutGguf(spec: GgufWriteSpec): GgufWriteLayout {
  const version = spec.version ?? 3;
  const { alignment, metadata } = resolveAlignment(spec);
  const tensors = spec.tensors ?? [];
  const w = new ByteWriter(spec.endian !== 'big', version >= 2);

  w.bytes(new TextEncoder().encode('GGUF'));
  w.u32(version);
  w.count(tensors.length);
  w.count(metadata.length);
  for (const [key, value] of metadata) {
    w.string(key);
    w.u32(valueTypeId(value.type));
    if (value.type === 'ARRAY') w.array(value);
    else w.scalar(value.type, value.value);
  }

  const tensorOffsets: number[] = [];
  let dataSize = 0;
  const names = new Set<string>();
  for (const t of tensors) {
    if (!t.forgeName) checkTensorName(t.name, names);
    const type = resolveType(t.type);
    const nelements = t.shape.reduce((a, b) => a * b, 1);
    if ((t.shape[0] ?? 1) % type.blockSize !== 0) {
      throw new RangeError(`tensor '${t.name}': ne[0] is not a multiple of the ${type.name} block size`);
    }
    const nbytes = (nelements / type.blockSize) * type.typeSize;
    if (t.data && t.data.byteLength !== nbytes) {
      throw new RangeError(`tensor '${t.name}': data is ${t.data.byteLength} bytes, expected ${nbytes}`);
    }
    w.string(t.name);
    w.u32(t.shape.length);
    for (const ne of t.shape) w.dim(ne);
    w.u32(t.forgeTypeId ?? type.id);
    w.u64(t.forgeOffset ?? dataSize);
    tensorOffsets.push(dataSize);
    dataSize += alignUp(nbytes, alignment);
  }
  const dataOffset = alignUp(w.length, alignment);
  return {
    header: w.finish(),
    dataOffset,
    tensorOffsets: tensorOffsets.map((o) => dataOffset + o),
    fileSize: tensors.length > 0 ? dataOffset + dataSize : w.length,
  };
}

/** What the reader accepts as a tensor name: 1 to 63 UTF-8 bytes, not used before. */
function checkTensorName(name: string, seen: Set<string>): void {
  const length = new TextEncoder().encode(name).length;
  if (length === 0 || length > MAX_TENSOR_NAME_BYTES) throw new RangeError(`tensor name '${name}' is ${length} bytes (1 to ${MAX_TENSOR_NAME_BYTES})`);
  if (seen.has(name)) throw new RangeError(`duplicate tensor name '${name}'`);
  seen.add(name);
}

function resolveType(type: string | number): GgmlType {
  const found = typeof type === 'number' ? ggmlTypeById(type) : ggmlTypeByName(type);
  if (found === undefined || found.removed) throw new RangeError(`not a writable ggml type: ${type}`);
  return found;
}

/**
 * The alignment to lay data out with, and the metadata to write. `spec.alignment` adds the key
 * (unless it is the default); a general.alignment key in the metadata is written as given, and
 * used for the layout when it is a valid UINT32 (an invalid one is for testing readers).
 */
function resolveAlignment(spec: GgufWriteSpec): { alignment: number; metadata: Array<readonly [string, GgufWriteValue]> } {
  const source = spec.metadata;
  const metadata = source === undefined ? [] : Symbol.iterator in source ? [...(source as Iterable<readonly [string, GgufWriteValue]>)] : Object.entries(source);
  const key = metadata.find(([k]) => k === 'general.alignment')?.[1];
  const fromKey = key?.type === 'UINT32' && isPowerOfTwo(key.value) ? key.value : undefined;
  if (spec.alignment === undefined) return { alignment: fromKey ?? DEFAULT_ALIGNMENT, metadata };
  if (!isPowerOfTwo(spec.alignment)) throw new RangeError(`alignment ${spec.alignment} is not a power of two`);
  if (key !== undefined && fromKey !== spec.alignment) {
    throw new RangeError(`general.alignment in the metadata differs from alignment ${spec.alignment}`);
  }
  if (key === undefined && spec.alignment !== DEFAULT_ALIGNMENT) {
    metadata.push(['general.alignment', { type: 'UINT32', value: spec.alignment }]);
  }
  return { alignment: spec.alignment, metadata };
}

/** Appends numbers in one byte order and strings as raw UTF-8, growing as needed. */
class ByteWriter {
  private buf = new Uint8Array(1024);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private readonly encoder = new TextEncoder();

  constructor(
    private readonly le: boolean,
    /** v2 and later: uint64 counts, lengths and dimensions; v1: uint32. */
    private readonly wide: boolean,
  ) {}

  finish(): Uint8Array {
    return this.buf.slice(0, this.length);
  }

  private reserve(n: number): number {
    if (this.length + n > this.buf.length) {
      const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
      next.set(this.buf.subarray(0, this.length));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }

  /** Reserves `n` bytes; `pos` is where they start. Returns the (possibly regrown) view. */
  private at(n: number): DataView {
    this.pos = this.reserve(n);
    return this.view;
  }
  private pos = 0;

  bytes(b: Uint8Array): void {
    const at = this.reserve(b.byteLength); // may regrow this.buf
    this.buf.set(b, at);
  }
  u32(v: number): void {
    this.at(4).setUint32(this.pos, v, this.le);
  }
  u64(v: number | bigint): void {
    this.at(8).setBigUint64(this.pos, BigInt(v), this.le);
  }
  i64(v: number | bigint): void {
    this.at(8).setBigInt64(this.pos, BigInt(v), this.le);
  }
  count(n: number): void {
    if (this.wide) this.u64(n);
    else this.u32(n);
  }
  dim(ne: number): void {
    if (this.wide) this.i64(ne);
    else this.u32(ne);
  }
  string(s: string): void {
    const encoded = this.encoder.encode(s);
    this.count(encoded.byteLength);
    this.bytes(encoded);
  }

  scalar(type: GgufValueType, v: unknown): void {
    checkRange(type, v);
    const size = FIXED_VALUE_SIZE[type];
    const view = size === undefined ? this.view : this.at(size);
    const at = this.pos;
    const le = this.le;
    switch (type) {
      case 'UINT8': return view.setUint8(at, v as number);
      case 'INT8': return view.setInt8(at, v as number);
      case 'UINT16': return view.setUint16(at, v as number, le);
      case 'INT16': return view.setInt16(at, v as number, le);
      case 'UINT32': return view.setUint32(at, v as number, le);
      case 'INT32': return view.setInt32(at, v as number, le);
      case 'FLOAT32': return view.setFloat32(at, v as number, le);
      case 'FLOAT64': return view.setFloat64(at, v as number, le);
      case 'UINT64': return view.setBigUint64(at, BigInt(v as number | bigint), le);
      case 'INT64': return view.setBigInt64(at, BigInt(v as number | bigint), le);
      case 'BOOL': return view.setUint8(at, v ? 1 : 0);
      case 'STRING': return this.string(v as string);
      case 'ARRAY': return this.array(v as GgufWriteArray);
    }
  }

  array(a: GgufWriteArray): void {
    this.u32(valueTypeId(a.arrayType));
    this.count(a.value.length);
    for (let i = 0; i < a.value.length; i++) this.scalar(a.arrayType, a.value[i]);
  }
}

/** The integer value types' ranges (what the writer accepts, and the CLI's --set checks). */
export const INTEGER_RANGES: Partial<Record<GgufValueType, readonly [number, number]>> = {
  UINT8: [0, 255],
  INT8: [-128, 127],
  UINT16: [0, 65535],
  INT16: [-32768, 32767],
  UINT32: [0, 4294967295],
  INT32: [-2147483648, 2147483647],
};
const BIG_RANGES: Partial<Record<GgufValueType, readonly [bigint, bigint]>> = {
  UINT64: [0n, 2n ** 64n - 1n],
  INT64: [-(2n ** 63n), 2n ** 63n - 1n],
};

/**
 * A number the type cannot hold is a RangeError: DataView's setters would wrap it (UINT32 -1 is
 * 4294967295), cut it (1.5 is 1) or round it to Infinity (FLOAT32 1e40) without a word.
 */
function checkRange(type: GgufValueType, v: unknown): void {
  const ints = INTEGER_RANGES[type];
  if (ints !== undefined) {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < ints[0] || v > ints[1]) throw new RangeError(`${String(v)} is not a ${type} (an integer from ${ints[0]} to ${ints[1]})`);
    return;
  }
  const bigs = BIG_RANGES[type];
  if (bigs !== undefined) {
    if (typeof v === 'number' && !Number.isSafeInteger(v)) throw new RangeError(`${String(v)} is not a ${type} (give a bigint beyond 2^53)`);
    if (typeof v !== 'number' && typeof v !== 'bigint') throw new RangeError(`${String(v)} is not a ${type}`);
    const b = BigInt(v);
    if (b < bigs[0] || b > bigs[1]) throw new RangeError(`${String(v)} is not a ${type} (from ${bigs[0]} to ${bigs[1]})`);
    return;
  }
  if (type === 'FLOAT32' || type === 'FLOAT64') {
    if (typeof v !== 'number') throw new RangeError(`${String(v)} is not a ${type}`);
    if (type === 'FLOAT32' && Number.isFinite(v) && !Number.isFinite(Math.fround(v))) throw new RangeError(`${v} is beyond FLOAT32's range (it would be written as Infinity)`);
  }
}
