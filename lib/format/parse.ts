import { Cursor, decodeUtf8 } from './cursor.js';
import { nativeTensorInfoWalk, walkStrings } from '#platform/native';
import { GgufError } from '../errors.js';
import { ggmlTypeById } from './ggml-types.js';
import { NameIndex } from './name-index.js';
import { TensorTable } from './tensor-table.js';
import { FIXED_VALUE_SIZE, GGUF_VALUE_TYPES, type GgufValueType } from './value-types.js';

/** A decoded scalar metadata value. 64-bit integers are bigint only beyond 2^53. */
export type GgufScalar = number | bigint | boolean | string;

/** Where an array's elements lie; they are decoded only when asked for. */
export interface ArrayRecord {
  readonly elementType: GgufValueType;
  readonly length: number;
  /** File offset of the first element (after the element type and count). */
  readonly dataOffset: number;
  /** Bytes of all elements; for STRING arrays this includes each string's length field. */
  readonly dataBytes: number;
}

export interface KvRecord {
  readonly key: string;
  readonly type: GgufValueType;
  /** File offset of the pair, at its key length field. */
  readonly offset: number;
  /** Scalars and strings are decoded at open; arrays are not. */
  readonly value: GgufScalar | undefined;
  readonly array: ArrayRecord | undefined;
}

export interface GgufLayout {
  readonly version: number;
  readonly littleEndian: boolean;
  readonly alignment: number;
  /** File offset where the tensor infos end. */
  readonly headerEnd: number;
  /** File offset of the data section: headerEnd rounded up to the alignment. */
  readonly dataOffset: number;
  readonly fileSize: number;
  readonly kvs: readonly KvRecord[];
  readonly tensors: TensorTable;
  /** The longest probe of the duplicate-key check (for tests of hash flooding). */
  readonly keyProbe: number;
}

/**
 * Bounds on what one header may claim, so that opening any file ends in bounded time and memory.
 * Past them opening fails with LIMIT_EXCEEDED; real models are far below the defaults.
 */
export interface ParseLimits {
  /** Tensor infos (default 1,048,576; the largest models have a few thousand). */
  maxTensors?: number;
  /** Metadata keys (default 65,536; models have tens to hundreds). */
  maxKeys?: number;
}

export const DEFAULT_LIMITS: Required<ParseLimits> = { maxTensors: 1 << 20, maxKeys: 1 << 16 };

export const DEFAULT_ALIGNMENT = 32;
export const MAX_DIMS = 4;
/** ggml's GGML_MAX_NAME: a tensor name and its terminating NUL fit in 64 bytes. */
export const MAX_TENSOR_NAME_BYTES = 63;
/** Arrays of arrays deeper than this are rejected rather than recursed into. */
export const MAX_ARRAY_DEPTH = 8;

const MAGIC = [0x47, 0x47, 0x55, 0x46]; // "GGUF"
const INT64_MAX = (1n << 63n) - 1n;

/**
 * Reads the header, metadata and tensor infos of a GGUF file. `view` starts at file offset 0 and
 * may be shorter than the file (a window of a large mapping); everything read here must lie
 * inside it. Array elements are walked over, not decoded.
 */
export function parseLayout(view: DataView, fileSize: number, limits: ParseLimits = {}): GgufLayout {
  const cur = new Cursor(view, fileSize);
  try {
    return parseFrom(cur, view, fileSize, limits);
  } catch (error) {
    if (error instanceof GgufError && error.code === 'HEADER_TOO_LARGE') {
      // What is left after the string array cut short, guessed from its elements so far: tensor
      // infos (their count is known) and keys after it (a few hundred bytes each at most).
      // Worked out when asked for: only a reader over HTTP asks, and counting the array's strings
      // so far was most of opening a 128k vocabulary past the first window (~5 ms of JS).
      const { arrayEndGuess, tensorsLeft, keysLeft } = cur;
      const at = error.offset;
      estimates.set(error, () => Math.min(fileSize, Math.max(at, arrayEndGuess()) + tensorsLeft * TENSOR_INFO_GUESS + keysLeft * KEY_GUESS));
    }
    throw error;
  }
}

