/**
 * A set of names from a file (tensor names, metadata keys), found by their UTF-8 bytes. Names come
 * from whoever wrote the file, so the hash is keyed with a random per-process key (HalfSipHash-1-3,
 * the keyed hash Linux uses for its hash tables): with an unkeyed hash, names chosen to collide
 * made opening quadratic (30,000 of them, a 2 MB file, opened 40-57x slower than ordinary names).
 * A JS Set or Map would not do either: V8 hashes integer-like strings ("65536") by their value,
 * with no seed.
 */
import { randomFillSync } from '#platform/crypto';

// The key, drawn when first needed (not at module load, which a startup snapshot would freeze).
// From node:crypto, already loaded: the first touch of `globalThis.crypto` loads Web Crypto
// (0.9-2.9 ms here, in a process's first open).
let key: Int32Array | undefined;

/** This process's key (the addon's tensor-info walk hashes names with it too). */
export function hashKey(): Int32Array {
  key ??= randomFillSync(new Int32Array(2));
  return key;
}

/** HalfSipHash-1-3 of bytes [start, end) under this process's key, as an unsigned 32-bit number. */
export function keyedHash(bytes: Uint8Array, start: number, end: number): number {
  const k = hashKey();
  const k0 = k[0]!;
  const k1 = k[1]!;
  let v0 = k0;
  let v1 = k1;
  let v2 = 0x6c796765 ^ k0;
  let v3 = 0x74656462 ^ k1;
  const length = end - start;
  const words = length >>> 2;
  // One step per 4-byte word, one for the last 0-3 bytes with the length's low byte on top, then
  // three finalization rounds: one SipRound each (the 1 and the 3 of HalfSipHash-1-3).
  for (let step = 0; step < words + 4; step++) {
    let m = 0;
    if (step < words) {
      const i = start + step * 4;
      m = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    } else if (step === words) {
      const i = start + words * 4;
      const tail = length & 3;
      m = (length & 0xff) << 24;
      if (tail >= 3) m |= bytes[i + 2]! << 16;
      if (tail >= 2) m |= bytes[i + 1]! << 8;
      if (tail >= 1) m |= bytes[i]!;
    } else if (step === words + 1) {
      v2 ^= 0xff;
    }
    if (step <= words) v3 ^= m;
    v0 = (v0 + v1) | 0; v1 = (v1 << 5) | (v1 >>> 27); v1 ^= v0; v0 = (v0 << 16) | (v0 >>> 16);
    v2 = (v2 + v3) | 0; v3 = (v3 << 8) | (v3 >>> 24); v3 ^= v2;
    v0 = (v0 + v3) | 0; v3 = (v3 << 7) | (v3 >>> 25); v3 ^= v0;
    v2 = (v2 + v1) | 0; v1 = (v1 << 13) | (v1 >>> 19); v1 ^= v2; v2 = (v2 << 16) | (v2 >>> 16);
    if (step <= words) v0 ^= m;
  }
  return (v1 ^ v3) >>> 0;
}

/** Slots of an index of `capacity` entries: a power of two, at least twice as many. */
function slotCount(capacity: number): number {
  let size = 2;
  while (size < capacity * 2) size *= 2;
  return size;
}

/**
 * Names as ranges of one byte array (`bytes`, which must not change while the index is used),
 * numbered in the order added, in an open-addressing table at least twice their count.
 */
export class NameIndex {
  // Offsets into `bytes`: 32-bit while it is under 4 GiB (every tensor-name store, most headers).
  private readonly starts: Uint32Array | Float64Array;
  private readonly ends: Uint32Array | Float64Array;
  /** Each entry's keyedHash: compared before the bytes, and reused to look a name up in another index. */
  private readonly hashes: Uint32Array;
  private count = 0;
  /** Entry + 1 per slot (0: empty); a power of two. */
  private readonly slots: Int32Array;
  /** The longest run of slots one add() or find() has walked (for tests of hash flooding). */
  longestProbe = 0;

