import { createHash } from '#platform/crypto';
import { blockAt, type GgufBlock, type Q4KBlock, type Q6KBlock } from '../format/blocks.js';
import type { GgmlType, GgmlTypeName } from '../format/ggml-types.js';
import { canView, elementsAt } from '../format/elements.js';
import { GgufError } from '../errors.js';
import type { TensorRecord } from '../format/tensor-table.js';
import { MappedSource, type ByteSource } from './source.js';
import type { RowReader } from '../native.js';
import {
  dequantizeAsyncAt,
  dequantizeAt,
  gatherRowsAsyncAt,
  gatherRowsFromBytes,
  takesNativeKernel,
  type DequantizeAsyncOptions,
  type DequantizeOptions,
} from '../dequant/dequantize.js';

/** The typed view of a tensor's elements; quantized types are raw bytes. */
export type TensorView =
  | Float32Array
  | Float64Array
  | Uint16Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array;

type ViewConstructor = {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): TensorView;
  new (length: number): TensorView;
  readonly BYTES_PER_ELEMENT: number;
};

// Element views for the plain types; every other type is viewed as bytes.
const ELEMENT_VIEWS: Readonly<Record<string, ViewConstructor>> = {
  F32: Float32Array,
  F16: Uint16Array,
  BF16: Uint16Array,
  F64: Float64Array,
  I8: Int8Array,
  I16: Int16Array,
  I32: Int32Array,
  I64: BigInt64Array,
};

/** The largest row id gatherRows takes (ids are held as uint32). */
const MAX_ROW_ID = 0xffffffff;

export class GgufTensor {
  readonly name: string;
  /** ggml type name: F32, F16, Q4_K, ... */
  readonly type: GgmlTypeName;
  readonly typeId: number;
  readonly ggmlType: GgmlType;
  /** ggml order: ne[0], the innermost (row) dimension, first. */
  readonly shape: readonly number[];
  readonly nelements: number;
  readonly nbytes: number;
  /** Offset of the tensor's bytes within the data section (of its part, for a split model). */
  readonly offset: number;
  /** Offset of the tensor's bytes within the file (its part's file, for a split model). */
  readonly fileOffset: number;
  private cachedBytes: Uint8Array | undefined;
  /** For a mapped file: decodes rows straight from the mapping (made on the first lookup). */
  private rowReader: RowReader | undefined;

  constructor(
    record: TensorRecord,
    dataOffset: number,
    private readonly source: ByteSource,
    private readonly littleEndian: boolean,
    /** Which part of a split model holds the tensor (0 for a file not split). */
    readonly part = 0,
  ) {
    this.name = record.name;
    this.ggmlType = record.type;
    this.type = record.type.name;
    this.typeId = record.type.id;
    this.shape = Object.freeze([...record.shape]);
    this.nelements = record.nelements;
    this.nbytes = record.nbytes;
    this.offset = record.offset;
    this.fileOffset = dataOffset + record.offset;
  }

  /**
   * The tensor's bytes as stored: a view of the file's memory, never a copy (in read mode, a copy
   * read from the file at each call).
   */
  get bytes(): Uint8Array {
    this.source.check(this.fileOffset);
    // A view of the mapping is kept (it costs nothing); a read-mode copy is not, so going through
    // every tensor does not keep a second copy of the model.
    if (!this.source.zeroCopy) return this.rangeBytes(0, this.nbytes);
    if (this.cachedBytes === undefined) this.cachedBytes = this.rangeBytes(0, this.nbytes);
    return this.cachedBytes;
  }

  /**
   * True when `view()` returns a view of the file's memory; false when it must return a copy
   * (a big-endian file, data not aligned to the element size, or a file opened in read mode).
   */
  get zeroCopyView(): boolean {
    const View = ELEMENT_VIEWS[this.type];
    return this.source.zeroCopy && (View === undefined || canView(View.BYTES_PER_ELEMENT, this.bytes.byteOffset, this.littleEndian));
  }