// Bytes of one tensor info and one key-value pair, for guessing a header's length.
const TENSOR_INFO_GUESS = 96;
const KEY_GUESS = 256;
const estimates = new WeakMap<GgufError, number | (() => number)>();

/**
 * For a HEADER_TOO_LARGE from parseLayout: a guess of the whole header's length, from how far the
 * parse got (a string array's elements so far, the tensor infos' count), for a reader that
 * fetches a header in pieces (over HTTP). Undefined for any other error.
 */
export function headerLengthGuess(error: unknown): number | undefined {
  if (!(error instanceof GgufError)) return undefined;
  let guess = estimates.get(error);
  if (typeof guess === 'function') estimates.set(error, (guess = guess()));
  return guess;
}

function parseFrom(cur: Cursor, view: DataView, fileSize: number, limits: ParseLimits): GgufLayout {
  const magicAt = cur.take(4, 'magic');
  const magic = [0, 1, 2, 3].map((i) => view.getUint8(magicAt + i));
  if (magic.some((b, i) => b !== MAGIC[i])) {
    const text = String.fromCharCode(...magic.map((b) => (b >= 0x20 && b < 0x7f ? b : 0x3f)));
    const hint = text === 'FUGG' ? ' (a pre-release GGUF writer stored the magic byte-swapped)' : '';
    throw new GgufError('BAD_MAGIC', `magic is '${text}', expected 'GGUF'${hint}`, 0);
  }

  const versionAt = cur.pos;
  const raw = cur.u32('version');
  // A version whose low 16 bits are zero was written in the other byte order: v3 big-endian files
  // read 0x03000000 here. Every number after the magic is then byte-swapped.
  if (raw !== 0 && (raw & 0xffff) === 0) cur.littleEndian = false;
  const version = cur.littleEndian ? raw : view.getUint32(versionAt, false);
  if (version < 1 || version > 3) {
    throw new GgufError('BAD_VERSION', `unsupported GGUF version ${version}`, versionAt);
  }
  cur.wideCounts = version >= 2;

  const tensorCountAt = cur.pos;
  const tensorCount = cur.count('tensor count');
  const kvCountAt = cur.pos;
  const kvCount = cur.count('metadata count');
  // Smallest possible kv pair: key length, value type, 1 value byte. Smallest tensor info: name
  // length, n_dims, type, offset. (Empty keys and names are caught later, with their own codes.)
  // Counts that cannot fit are rejected before anything is allocated for them.
  const minKv = cur.countSize + 4 + 1;
  const minTensor = cur.countSize + 4 + 4 + 8;
  if (kvCount * minKv > cur.bytesLeft) {
    throw new GgufError('BAD_COUNT', `metadata count ${kvCount} cannot fit in the file`, kvCountAt);
  }
  if (tensorCount * minTensor + kvCount * minKv > cur.bytesLeft) {
    throw new GgufError('BAD_COUNT', `tensor count ${tensorCount} cannot fit in the file`, tensorCountAt);
  }
  // A header that cannot fit the window it is read through is known from its counts: say so now,
  // with the least it needs as the offset, rather than after walking the window.
  const leastEnd = cur.pos + tensorCount * minTensor + kvCount * minKv;
  if (leastEnd > view.byteLength) {
    throw new GgufError('HEADER_TOO_LARGE', `the header needs at least ${leastEnd} bytes, more than one window holds`, leastEnd);
  }
  cur.tensorsLeft = tensorCount;
  cur.keysLeft = kvCount;
  const maxKeys = limits.maxKeys ?? DEFAULT_LIMITS.maxKeys;
  const maxTensors = limits.maxTensors ?? DEFAULT_LIMITS.maxTensors;
  if (kvCount > maxKeys) throw new GgufError('LIMIT_EXCEEDED', `${kvCount} metadata keys (limits.maxKeys is ${maxKeys})`, kvCountAt);
  if (tensorCount > maxTensors) {
    throw new GgufError('LIMIT_EXCEEDED', `${tensorCount} tensors (limits.maxTensors is ${maxTensors})`, tensorCountAt);
  }

  const header = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  const kvs: KvRecord[] = [];
  // Keys are found by their bytes in the header, through a keyed hash (see name-index.ts).
  const keys = new NameIndex(kvCount, header);
  let alignment = DEFAULT_ALIGNMENT;
  for (let i = 0; i < kvCount; i++) {
    const keyStart = cur.pos + cur.countSize;
    const { kv, keyEnd } = readKv(cur);
    if (keys.add(keyStart, keyEnd) >= 0) throw new GgufError('DUPLICATE_KEY', `duplicate key '${kv.key}'`, kv.offset);
    if (kv.key === 'general.alignment') alignment = checkAlignment(kv);
    kvs.push(kv);
    cur.keysLeft--;
  }

  // Names are at most 63 bytes and lie in the header, which bounds the name store.
  const tensors = new TensorTable(tensorCount, Math.min(tensorCount * MAX_TENSOR_NAME_BYTES, Math.max(0, view.byteLength - cur.pos)));
  readTensorInfos(cur, header, alignment, tensors, tensorCount);

  const headerEnd = cur.pos;
  const dataOffset = alignUp(headerEnd, alignment);
  checkTensorPlacement(tensors, alignment, dataOffset, fileSize);
  return { version, littleEndian: cur.littleEndian, alignment, headerEnd, dataOffset, fileSize, kvs, tensors, keyProbe: keys.longestProbe };
}