  /**
   * `words`: where the four arrays go while `bytes` is under 4 GiB (32-bit offsets, the usual
   * case), wordsFor(capacity) of them, zeros; else they are allocated here.
   */
  constructor(
    capacity: number,
    private readonly bytes: Uint8Array,
    words?: Uint32Array,
  ) {
    const size = slotCount(capacity);
    if (bytes.byteLength <= 0xffffffff) {
      // One allocation for the four.
      words ??= new Uint32Array(NameIndex.wordsFor(capacity));
      const { buffer, byteOffset } = words;
      this.starts = new Uint32Array(buffer, byteOffset, capacity);
      this.ends = new Uint32Array(buffer, byteOffset + capacity * 4, capacity);
      this.hashes = new Uint32Array(buffer, byteOffset + capacity * 8, capacity);
      this.slots = new Int32Array(buffer, byteOffset + capacity * 12, size);
    } else {
      this.starts = new Float64Array(capacity);
      this.ends = new Float64Array(capacity);
      this.hashes = new Uint32Array(capacity);
      this.slots = new Int32Array(size);
    }
  }

  /** 32-bit words the arrays of an index of `capacity` entries take (see the constructor). */
  static wordsFor(capacity: number): number {
    return capacity * 3 + slotCount(capacity);
  }

  start(entry: number): number {
    return this.starts[entry]!;
  }
  end(entry: number): number {
    return this.ends[entry]!;
  }
  /** Entry's keyedHash (one key for every index: findRange in another index takes it as is). */
  hash(entry: number): number {
    return this.hashes[entry]!;
  }

  /** Adds bytes [start, end) as the next entry; returns an earlier entry with the same bytes (then nothing is added), or -1. */
  add(start: number, end: number): number {
    const hash = keyedHash(this.bytes, start, end);
    const earlier = this.lookup(this.bytes, start, end, true, hash);
    if (earlier >= 0) return earlier;
    const entry = this.count++;
    this.starts[entry] = start;
    this.ends[entry] = end;
    this.hashes[entry] = hash;
    return -1;
  }

  /**
   * The arrays, for the addon's walk of tensor infos to add entries itself (the same hash, key and
   * probing, native/tensor_info_walk.cc); then `addedElsewhere` counts them.
   */
  get arrays(): { starts: Uint32Array | Float64Array; ends: Uint32Array | Float64Array; hashes: Uint32Array; slots: Int32Array } {
    return { starts: this.starts, ends: this.ends, hashes: this.hashes, slots: this.slots };
  }

  /** `count` entries were added through `arrays` (their hashes too), the longest probe `probes` slots. */
  addedElsewhere(count: number, probes: number): void {
    this.count += count;
    if (probes > this.longestProbe) this.longestProbe = probes;
  }

  /** The entry whose bytes are `name`'s, or -1. */
  find(name: Uint8Array): number {
    return this.lookup(name, 0, name.length, false);
  }

  /** The entry whose bytes are [start, end) of `source`, or -1; `hash` their keyedHash if known (one key for every index). */
  findRange(source: Uint8Array, start: number, end: number, hash = keyedHash(source, start, end)): number {
    return this.lookup(source, start, end, false, hash);
  }

  private lookup(source: Uint8Array, start: number, end: number, insert: boolean, hash = keyedHash(source, start, end)): number {
    const mask = this.slots.length - 1;
    let probes = 0;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      probes++;
      const entry = this.slots[slot]! - 1;
      if (entry < 0) {
        if (insert) this.slots[slot] = this.count + 1;
        if (probes > this.longestProbe) this.longestProbe = probes;
        return -1;
      }
      if (this.hashes[entry] === hash && this.same(entry, source, start, end)) return entry;
    }
  }

  private same(entry: number, source: Uint8Array, start: number, end: number): boolean {
    const a = this.starts[entry]!;
    if (this.ends[entry]! - a !== end - start) return false;
    const bytes = this.bytes;
    for (let k = 0; k < end - start; k++) if (bytes[a + k] !== source[start + k]) return false;
    return true;
  }
}