  /**
   * The elements as a typed array: Float32Array for F32, Uint16Array for F16 and BF16 (raw half
   * bits), Float64Array, Int8Array, Int16Array, Int32Array, BigInt64Array for F64, I8, I16, I32,
   * I64, and the raw bytes (Uint8Array) for quantized types. See `zeroCopyView` for when it copies.
   */
  view(): TensorView {
    const View = ELEMENT_VIEWS[this.type];
    const bytes = this.bytes;
    if (View === undefined) return bytes;
    return elementsAt(View, bytes.buffer, bytes.byteOffset, this.nelements, this.littleEndian);
  }

  /** The F32 elements (`view()` typed for F32 tensors); a TypeError for any other type. */
  f32(): Float32Array {
    return this.typedView('F32') as Float32Array;
  }
  /** The F64 elements; a TypeError for any other type. */
  f64(): Float64Array {
    return this.typedView('F64') as Float64Array;
  }
  /** The raw half-precision bits of an F16 tensor (f16ToF32 or dequantize() decode them); a TypeError for any other type. */
  f16(): Uint16Array {
    return this.typedView('F16') as Uint16Array;
  }
  /** The raw bfloat16 bits of a BF16 tensor; a TypeError for any other type. */
  bf16(): Uint16Array {
    return this.typedView('BF16') as Uint16Array;
  }
  /** The I8 elements; a TypeError for any other type. */
  i8(): Int8Array {
    return this.typedView('I8') as Int8Array;
  }
  /** The I16 elements; a TypeError for any other type. */
  i16(): Int16Array {
    return this.typedView('I16') as Int16Array;
  }
  /** The I32 elements; a TypeError for any other type. */
  i32(): Int32Array {
    return this.typedView('I32') as Int32Array;
  }
  /** The I64 elements; a TypeError for any other type. */
  i64(): BigInt64Array {
    return this.typedView('I64') as BigInt64Array;
  }

  private typedView(type: GgmlTypeName): TensorView {
    if (this.type !== type) throw new TypeError(`tensor '${this.name}' is ${this.type}, not ${type}`);
    return this.view();
  }

  /**
   * The sha256 of the tensor's bytes (hex), read in slices along the file's windows: any size,
   * also past what one ArrayBuffer holds (where `bytes` is TENSOR_TOO_LARGE). Pages lost while
   * hashing are FILE_CHANGED, not a digest of zeros.
   */
  sha256(): string {
    const hash = createHash('sha256');
    for (const bytes of this.byteSlices()) hash.update(bytes);
    return hash.digest('hex');
  }

  /**
   * The tensor's bytes in order, as views along the file's windows (copies in read mode): any
   * size, also past what one ArrayBuffer holds. Pages lost while they were read (the file cut
   * short underneath) are FILE_CHANGED once the last slice was taken, not a digest of zeros.
   */
  *byteSlices(): Generator<Uint8Array> {
    const slice = this.source.sliceLength;
    for (let at = 0; at < this.nbytes; ) {
      const length = Math.min(this.nbytes - at, slice - ((this.fileOffset + at) % slice));
      yield this.rangeBytes(at, length);
      at += length;
    }
    this.source.check(this.fileOffset);
  }

  /** Number of quantization blocks (elements for plain types). */
  get nblocks(): number {
    return this.nelements / this.ggmlType.blockSize;
  }

  /** Block `index` of a Q4_K or Q6_K tensor, its fields viewing the file's bytes. */
  block(index: number): GgufBlock {
    return blockAt(this.type, this.bytes, index, this.fileOffset, this.littleEndian);
  }

  /** Block `index` of a Q4_K tensor, typed (UNSUPPORTED_BLOCK_TYPE for another type). */
  blockQ4K(index: number): Q4KBlock {
    return this.typedBlock('Q4_K', index) as Q4KBlock;
  }

