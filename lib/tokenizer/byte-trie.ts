/**
 * The tokens that begin a text, found in time linear in the longest of them, as llama.cpp's
 * naive_trie finds them (Unigram and RWKV tokenizers, the special-token split): a lookup of each
 * prefix by hash costs its length, so a vocabulary with one 20 KB token made those tokenizers
 * cubic in the text.
 *
 * Compact rather than a node per byte: the texts sorted, each step narrows the range of those
 * that share the prefix read so far (by the first byte through a table, then by binary search,
 * then by comparing on once a single text is left).
 */

export class ByteTrie {
  /** The sorted texts (of equal ones the last) and their values. */
  private readonly starts: Uint32Array;
  private readonly lengths: Uint32Array;
  private readonly values: Int32Array;
  /** Sorted texts starting with byte c: [firstStart[c], firstStart[c + 1]). */
  private readonly firstStart: Int32Array;
  /** Matches of the last walk(): their lengths, shortest first, and values. */
  readonly matchLengths: Int32Array;
  readonly matchValues: Int32Array;

  /**
   * Texts bytes[starts[k], ends[k]) with values values[k]; of equal texts the later one is kept
   * (as naive_trie::insert overwrites). Empty texts are never matched.
   */
  constructor(
    private readonly bytes: Uint8Array,
    starts: ArrayLike<number>,
    ends: ArrayLike<number>,
    values: ArrayLike<number>,
  ) {
    const order = sortTexts(bytes, starts, ends);
    const firstStart = new Int32Array(257);
    const kept: number[] = [];
    let longest = 0;
    for (let i = 0; i < order.length; i++) {
      const k = order[i]!;
      const s = starts[k]!;
      const length = ends[k]! - s;
      if (length > longest) longest = length;
      const next = i + 1 < order.length ? order[i + 1]! : -1;
      if (next >= 0 && ends[next]! - starts[next]! === length && equalBytes(bytes, s, starts[next]!, length)) continue; // a later equal text follows
      kept.push(k);
      firstStart[bytes[s]! + 1]!++;
    }
    for (let c = 1; c <= 256; c++) firstStart[c]! += firstStart[c - 1]!;
    this.starts = new Uint32Array(kept.length);
    this.lengths = new Uint32Array(kept.length);
    this.values = new Int32Array(kept.length);
    for (let i = 0; i < kept.length; i++) {
      const k = kept[i]!;
      this.starts[i] = starts[k]!;
      this.lengths[i] = ends[k]! - starts[k]!;
      this.values[i] = values[k]!;
    }
    this.firstStart = firstStart;
    this.matchLengths = new Int32Array(longest + 1);
    this.matchValues = new Int32Array(longest + 1);
  }

  /**
   * The texts that begin text[at, end): their number; their lengths (shortest first) and values
   * in matchLengths and matchValues.
   */
  walk(text: Uint8Array, at: number, end: number): number {
    return this.follow(text, at, end, true);
  }

  /**
   * How far text[at, end) goes along some text: the length of its longest prefix that begins a
   * text, a whole one or not (llama.cpp's naive_trie::get_longest_prefix, which stops at the
   * deepest node it reaches).
   */
  deepest(text: Uint8Array, at: number, end: number): number {
    return this.follow(text, at, end, false);
  }

  /** The length of the longest text that begins text[at, end) (0 if none); its value in matchValues[0]. */
  longest(text: Uint8Array, at: number, end: number): number {
    const count = this.walk(text, at, end);
    if (count === 0) return 0;
    this.matchValues[0] = this.matchValues[count - 1]!;
    return this.matchLengths[count - 1]!;
  }

