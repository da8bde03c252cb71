import { GgufError } from '../errors.js';
import { GGML_TYPES, ggmlTypeById, type GgmlType } from './ggml-types.js';
import { hashKey, NameIndex } from './name-index.js';
import { adviseHugePages } from '#platform/native';
import type { TensorInfoTargets } from '../native.js';

/**
 * A table at least this large asks for huge pages (adviseHugePages): from about 230,000 tensors.
 * glibc's malloc maps every allocation of 32 MiB or more afresh (its mmap threshold grows to at
 * most that), so the advice lands on pages not yet written and goes with them when the table is
 * freed; a smaller table can come from reused heap memory, where it would do nothing and stay.
 */
const HUGE_PAGES_AT = 32 << 20;

/** One tensor's info, as GgufTensor is built from it. */
export interface TensorRecord {
  readonly name: string;
  readonly type: GgmlType;
  /** ggml order: ne[0], the innermost dimension, first. */
  readonly shape: readonly number[];
  readonly nelements: number;
  readonly nbytes: number;
  /** Offset within the data section. */
  readonly offset: number;
  /** File offset of this tensor's info record. */
  readonly infoOffset: number;
}

const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

// The type table as the addon's walk of tensor infos reads it (block size 0: not a tensor type).
const BLOCK_SIZES = Uint32Array.from(GGML_TYPES, (t) => t.blockSize);
const TYPE_SIZES = Uint32Array.from(GGML_TYPES, (t) => t.typeSize);
const encoder = new TextEncoder();

/**
 * The tensor infos of a file in typed arrays: about 90 bytes per tensor outside the JS heap and
 * none on it, so a header that claims millions of tensors costs memory in proportion to its own
 * size, not to the objects a reader would make. Names are kept as UTF-8 bytes (copied out of the
 * file, so they outlive close()) and decoded when asked; a keyed hash index finds them by name.
 */
export class TensorTable {
  readonly count: number;
  private readonly nameBytes: Uint8Array;
  private nameLength = 0;
  /** Whether the name addName() stored last is plain ASCII. */
  lastNameAscii = true;
  private readonly typeIds: Uint8Array;
  private readonly dims: Uint8Array;
  private readonly ne: Float64Array;
  private readonly offsets: Float64Array;
  private readonly nbytes: Float64Array;
  private readonly infoOffsets: Float64Array;
  /** Entry i is tensor i's name. */
  readonly names: NameIndex;

  constructor(count: number, nameCapacity: number) {
    this.count = count;
    // One allocation, every column a view of it: a split model's parts each make a table, and
    // the three allocations this took before cost 9-14 us for a part of 40 tensors, against 3-4.
    // (A name store past 4 GiB has an index of its own, with 64-bit offsets.)
    const words = nameCapacity <= 0xffffffff ? NameIndex.wordsFor(count) : 0;
    const buffer = new ArrayBuffer(count * 7 * 8 + words * 4 + count * 2 + nameCapacity);
    if (buffer.byteLength >= HUGE_PAGES_AT) adviseHugePages(buffer);
    this.ne = new Float64Array(buffer, 0, count * 4);
    this.offsets = new Float64Array(buffer, count * 32, count);
    this.nbytes = new Float64Array(buffer, count * 40, count);
    this.infoOffsets = new Float64Array(buffer, count * 48, count);
    const bytesAt = count * 56 + words * 4;
    this.typeIds = new Uint8Array(buffer, bytesAt, count);
    this.dims = new Uint8Array(buffer, bytesAt + count, count);
    this.nameBytes = new Uint8Array(buffer, bytesAt + count * 2, nameCapacity);
    this.names = new NameIndex(count, this.nameBytes, words > 0 ? new Uint32Array(buffer, count * 56, words) : undefined);
  }