  /** Block `index` of a Q6_K tensor, typed (UNSUPPORTED_BLOCK_TYPE for another type). */
  blockQ6K(index: number): Q6KBlock {
    return this.typedBlock('Q6_K', index) as Q6KBlock;
  }

  private typedBlock(type: 'Q4_K' | 'Q6_K', index: number): GgufBlock {
    if (this.type !== type) throw new GgufError('UNSUPPORTED_BLOCK_TYPE', `tensor '${this.name}' is ${this.type}, not ${type}`, this.fileOffset);
    return blockAt(type, this.bytes, index, this.fileOffset, this.littleEndian);
  }

  /**
   * The same bytes seen as rows of `rowLength` values (a multiple of the block size that divides
   * the tensor): the viewer samples pieces of rows longer than its sample so. @internal
   */
  asRowsOf(rowLength: number): GgufTensor {
    const { blockSize } = this.ggmlType;
    if (!Number.isSafeInteger(rowLength) || rowLength <= 0 || rowLength % blockSize !== 0 || this.nelements % rowLength !== 0) {
      throw new RangeError(`rows of ${rowLength} values do not divide tensor '${this.name}' (${this.nelements} values in blocks of ${blockSize})`);
    }
    const record: TensorRecord = { name: this.name, type: this.ggmlType, shape: [rowLength, this.nelements / rowLength], nelements: this.nelements, nbytes: this.nbytes, offset: this.offset, infoOffset: 0 };
    return new GgufTensor(record, this.fileOffset - this.offset, this.source, this.littleEndian, this.part);
  }

  /** Elements per row: ne[0]. */
  get rowLength(): number {
    return this.shape[0] ?? 1;
  }

  /** Rows of `rowLength` elements: the product of the other dimensions. */
  get rows(): number {
    return this.rowLength === 0 ? 0 : this.nelements / this.rowLength;
  }

  /**
   * The whole tensor as float32, bit for bit as ggml's dequantizer. With `out` (a Float32Array of
   * at least `nelements`) it writes there and returns it, allocating nothing.
   */
  dequantize(out?: Float32Array, options: Omit<DequantizeOptions, 'littleEndian'> = {}): Float32Array {
    return dequantizeAt(this.ggmlType, this.bytes, out, ...this.dequantArgs(options, 0));
  }

  /**
   * Rows [first, first + count) as float32, reading only those rows' bytes (one embedding
   * lookup touches one row of the file, not the tensor).
   */
  dequantizeRows(first: number, count: number, out?: Float32Array, options: Omit<DequantizeOptions, 'littleEndian'> = {}): Float32Array {
    const rows = this.rows;
    if (!Number.isSafeInteger(first) || !Number.isSafeInteger(count) || first < 0 || count < 0 || first + count > rows) {
      throw new GgufError('ROW_OUT_OF_RANGE', `rows ${first}..${first + count} of tensor '${this.name}' with ${rows} rows`, this.fileOffset);
    }
    return this.decodeRows(first, count, out, options);
  }

  /**
   * The rows named by `ids` (any array-like of integers, such as a token id Int32Array), one
   * after another in one Float32Array of `ids.length * rowLength` values (`out`, if given, must
   * hold them). Every id is checked (ROW_OUT_OF_RANGE) before anything is written; the native
   * kernels decode them in one call, fetching the bytes of rows ahead while decoding.
   */
  gatherRows(ids: ArrayLike<number>, out?: Float32Array, options: Omit<DequantizeOptions, 'littleEndian'> = {}): Float32Array {
    return this.decodeRows(this.rowIds(ids), ids.length, out, options);
  }

