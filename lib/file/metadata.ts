import { Cursor } from '../format/cursor.js';
import { elementsAt } from '../format/elements.js';
import { GgufError } from '../errors.js';
import { readArray, readScalar, type ArrayRecord, type GgufScalar, type KvRecord } from '../format/parse.js';
import { FIXED_VALUE_SIZE, type GgufValueType } from '../format/value-types.js';

export type GgufNumericArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array;

/**
 * A decoded metadata value. Numeric arrays are typed arrays (views of the file where byte order
 * and alignment allow); BOOL and STRING arrays are JS arrays; arrays of arrays nest.
 */
export type GgufValue = GgufScalar | GgufNumericArray | boolean[] | string[] | GgufValue[];

/** What is known about a key without decoding its value. */
export interface GgufEntryInfo {
  readonly key: string;
  readonly type: GgufValueType;
  /** For arrays: the element type, the element count, and where the elements lie in the file. */
  readonly arrayType?: GgufValueType;
  readonly length?: number;
  readonly dataOffset?: number;
  readonly dataBytes?: number;
  /** File offset of the pair (its key length field). */
  readonly offset: number;
}

const TYPED_ARRAYS: Partial<Record<GgufValueType, { new (buffer: ArrayBufferLike, byteOffset: number, length: number): GgufNumericArray; new (length: number): GgufNumericArray; readonly BYTES_PER_ELEMENT: number }>> = {
  UINT8: Uint8Array,
  INT8: Int8Array,
  UINT16: Uint16Array,
  INT16: Int16Array,
  UINT32: Uint32Array,
  INT32: Int32Array,
  FLOAT32: Float32Array,
  FLOAT64: Float64Array,
  UINT64: BigUint64Array,
  INT64: BigInt64Array,
};