  /**
   * Stores the next tensor's name (`length` UTF-8 bytes at `start` of `source`) and indexes it.
   * Returns the index of an earlier tensor with the same name, or -1; `lastNameAscii` then tells
   * whether the name is plain ASCII (else the caller checks it is valid UTF-8).
   */
  addName(source: Uint8Array, start: number, length: number): number {
    const at = this.nameLength;
    const names = this.nameBytes;
    let high = 0;
    for (let k = 0; k < length; k++) {
      const b = source[start + k]!;
      names[at + k] = b;
      high |= b;
    }
    this.lastNameAscii = high < 0x80;
    // Names are added in tensor order, so tensor i is entry i; a repeated name is not added
    // (opening fails on it).
    const earlier = this.names.add(at, at + length);
    if (earlier < 0) this.nameLength = at + length;
    return earlier;
  }

  /**
   * The columns the addon's walk of tensor infos fills, and the name index it adds to; undefined
   * where it cannot (a name store past 4 GiB).
   */
  walkTargets(): TensorInfoTargets | undefined {
    const { starts, ends, hashes, slots } = this.names.arrays;
    if (!(starts instanceof Uint32Array) || !(ends instanceof Uint32Array)) return undefined;
    const { nameBytes, typeIds, dims, ne, offsets, nbytes, infoOffsets } = this;
    return { blockSizes: BLOCK_SIZES, typeSizes: TYPE_SIZES, key: hashKey(), nameBytes, starts, ends, hashes, slots, typeIds, dims, ne, offsets, nbytes, infoOffsets };
  }

  /** Bytes of the name store used (where the next name goes). */
  get nameBytesUsed(): number {
    return this.nameLength;
  }

  /** The walk stored and indexed `count` more tensors, their names ending at byte `nameEnd`. */
  acceptWalked(count: number, nameEnd: number, probes: number): void {
    this.names.addedElsewhere(count, probes);
    this.nameLength = nameEnd;
  }

  setDim(i: number, d: number, ne: number): void {
    this.ne[i * 4 + d] = ne;
  }

  set(i: number, typeId: number, nDims: number, offset: number, nbytes: number, infoOffset: number): void {
    this.typeIds[i] = typeId;
    this.dims[i] = nDims;
    this.offsets[i] = offset;
    this.nbytes[i] = nbytes;
    this.infoOffsets[i] = infoOffset;
  }

  name(i: number): string {
    return utf8.decode(this.nameBytes.subarray(this.names.start(i), this.names.end(i)));
  }
  offset(i: number): number {
    return this.offsets[i]!;
  }
  byteLength(i: number): number {
    return this.nbytes[i]!;
  }
  infoOffset(i: number): number {
    return this.infoOffsets[i]!;
  }
  typeId(i: number): number {
    return this.typeIds[i]!;
  }
  /** The number of elements (the product of the dimensions). */
  elements(i: number): number {
    let n = 1;
    for (let d = 0; d < this.dims[i]!; d++) n *= this.ne[i * 4 + d]!;
    return n;
  }

  /**
   * Whether a tensor of any of `others` is named as tensor `i` here: the index of the first such
   * table, or -1 (by the hash stored when it was indexed, then the bytes: nothing decoded).
   */
  nameIn(others: readonly TensorTable[], i: number): number {
    const start = this.names.start(i);
    const end = this.names.end(i);
    const hash = this.names.hash(i);
    for (let k = 0; k < others.length; k++) if (others[k]!.names.findRange(this.nameBytes, start, end, hash) >= 0) return k;
    return -1;
  }

  /** The index of the tensor named `name`, or -1. */
  find(name: string): number {
    return this.names.find(encoder.encode(name));
  }

  record(i: number): TensorRecord {
    if (!(i >= 0 && i < this.count)) throw new RangeError(`tensor index ${i} out of range`);
    const shape = Array.from(this.ne.subarray(i * 4, i * 4 + this.dims[i]!));
    const type = ggmlTypeById(this.typeIds[i]!);
    if (type === undefined) throw new GgufError('UNKNOWN_TENSOR_TYPE', `type id ${this.typeIds[i]}`, this.infoOffsets[i]!);
    return {
      name: this.name(i),
      type,
      shape,
      nelements: shape.reduce((a, b) => a * b, 1),
      nbytes: this.nbytes[i]!,
      offset: this.offsets[i]!,
      infoOffset: this.infoOffsets[i]!,
    };
  }

}