  /** gatherRows() off the event loop, for large batches: the rows decoded on libuv's pool. */
  gatherRowsAsync(ids: ArrayLike<number>, out?: Float32Array, options: Omit<DequantizeAsyncOptions, 'littleEndian'> = {}): Promise<Float32Array> {
    try {
      const list = this.rowIds(ids);
      this.source.check(this.fileOffset);
      const rowBytes = this.rowBytes();
      // Read mode and remote files: the rows themselves, read into one buffer (not the span
      // between them).
      if (!this.source.zeroCopy) {
        return this.readRowsOf(list, rowBytes).then(({ bytes, ids: local }) =>
          gatherRowsAsyncAt(this.ggmlType, bytes, rowBytes, local, out, ...this.dequantArgs<DequantizeAsyncOptions>(options, 0)),
        );
      }
      // The job reads the rows' span only (rows lo..hi), with ids counted from lo.
      let lo = list.length === 0 ? 0 : Infinity;
      let hi = 0;
      for (let i = 0; i < list.length; i++) {
        lo = Math.min(lo, list[i]!);
        hi = Math.max(hi, list[i]!);
      }
      const rebased = lo === 0 ? list : list.map((id) => id - lo);
      const span = this.rangeBytes(lo * rowBytes, list.length === 0 ? 0 : (hi - lo + 1) * rowBytes);
      return gatherRowsAsyncAt(this.ggmlType, span, rowBytes, rebased, out, ...this.dequantArgs<DequantizeAsyncOptions>(options, lo * rowBytes));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The distinct rows of `ids` read one after another into one buffer (a run of consecutive rows
   * in one read), and each id's position in it.
   */
  private async readRowsOf(ids: Uint32Array, rowBytes: number): Promise<{ bytes: Uint8Array; ids: Uint32Array }> {
    const sorted = ids.slice().sort();
    let distinct = 0;
    for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[distinct++] = sorted[i]!;
    const rows = sorted.subarray(0, distinct);
    const bytes = new Uint8Array(distinct * rowBytes);
    for (let start = 0; start < distinct; ) {
      let end = start + 1;
      while (end < distinct && rows[end] === rows[end - 1]! + 1) end++;
      bytes.set(await this.fetchRange(rows[start]! * rowBytes, (end - start) * rowBytes), start * rowBytes);
      start = end;
    }
    const local = ids.map((id) => {
      let lo = 0;
      let hi = distinct - 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (rows[mid]! < id) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    });
    return { bytes, ids: local };
  }

  /**
   * A checked copy of `ids`: the caller's array may share memory with `out` (decoding would
   * rewrite ids still to be read) or change under an await, so each id is read once, here.
   */
  private rowIds(ids: ArrayLike<number>): Uint32Array {
    const rows = this.rows;
    const list = new Uint32Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!(Number.isInteger(id) && id >= 0 && id < rows)) {
        throw new GgufError('ROW_OUT_OF_RANGE', `ids[${i}] is ${String(id)}, not a row of tensor '${this.name}' with ${rows} rows`, this.fileOffset);
      }
      // Ids are 32-bit from here on (the kernels' index type): a larger one must not wrap around.
      if (id > MAX_ROW_ID) {
        throw new GgufError('ROW_OUT_OF_RANGE', `ids[${i}] is ${id}: row lookups by id reach rows up to ${MAX_ROW_ID} (dequantizeRows reads any row)`, this.fileOffset);
      }
      list[i] = id;
    }
    return list;
  }

