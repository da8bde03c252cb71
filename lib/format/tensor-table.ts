import { GgufError } from '../errors.js';
import { ggmlTypeById, type GgmlType } from './ggml-types.js';

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
const encoder = new TextEncoder();

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over bytes [start, end): the name index's hash. */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
  return h >>> 0;
}

/**
 * The tensor infos of a file in typed arrays: about 70 bytes per tensor outside the JS heap and
 * none on it, so a header that claims millions of tensors costs memory in proportion to its own
 * size, not to the objects a reader would make. Names are kept as UTF-8 bytes (copied out of the
 * file, so they outlive close()) and decoded when asked; a hash index finds them by name.
 */
export class TensorTable {
  readonly count: number;
  private readonly nameBytes: Uint8Array;
  private nameLength = 0;
  /** Whether the name addName() stored last is plain ASCII. */
  lastNameAscii = true;
  private readonly nameStart: Uint32Array;
  private readonly nameEnd: Uint32Array;
  private readonly typeIds: Uint8Array;
  private readonly dims: Uint8Array;
  private readonly ne: Float64Array;
  private readonly offsets: Float64Array;
  private readonly nbytes: Float64Array;
  private readonly infoOffsets: Float64Array;
  /** Open addressing, index + 1 per slot (0: empty); a power of two, at least twice the count. */
  private readonly index: Int32Array;

  constructor(count: number, nameCapacity: number) {
    this.count = count;
    this.nameBytes = new Uint8Array(nameCapacity);
    this.nameStart = new Uint32Array(count);
    this.nameEnd = new Uint32Array(count);
    this.typeIds = new Uint8Array(count);
    this.dims = new Uint8Array(count);
    this.ne = new Float64Array(count * 4);
    this.offsets = new Float64Array(count);
    this.nbytes = new Float64Array(count);
    this.infoOffsets = new Float64Array(count);
    let size = 2;
    while (size < count * 2) size *= 2;
    this.index = new Int32Array(size);
  }

  /**
   * Stores tensor `i`'s name (`length` UTF-8 bytes at `start` of `source`) and indexes it.
   * Returns the index of an earlier tensor with the same name, or -1; `lastNameAscii` then tells
   * whether the name is plain ASCII (else the caller checks it is valid UTF-8).
   */
  addName(i: number, source: Uint8Array, start: number, length: number): number {
    const at = this.nameLength;
    const names = this.nameBytes;
    let h = FNV_OFFSET;
    let high = 0;
    for (let k = 0; k < length; k++) {
      const b = source[start + k]!;
      names[at + k] = b;
      high |= b;
      h = Math.imul(h ^ b, FNV_PRIME);
    }
    this.lastNameAscii = high < 0x80;
    this.nameLength = at + length;
    this.nameStart[i] = at;
    this.nameEnd[i] = at + length;
    const mask = this.index.length - 1;
    for (let slot = (h >>> 0) & mask; ; slot = (slot + 1) & mask) {
      const other = this.index[slot]! - 1;
      if (other < 0) {
        this.index[slot] = i + 1;
        return -1;
      }
      if (this.sameName(other, names, at, at + length)) return other;
    }
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
    return utf8.decode(this.nameBytes.subarray(this.nameStart[i]!, this.nameEnd[i]!));
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

  /** The index of the tensor named `name`, or -1. */
  find(name: string): number {
    const bytes = encoder.encode(name);
    const mask = this.index.length - 1;
    for (let slot = hashBytes(bytes, 0, bytes.length) & mask; ; slot = (slot + 1) & mask) {
      const i = this.index[slot]! - 1;
      if (i < 0) return -1;
      if (this.sameName(i, bytes, 0, bytes.length)) return i;
    }
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

  private sameName(i: number, bytes: Uint8Array, start: number, end: number): boolean {
    const a = this.nameStart[i]!;
    if (this.nameEnd[i]! - a !== end - start) return false;
    for (let k = 0; k < end - start; k++) if (this.nameBytes[a + k] !== bytes[start + k]) return false;
    return true;
  }
}
