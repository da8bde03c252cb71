/**
 * Strings of a file (token texts, merges) found by their bytes: an open-addressing table of ids
 * over byte ranges of the header, built in one pass with no per-string JS objects.
 *
 * The strings come from whoever wrote the file, so the table must not be floodable (see
 * format/name-index.ts). It first hashes with a fast seeded hash (murmur3's mixing, a random
 * per-process seed); if any insertion probes more than PROBE_LIMIT slots, which ordinary
 * vocabularies never do, it is rebuilt with the keyed HalfSipHash-1-3 that name-index uses.
 */
import { hashKey, keyedHash } from '../format/name-index.js';
import { indexStringsNative } from '#platform/native';

const PROBE_LIMIT = 48;

function fastHash(b: Uint8Array, start: number, end: number, seed: number): number {
  let h = seed ^ (end - start);
  let i = start;
  for (; i + 4 <= end; i += 4) {
    let k = b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = end - i;
  if (tail > 0) {
    let k = b[i]!;
    if (tail > 1) k |= b[i + 1]! << 8;
    if (tail > 2) k |= b[i + 2]! << 16;
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A GGUF STRING array's element bytes (as GgufArray.rawBytes gives them). */
export interface RawStrings {
  bytes: Uint8Array;
  littleEndian: boolean;
  wideCounts: boolean;
}

export class ByteIndex {
  /** Whether the table was rebuilt with the keyed hash (a probe ran past the limit). */
  keyed = false;
  private readonly seed: number;

  private constructor(
    private readonly bytes: Uint8Array,
    /** Where string i lies in `bytes`: [starts[i], ends[i]). */
    readonly starts: Uint32Array,
    readonly ends: Uint32Array,
    private readonly slots: Int32Array,
  ) {
    this.seed = seedOf();
  }

  /**
   * The index of a STRING array's `count` strings. Of equal strings it keeps the last id
   * (`keepLast`, as a C++ map assigned in order) or the first (as emplace). The addon walks and
   * hashes where it is loaded (the array of a 128k vocabulary in a few ms); else the same in JS.
   */
  static ofStrings(raw: RawStrings, count: number, keepLast: boolean, probeLimit = PROBE_LIMIT, useAddon = true): ByteIndex {
    let size = 16;
    while (size < count * 2) size *= 2;
    // One allocation for the three arrays.
    const buffer = new ArrayBuffer(count * 8 + size * 4);
    const starts = new Uint32Array(buffer, 0, count);
    const ends = new Uint32Array(buffer, count * 4, count);
    const slots = new Int32Array(buffer, count * 8, size);
    const index = new ByteIndex(raw.bytes, starts, ends, slots);
    const width = raw.wideCounts ? 8 : 4;
    const key = hashKey();
    let done = useAddon ? indexStringsNative(raw.bytes, count, width, raw.littleEndian, index.seed, key, 0, keepLast, probeLimit, starts, ends, slots) : undefined;
    if (done === -2) {
      slots.fill(0);
      index.keyed = true;
      done = indexStringsNative(raw.bytes, count, width, raw.littleEndian, index.seed, key, 1, keepLast, probeLimit, starts, ends, slots);
    }
    if (done === 0) return index;
    slots.fill(0);
    index.keyed = false;
    walk(raw, count, starts, ends);
    if (!index.build(count, keepLast, probeLimit)) {
      index.keyed = true;
      slots.fill(0);
      index.build(count, keepLast, probeLimit);
    }
    return index;
  }

  private hash(source: Uint8Array, start: number, end: number): number {
    return this.keyed ? keyedHash(source, start, end) : fastHash(source, start, end, this.seed);
  }

  private build(count: number, keepLast: boolean, probeLimit: number): boolean {
    const { slots, bytes, starts, ends } = this;
    const mask = slots.length - 1;
    const keyed = this.keyed;
    for (let id = 0; id < count; id++) {
      const a = starts[id]!;
      const b = ends[id]!;
      const h = keyed ? keyedHash(bytes, a, b) : fastHash(bytes, a, b, this.seed);
      let probes = 0;
      for (let slot = h & mask; ; slot = (slot + 1) & mask) {
        const other = slots[slot]! - 1;
        if (other < 0) {
          slots[slot] = id + 1;
          break;
        }
        if (this.same(other, bytes, a, b)) {
          if (keepLast) slots[slot] = id + 1;
          break;
        }
        if (++probes > probeLimit && !keyed) return false;
      }
    }
    return true;
  }

  private same(id: number, source: Uint8Array, start: number, end: number): boolean {
    const a = this.starts[id]!;
    const n = end - start;
    if (this.ends[id]! - a !== n) return false;
    const bytes = this.bytes;
    for (let k = 0; k < n; k++) if (bytes[a + k] !== source[start + k]) return false;
    return true;
  }

  /** The id of the string equal to bytes [start, end) of `source`, or -1. */
  find(source: Uint8Array, start: number, end: number): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let slot = this.hash(source, start, end) & mask; ; slot = (slot + 1) & mask) {
      const id = slots[slot]! - 1;
      if (id < 0) return -1;
      if (this.same(id, source, start, end)) return id;
    }
  }
}

function seedOf(): number {
  return hashKey()[1]! ^ 0x5bd1e995;
}

/** Each string's [start, end) in the array's bytes (the header parse checked every length). */
function walk(raw: RawStrings, count: number, starts: Uint32Array, ends: Uint32Array): void {
  const { bytes, littleEndian, wideCounts } = raw;
  const width = wideCounts ? 8 : 4;
  const low = littleEndian ? 0 : width - 4;
  let pos = 0;
  for (let i = 0; i < count; i++) {
    const p = pos + low;
    const length = littleEndian
      ? (bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24)) >>> 0
      : ((bytes[p]! << 24) | (bytes[p + 1]! << 16) | (bytes[p + 2]! << 8) | bytes[p + 3]!) >>> 0;
    pos += width;
    starts[i] = pos;
    pos += length;
    ends[i] = pos;
  }
}