  /** Reads text[at, end) along the texts: the matches (`record`) or how far it went. */
  private follow(text: Uint8Array, at: number, end: number, record: boolean): number {
    if (at >= end) return 0;
    const bytes = this.bytes;
    const starts = this.starts;
    const lengths = this.lengths;
    let count = 0;
    let lo = this.firstStart[text[at]!]!;
    let hi = this.firstStart[text[at]! + 1]!;
    if (lo === hi) return 0;
    // [lo, hi): the texts that start with text[at, at + d).
    for (let d = 1; ; d++) {
      if (lengths[lo] === d) {
        if (record) {
          this.matchLengths[count] = d;
          this.matchValues[count++] = this.values[lo]!;
        }
        lo++;
      }
      if (lo === hi || at + d >= end) return record ? count : d;
      if (hi - lo === 1) {
        // One text left: compare on.
        const s = starts[lo]!;
        const length = lengths[lo]!;
        const stop = Math.min(length, end - at);
        let i = d;
        while (i < stop && bytes[s + i] === text[at + i]) i++;
        if (!record) return i;
        if (i === length) {
          this.matchLengths[count] = length;
          this.matchValues[count++] = this.values[lo]!;
        }
        return count;
      }
      const c = text[at + d]!;
      // (All of them going on with c, as texts with a long common prefix do: no search.)
      if (bytes[starts[lo]! + d] !== c || bytes[starts[hi - 1]! + d] !== c) {
        lo = bound(bytes, starts, lo, hi, d, c, false);
        hi = bound(bytes, starts, lo, hi, d, c, true);
        if (lo === hi) return record ? count : d;
      }
    }
  }
}

/** The first of the sorted texts [lo, hi) whose byte d is above c (`above`), or at least c. */
function bound(bytes: Uint8Array, starts: Uint32Array, lo: number, hi: number, d: number, c: number, above: boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const b = bytes[starts[mid]! + d]!;
    if (b < c || (above && b === c)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function equalBytes(bytes: Uint8Array, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (bytes[a + i] !== bytes[b + i]) return false;
  return true;
}

/**
 * The non-empty texts in byte order (a prefix first; equal texts by index), by their indexes. A
 * radix sort from the left with the engine's numeric sort: a few bytes at a time packed in a
 * double with the index, again on the next bytes for each run that is equal so far (a comparator
 * sort of a 250 K-token vocabulary took most of a second).
 */
function sortTexts(bytes: Uint8Array, starts: ArrayLike<number>, ends: ArrayLike<number>): Int32Array {
  const all: number[] = [];
  for (let k = 0; k < starts.length; k++) if (ends[k]! > starts[k]!) all.push(k);
  const order = Int32Array.from(all);
  const n = order.length;
  // The index in the low bits; as many bytes (base 257: 0 where the text has ended) as fit above it in 53 bits.
  const indexScale = 2 ** Math.ceil(Math.log2(starts.length + 1));
  const digits = Math.max(1, Math.floor(Math.log(2 ** 53 / indexScale) / Math.log(257)));
  const keys = new Float64Array(n);
  const stack: number[] = [0, n, 0];
  while (stack.length > 0) {
    const depth = stack.pop()!;
    const b = stack.pop()!;
    const a = stack.pop()!;
    if (b - a <= 12) {
      insertionSort(bytes, starts, ends, order, a, b, depth);
      continue;
    }
    for (let i = a; i < b; i++) {
      const k = order[i]!;
      const s = starts[k]! + depth;
      const left = ends[k]! - s;
      let key = 0;
      for (let d = 0; d < digits; d++) key = key * 257 + (d < left ? bytes[s + d]! + 1 : 0);
      keys[i] = key * indexScale + k;
    }
    const run = keys.subarray(a, b);
    run.sort();
    for (let i = a; i < b; i++) order[i] = keys[i]! % indexScale;
    // Runs equal in these bytes whose texts go on past them: sorted on the next bytes.
    for (let i = a; i < b; ) {
      const key = Math.floor(keys[i]! / indexScale);
      let j = i + 1;
      while (j < b && Math.floor(keys[j]! / indexScale) === key) j++;
      if (j - i > 1 && key % 257 !== 0) stack.push(i, j, depth + digits);
      i = j;
    }
  }
  return order;
}

/** A short run, equal in its first `depth` bytes, sorted by comparing the rest. */
function insertionSort(bytes: Uint8Array, starts: ArrayLike<number>, ends: ArrayLike<number>, order: Int32Array, a: number, b: number, depth: number): void {
  const before = (x: number, y: number): boolean => {
    const sx = starts[x]!;
    const sy = starts[y]!;
    const lx = ends[x]! - sx;
    const ly = ends[y]! - sy;
    const l = Math.min(lx, ly);
    for (let i = depth; i < l; i++) if (bytes[sx + i] !== bytes[sy + i]) return bytes[sx + i]! < bytes[sy + i]!;
    return lx < ly || (lx === ly && x < y);
  };
  for (let i = a + 1; i < b; i++) {
    const k = order[i]!;
    let j = i;
    while (j > a && before(k, order[j - 1]!)) {
      order[j] = order[j - 1]!;
      j--;
    }
    order[j] = k;
  }
}