export function isPowerOfTwo(n: unknown): n is number {
  return Number.isInteger(n) && (n as number) > 0 && ((n as number) & ((n as number) - 1)) === 0;
}

export function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/** One key-value pair at the cursor, and the file offset where its key's bytes end. */
function readKv(cur: Cursor): { kv: KvRecord; keyEnd: number } {
  const offset = cur.pos;
  const key = cur.string('key', true);
  const keyEnd = cur.pos;
  if (key.length === 0) throw new GgufError('EMPTY_KEY', 'empty metadata key', offset);
  const type = readValueType(cur, 'BAD_VALUE_TYPE', `value type of '${key}'`);
  if (type === 'ARRAY') return { kv: { key, type, offset, value: undefined, array: readArray(cur, 1) }, keyEnd };
  return { kv: { key, type, offset, value: readScalar(cur, type), array: undefined }, keyEnd };
}

function readValueType(cur: Cursor, code: 'BAD_VALUE_TYPE' | 'BAD_ARRAY_TYPE', what: string): GgufValueType {
  const at = cur.pos;
  const id = cur.u32(what);
  const type = GGUF_VALUE_TYPES[id];
  if (type === undefined) throw new GgufError(code, `${what} is ${id}, not a GGUF value type`, at);
  return type;
}

/** Reads one non-array value at the cursor. */
export function readScalar(cur: Cursor, type: GgufValueType): GgufScalar {
  switch (type) {
    case 'UINT8':
      return cur.u8(type);
    case 'INT8':
      return cur.i8(type);
    case 'UINT16':
      return cur.u16(type);
    case 'INT16':
      return cur.i16(type);
    case 'UINT32':
      return cur.u32(type);
    case 'INT32':
      return cur.i32(type);
    case 'FLOAT32':
      return cur.f32(type);
    case 'UINT64':
      return cur.u64(type);
    case 'INT64':
      return cur.i64(type);
    case 'FLOAT64':
      return cur.f64(type);
    case 'BOOL': {
      const at = cur.pos;
      const byte = cur.u8(type);
      if (byte > 1) throw new GgufError('BAD_BOOL', `BOOL value is ${byte}, not 0 or 1`, at);
      return byte === 1;
    }
    case 'STRING':
      return cur.string('string');
    case 'ARRAY':
      throw new Error('readScalar called on an ARRAY');
  }
}