const INTEGER_TYPES: readonly GgufValueType[] = ['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'UINT64', 'INT64'];
export const NUMBER_TYPES: readonly GgufValueType[] = [...INTEGER_TYPES, 'FLOAT32', 'FLOAT64'];

function describe(record: KvRecord): string {
  return record.array === undefined ? record.type : `an array of ${record.array.elementType}`;
}

/** V8's longest JS array (FixedArray::kMaxLength on 64-bit): past it, an array cannot be built. */
const MAX_JS_ARRAY_LENGTH = 134_217_725;

/** The header bytes (from file offset 0) and how to read numbers in them. */
export interface FileBytes {
  readonly view: DataView;
  readonly fileSize: number;
  readonly littleEndian: boolean;
  /** GGUF v2 and later: uint64 counts and lengths. */
  readonly wideCounts: boolean;
  /** Whether the bytes are gone (the file was closed). */
  readonly closed: () => boolean;
}


/**
 * A lazily decoded metadata array: `length` and `elementType` are known at open; elements are
 * decoded on `at(i)` or `toArray()`. For STRING arrays, the first `at()` indexes where each string
 * starts (8 bytes per element), so later lookups are O(1).
 */
export class GgufArray {
  private starts: Float64Array | undefined;

  constructor(
    private readonly file: FileBytes,
    private readonly record: ArrayRecord,
  ) {}

  get elementType(): GgufValueType {
    return this.record.elementType;
  }
  get length(): number {
    return this.record.length;
  }

  /** Element `i` (negative counts from the end), or undefined outside the array. */
  at(i: number): GgufValue | undefined {
    const n = this.record.length;
    if (i < 0) i += n;
    if (!Number.isInteger(i) || i < 0 || i >= n) return undefined;
    const type = this.record.elementType;
    const fixed = FIXED_VALUE_SIZE[type];
    if (fixed !== undefined) return readScalar(this.cursorAt(this.record.dataOffset + i * fixed), type);
    const starts = this.elementStarts();
    const cur = this.cursorAt(starts[i]!);
    return type === 'STRING' ? (readScalar(cur, 'STRING') as string) : decodeNested(this.file, cur);
  }

  /**
   * All elements: a typed array for numeric types, a JS array otherwise. A JS array longer than
   * the engine allows (about 134M elements in V8) is LIMIT_EXCEEDED: read those with `values()`
   * or `at()`.
   */
  toArray(): GgufValue {
    const { elementType: type, length, dataOffset } = this.record;
    const Typed = TYPED_ARRAYS[type];
    if (Typed !== undefined) {
      const view = this.cursorAt(dataOffset).view;
      return elementsAt(Typed, view.buffer, view.byteOffset + dataOffset, length, this.file.littleEndian);
    }
    const tooLong = () => new GgufError('LIMIT_EXCEEDED', `an array of ${length} ${type} values is longer than a JavaScript array can be; read it with values() or at()`, dataOffset);
    if (length > MAX_JS_ARRAY_LENGTH) throw tooLong();
    try {
      return Array.from(this.values());
    } catch (error) {
      if (error instanceof RangeError) throw tooLong(); // another engine's smaller bound
      throw error;
    }
  }

  /** The elements one by one, in order, without building an array (for arrays of any length). */
  *values(): IterableIterator<GgufValue> {
    const { elementType: type, length, dataOffset } = this.record;
    const cur = this.cursorAt(dataOffset);
    for (let i = 0; i < length; i++) {
      // A long walk may be interleaved with close(): look again now and then.
      if ((i & 0xffff) === 0xffff && this.file.closed()) throw new GgufError('CLOSED', 'metadata array read after close()', cur.pos);
      yield type === 'ARRAY' ? decodeNested(this.file, cur) : readScalar(cur, type);
    }
  }

  [Symbol.iterator](): IterableIterator<GgufValue> {
    return this.values();
  }

  /**
   * The elements' bytes as they lie in the header (no copy), with how to read their length fields:
   * for readers that walk a large array themselves (the tokenizer's token strings). @internal
   */
  rawBytes(): { bytes: Uint8Array; littleEndian: boolean; wideCounts: boolean } {
    const { dataOffset, dataBytes } = this.record;
    const view = this.cursorAt(dataOffset).view;
    return { bytes: new Uint8Array(view.buffer, view.byteOffset + dataOffset, dataBytes), littleEndian: this.file.littleEndian, wideCounts: this.file.wideCounts };
  }

  private cursorAt(offset: number): Cursor {
    if (this.file.closed()) throw new GgufError('CLOSED', 'metadata array read after close()', offset);
    return cursorAt(this.file, offset);
  }

  private elementStarts(): Float64Array {
    if (this.starts !== undefined) return this.starts;
    const { length, dataOffset, elementType } = this.record;
    const starts = new Float64Array(length);
    const cur = this.cursorAt(dataOffset);
    for (let i = 0; i < length; i++) {
      starts[i] = cur.pos;
      if (elementType === 'STRING') cur.skip(cur.count('string length'), 'string');
      else readArray(cur, 1);
    }
    this.starts = starts;
    return starts;
  }
}

/** Decodes a nested array (element type, count, elements) at the cursor and moves past it. */
function decodeNested(file: FileBytes, cur: Cursor): GgufValue {
  return new GgufArray(file, readArray(cur, 1)).toArray();
}

function cursorAt(file: FileBytes, offset: number): Cursor {
  const cur = new Cursor(file.view, file.fileSize, file.littleEndian);
  cur.wideCounts = file.wideCounts;
  cur.pos = offset;
  return cur;
}

/**
 * The file's metadata: a read-only, Map-like view of its key-value pairs in file order. Scalars
 * are decoded at open; arrays when asked (`get` decodes the whole array, `array` gives lazy
 * element access).
 */
export class GgufMetadata implements Iterable<[string, GgufValue]> {
  private readonly byKey: Map<string, KvRecord>;
  private readonly arrays = new Map<string, GgufArray>();

  constructor(
    records: readonly KvRecord[],
    private readonly file: FileBytes,
  ) {
    this.byKey = new Map(records.map((r) => [r.key, r]));
  }
  /** Whether the header's bytes are gone (the file was closed): views into them read zeros. @internal */
  headerGone(): boolean {
    return this.file.closed();
  }


  get size(): number {
    return this.byKey.size;
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  /** The decoded value, or undefined if the key is absent. */
  get(key: string): GgufValue | undefined {
    const record = this.byKey.get(key);
    if (record === undefined) return undefined;
    return record.array === undefined ? record.value : this.array(key)!.toArray();
  }

  /**
   * A number-typed value (UINT8 ... INT64, FLOAT32, FLOAT64) as a number; undefined if the key is
   * absent; a TypeError for another type, a RangeError for a 64-bit integer beyond 2^53.
   */
  getNumber(key: string): number | undefined {
    const value = this.scalar(key, NUMBER_TYPES, 'a number');
    if (typeof value === 'bigint') throw new RangeError(`'${key}' is ${value}, beyond the safe integers: use getBigInt()`);
    return value as number | undefined;
  }

  /** An integer-typed value as a bigint (exact for every UINT64/INT64); undefined if absent; a TypeError for another type. */
  getBigInt(key: string): bigint | undefined {
    const value = this.scalar(key, INTEGER_TYPES, 'an integer');
    return value === undefined ? undefined : BigInt(value as number | bigint);
  }

  /** A STRING value; undefined if absent; a TypeError for another type. */
  getString(key: string): string | undefined {
    return this.scalar(key, ['STRING'], 'a string') as string | undefined;
  }

  /** A BOOL value; undefined if absent; a TypeError for another type. */
  getBoolean(key: string): boolean | undefined {
    return this.scalar(key, ['BOOL'], 'a boolean') as boolean | undefined;
  }

  /** An array of STRING, decoded whole; undefined if absent; a TypeError for another type. */
  getStrings(key: string): string[] | undefined {
    const record = this.byKey.get(key);
    if (record === undefined) return undefined;
    if (record.array?.elementType !== 'STRING') throw new TypeError(`'${key}' is ${describe(record)}, not an array of strings`);
    return this.get(key) as string[];
  }

  private scalar(key: string, types: readonly GgufValueType[], what: string): GgufScalar | undefined {
    const record = this.byKey.get(key);
    if (record === undefined) return undefined;
    if (!types.includes(record.type)) throw new TypeError(`'${key}' is ${describe(record)}, not ${what}`);
    return record.value;
  }

  /** The value's GGUF type (`UINT32`, `STRING`, `ARRAY`, ...), or undefined if the key is absent. */
  type(key: string): GgufValueType | undefined {
    return this.byKey.get(key)?.type;
  }

  /** Type, array shape and file position of a key, without decoding its value. */
  info(key: string): GgufEntryInfo | undefined {
    const r = this.byKey.get(key);
    if (r === undefined) return undefined;
    const base = { key: r.key, type: r.type, offset: r.offset };
    if (r.array === undefined) return base;
    const { elementType, length, dataOffset, dataBytes } = r.array;
    return { ...base, arrayType: elementType, length, dataOffset, dataBytes };
  }

  /** Lazy access to an array value, or undefined if the key is absent or not an array. */
  array(key: string): GgufArray | undefined {
    const cached = this.arrays.get(key);
    if (cached !== undefined) return cached;
    const record = this.byKey.get(key)?.array;
    if (record === undefined) return undefined;
    const array = new GgufArray(this.file, record);
    this.arrays.set(key, array);
    return array;
  }

  keys(): IterableIterator<string> {
    return this.byKey.keys();
  }

  /** Every pair, in file order, with arrays decoded whole. */
  *entries(): IterableIterator<[string, GgufValue]> {
    for (const key of this.byKey.keys()) yield [key, this.get(key)!];
  }

  [Symbol.iterator](): IterableIterator<[string, GgufValue]> {
    return this.entries();
  }
}