  /** Rows `rows` (the first of `count`, or their checked ids) into `out` or a new array. */
  private decodeRows(rows: number | Int32Array | Uint32Array, count: number, out: Float32Array | undefined, options: Omit<DequantizeOptions, 'littleEndian'>): Float32Array {
    this.source.check(this.fileOffset);
    const rowLength = this.rowLength;
    if (out !== undefined && !(out instanceof Float32Array)) throw new TypeError('out must be a Float32Array');
    if (out !== undefined && out.length < count * rowLength) {
      throw new GgufError('OUTPUT_TOO_SMALL', `out holds ${out.length} floats, ${count * rowLength} needed`, this.fileOffset);
    }
    const rowBytes = this.rowBytes();
    // A mapped file: one native call reading the mapping itself (no window over the tensor, which
    // for a large embedding would count hundreds of MB with V8); bytes in memory: a view of them.
    const source = this.source;
    if (source.zeroCopy && count > 0 && takesNativeKernel(this.ggmlType, options.backend, this.littleEndian)) {
      const target = out ?? new Float32Array(count * rowLength);
      let done: boolean;
      if (source instanceof MappedSource) {
        this.rowReader ??= source.pages().rowReader(this.fileOffset, this.nbytes, this.typeId, rowBytes);
        done = this.rowReader(rows, count, target);
        // Pages lost during the read (a truncation) came back as zeros: say so now.
        source.check(this.fileOffset);
      } else {
        done = gatherRowsFromBytes(this.ggmlType, this.bytes, rowBytes, rows, count, target);
      }
      if (done) return target;
    }
    if (typeof rows === 'number') {
      return dequantizeAt(this.ggmlType, this.rangeBytes(rows * rowBytes, count * rowBytes), out, ...this.dequantArgs(options, rows * rowBytes));
    }
    const target = out ?? new Float32Array(count * rowLength);
    for (let i = 0; i < count; i++) {
      const at = rows[i]! * rowBytes;
      dequantizeAt(this.ggmlType, this.rangeBytes(at, rowBytes), target.subarray(i * rowLength, (i + 1) * rowLength), ...this.dequantArgs(options, at));
    }
    return target;
  }

  /**
   * `dequantize` off the event loop (native kernels on libuv's pool, split across cores for
   * large tensors). Closing the file meanwhile is safe: the mapping stays until the work ends.
   * For a remote file the bytes are fetched first.
   */
  dequantizeAsync(out?: Float32Array, options: Omit<DequantizeAsyncOptions, 'littleEndian'> = {}): Promise<Float32Array> {
    try {
      if (this.source.fetch !== undefined) {
        return this.fetchBytes().then((bytes) => dequantizeAsyncAt(this.ggmlType, bytes, out, ...this.dequantArgs<DequantizeAsyncOptions>(options, 0)));
      }
      return dequantizeAsyncAt(this.ggmlType, this.bytes, out, ...this.dequantArgs<DequantizeAsyncOptions>(options, 0));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The tensor's bytes, asynchronously: for a remote file (openGgufRemote) fetched by range, in
   * 16 MiB pieces with progress and abort; for a local file, `bytes`.
   */
  async fetchBytes(options: { signal?: AbortSignal; onProgress?: (done: number, total: number) => void } = {}): Promise<Uint8Array> {
    if (this.source.fetch === undefined) return this.bytes;
    return this.nbytes === 0 ? new Uint8Array(0) : this.source.fetch(this.fileOffset, this.nbytes, options);
  }

  /** Bytes [start, start + length) of the tensor: fetched for a remote file, else a view (or read). */
  private fetchRange(start: number, length: number): Uint8Array | Promise<Uint8Array> {
    return this.source.fetch === undefined ? this.rangeBytes(start, length) : this.source.fetch(this.fileOffset + start, length);
  }

  private rowBytes(): number {
    return (this.rowLength / this.ggmlType.blockSize) * this.ggmlType.typeSize;
  }

  /** A view of [start, start + length) of the tensor's bytes, locating only that range. */
  private rangeBytes(start: number, length: number): Uint8Array {
    this.source.check(this.fileOffset);
    if (length === 0) return new Uint8Array(0);
    if (this.cachedBytes !== undefined) return this.cachedBytes.subarray(start, start + length);
    const { buffer, byteOffset } = this.source.locate(this.fileOffset + start, length);
    return new Uint8Array(buffer, byteOffset, length);
  }

  /** Dequantization options with this file's byte order, and where errors point. */
  private dequantArgs<T extends DequantizeOptions>(options: Omit<T, 'littleEndian'>, start: number) {
    const fileOffset = this.fileOffset + start;
    const at = { fileOffset, check: () => this.source.check(fileOffset), checkPages: () => this.source.checkPages?.(fileOffset) };
    return [{ ...options, littleEndian: this.littleEndian } as T, at] as const;
  }
}