/**
 * Reads an array's element type and count at the cursor, walks over its elements (checking
 * every one fits) and returns where they lie. Used again to step over nested arrays on decode.
 */
export function readArray(cur: Cursor, depth: number): ArrayRecord {
  const typeAt = cur.pos;
  if (depth > MAX_ARRAY_DEPTH) {
    throw new GgufError('NESTING_TOO_DEEP', `arrays nested deeper than ${MAX_ARRAY_DEPTH}`, typeAt);
  }
  const elementType = readValueType(cur, 'BAD_ARRAY_TYPE', 'array element type');
  const countAt = cur.pos;
  const length = cur.count('array length');
  const dataOffset = cur.pos;
  const fixed = FIXED_VALUE_SIZE[elementType];
  // Smallest encoding of one element: its fixed size, a string's length field, or an inner
  // array's type and count.
  const minElement = fixed ?? (elementType === 'STRING' ? cur.countSize : 4 + cur.countSize);
  if (length * minElement > cur.bytesLeft) {
    throw new GgufError('BAD_COUNT', `array of ${length} ${elementType} cannot fit in the file`, countAt);
  }
  if (fixed !== undefined) {
    cur.skip(length * fixed, `${elementType} array`);
  } else if (elementType === 'STRING') {
    skipStrings(cur, length);
  } else {
    for (let i = 0; i < length; i++) readArray(cur, depth + 1);
  }
  return { elementType, length, dataOffset, dataBytes: cur.pos - dataOffset };
}

/**
 * Walks over `count` strings. This is the hot loop of opening a model (tokens and merges are
 * ~100k strings, each length saying where the next starts), so the addon does it; at the first
 * length field that does not fit, the cursor's checked reads run again to report the right error
 * at the right offset.
 */
function skipStrings(cur: Cursor, count: number): void {
  const end = walkStrings(cur.view, cur.pos, count, cur.countSize, cur.littleEndian);
  if (end >= 0) {
    cur.pos = end;
    return;
  }
  const stop = -1 - end;
  const first = cur.pos;
  cur.pos = stop;
  try {
    cur.string('string'); // throws: TRUNCATED, or HEADER_TOO_LARGE past the window
  } catch (error) {
    // Past the window: where the array may end, from the elements walked so far.
    if (error instanceof GgufError && error.code === 'HEADER_TOO_LARGE') {
      const { view, countSize, littleEndian } = cur;
      cur.arrayEndGuess = () => {
        const walked = countStrings(view, first, stop, countSize, littleEndian);
        return walked > 0 ? stop + Math.ceil(((stop - first) / walked) * (count - walked)) : 0;
      };
    }
    throw error;
  }
  throw new Error(`unreachable: string at ${-1 - end} read back as valid`);
}

/** How many strings lie in [from, stop) (a walk that stopped at `stop` checked them). */
function countStrings(view: DataView, from: number, stop: number, width: number, littleEndian: boolean): number {
  // Two 32-bit reads rather than getBigUint64: a BigInt per string made this the larger part of
  // opening a 128k vocabulary past the first window. The walk checked every length.
  const high = littleEndian ? 4 : 0;
  const low = width === 4 ? 0 : 4 - high;
  let n = 0;
  for (let pos = from; pos < stop; n++) {
    const length = width === 4 ? view.getUint32(pos, littleEndian) : view.getUint32(pos + high, littleEndian) * 0x100000000 + view.getUint32(pos + low, littleEndian);
    pos += width + length;
  }
  return n;
}

function checkAlignment(kv: KvRecord): number {
  if (kv.type !== 'UINT32') {
    throw new GgufError('BAD_ALIGNMENT', `general.alignment is ${kv.type}, expected UINT32`, kv.offset);
  }
  const a = kv.value as number;
  if (!isPowerOfTwo(a)) {
    throw new GgufError('BAD_ALIGNMENT', `general.alignment ${a} is not a power of two`, kv.offset);
  }
  return a;
}

let tensorWalk = nativeTensorInfoWalk;

/** For tests: whether the addon's walk of tensor infos is used (else every record is read here). @internal */
export function useNativeTensorWalk(on: boolean): void {
  tensorWalk = on ? nativeTensorInfoWalk : () => undefined;
}

/**
 * Reads `count` tensor infos at the cursor into `table`. The addon walks the records that are
 * plainly valid (native/tensor_info_walk.h says which: a million open in a fraction of the time
 * this reader takes); the first it stops at (a duplicate name among them) is read here with
 * every check, to report it or go on. Either way the first problem in file order is reported.
 */
function readTensorInfos(cur: Cursor, header: Uint8Array, alignment: number, table: TensorTable, count: number): void {
  const walk = count > 0 ? tensorWalk() : undefined;
  const targets = walk === undefined ? undefined : table.walkTargets();
  // After a walk that stopped at once, this many records are read here before walking again
  // (doubling, up to 4096): a file of records the walk never takes costs about what it does here.
  let backoff = 1;
  for (let i = 0; i < count; ) {
    if (targets !== undefined) {
      const [walked, end, nameEnd, probes] = walk!(cur.view, cur.pos, i, count - i, cur.wideCounts, cur.littleEndian, alignment, table.nameBytesUsed, cur.fileSize, targets);
      if (walked > 0) {
        table.acceptWalked(walked, nameEnd, probes);
        i += walked;
        cur.pos = end;
        cur.tensorsLeft -= walked;
        backoff = 1;
        continue;
      }
    }
    const stop = targets === undefined ? count : Math.min(count, i + backoff);
    for (; i < stop; i++) {
      readTensorInfo(cur, header, alignment, table, i);
      cur.tensorsLeft--;
    }
    backoff = Math.min(backoff * 2, 4096);
  }
}

/** Reads tensor info `i` at the cursor into `table`, checking it as ggml's gguf.cpp does. */
function readTensorInfo(cur: Cursor, header: Uint8Array, alignment: number, table: TensorTable, i: number): void {
  // The common path allocates nothing: a million tensor infos must open in well under a second.
  const infoOffset = cur.pos;
  readTensorName(cur, header, table, i);

  const dimsAt = cur.pos;
  const nDims = cur.u32('n_dims');
  if (nDims > MAX_DIMS) throw new GgufError('BAD_DIMS', `tensor '${table.name(i)}' has ${nDims} dimensions (at most ${MAX_DIMS})`, dimsAt);
  // Numbers while every dimension and the running product are safe integers (every real
  // tensor), BigInt beyond, so that huge shapes are still checked exactly.
  let product: number | bigint = 1;
  let ne0: number | bigint = 1;
  for (let d = 0; d < nDims; d++) {
    const at = cur.pos;
    // v1 stores dimensions as uint32, later versions as int64.
    const ne = cur.wideCounts ? cur.i64('dimension') : cur.u32('dimension');
    if (ne < 0) throw new GgufError('BAD_SHAPE', `tensor '${table.name(i)}' has negative dimension ${ne}`, at);
    if (typeof product === 'number' && typeof ne === 'number' && product * ne <= Number.MAX_SAFE_INTEGER) {
      product *= ne;
    } else {
      product = BigInt(product) * BigInt(ne);
      if (product > INT64_MAX) throw new GgufError('BAD_SHAPE', `tensor '${table.name(i)}' has more than 2^63 elements`, at);
    }
    if (d === 0) ne0 = ne;
    table.setDim(i, d, Number(ne));
  }

  const typeAt = cur.pos;
  const typeId = cur.u32('tensor type');
  const type = ggmlTypeById(typeId);
  if (type === undefined) throw new GgufError('UNKNOWN_TENSOR_TYPE', `tensor '${table.name(i)}' has unknown type id ${typeId}`, typeAt);
  if (type.removed) throw new GgufError('REMOVED_TENSOR_TYPE', `tensor '${table.name(i)}' has removed type ${type.name} (id ${typeId})`, typeAt);
  // Exact, on the integer as stored: 2^53 + 1 must not round to a multiple.
  if (typeof ne0 === 'number' ? ne0 % type.blockSize !== 0 : ne0 % BigInt(type.blockSize) !== 0n) {
    throw new GgufError('BAD_SHAPE', `tensor '${table.name(i)}': ne[0] = ${ne0} is not a multiple of the ${type.name} block size ${type.blockSize}`, dimsAt);
  }
  const nbytes =
    typeof product === 'number' && (product / type.blockSize) * type.typeSize <= Number.MAX_SAFE_INTEGER
      ? (product / type.blockSize) * type.typeSize
      : (BigInt(product) / BigInt(type.blockSize)) * BigInt(type.typeSize);
  if (nbytes > INT64_MAX) throw new GgufError('BAD_SHAPE', `tensor '${table.name(i)}' is more than 2^63 bytes`, dimsAt);

  const offsetAt = cur.pos;
  const offset = cur.u64('tensor offset');
  // Alignment first, on the exact value (as ggml checks it), then whether it can lie in the file.
  if (typeof offset === 'bigint' ? offset % BigInt(alignment) !== 0n : offset % alignment !== 0) {
    throw new GgufError('BAD_TENSOR_OFFSET', `tensor '${table.name(i)}' offset ${offset} is not a multiple of the alignment ${alignment}`, offsetAt);
  }
  if (typeof offset === 'bigint' || typeof nbytes === 'bigint') {
    throw new GgufError('TENSOR_OUT_OF_BOUNDS', `tensor '${table.name(i)}' lies past the end of the file`, offsetAt);
  }
  table.set(i, typeId, nDims, offset, nbytes, infoOffset);
}

/**
 * Reads tensor `i`'s name at the cursor into `table`: 1 to 63 bytes of valid UTF-8, not a name
 * seen before (checked at once, as ggml does).
 */
function readTensorName(cur: Cursor, header: Uint8Array, table: TensorTable, i: number): void {
  const infoOffset = cur.pos;
  const length = cur.count('tensor name length', 'BAD_TENSOR_NAME');
  if (length > MAX_TENSOR_NAME_BYTES) {
    throw new GgufError('BAD_TENSOR_NAME', `tensor name of ${length} bytes (at most ${MAX_TENSOR_NAME_BYTES})`, infoOffset);
  }
  if (length === 0) throw new GgufError('BAD_TENSOR_NAME', 'empty tensor name', infoOffset);
  const at = cur.take(length, 'tensor name');
  const earlier = table.addName(header, at, length);
  if (!table.lastNameAscii) decodeUtf8(cur.view, at, length, true, 'tensor name');
  if (earlier >= 0) throw new GgufError('DUPLICATE_TENSOR', `duplicate tensor '${table.name(earlier)}'`, infoOffset);
}

/**
 * ggml's layout, exactly: each tensor starts where the one before it in file order ends, padded
 * to the alignment (a tensor that starts earlier overlaps it; later leaves a gap ggml rejects);
 * and every tensor's bytes lie inside the file.
 */
function checkTensorPlacement(table: TensorTable, alignment: number, dataOffset: number, fileSize: number): void {
  let expected = 0;
  for (let i = 0; i < table.count; i++) {
    const offset = table.offset(i);
    const nbytes = table.byteLength(i);
    if (offset !== expected) {
      const code = offset < expected ? 'TENSOR_OVERLAP' : 'BAD_TENSOR_OFFSET';
      const why = offset < expected ? 'overlaps the tensor before it' : 'leaves a gap after the tensor before it';
      throw new GgufError(code, `tensor '${table.name(i)}' has data offset ${offset}, expected ${expected} (it ${why})`, table.infoOffset(i));
    }
    if (dataOffset + offset + nbytes > fileSize) {
      throw new GgufError(
        'TENSOR_OUT_OF_BOUNDS',
        `tensor '${table.name(i)}' (${nbytes} bytes at data offset ${offset}) ends past the end of the file (${fileSize} bytes)`,
        table.infoOffset(i),
      );
    }
    expected = alignUp(offset + nbytes, alignment);
  }
}
