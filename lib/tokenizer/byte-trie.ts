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

/** Bytes the constructor sorts by (the rest of a run that shares them is sorted when first walked). */
const EAGER = 4;

export class ByteTrie {
  /** The texts, sorted by their first EAGER bytes (fully, in runs once walked), and their values. */
  private readonly starts: Uint32Array;
  private readonly lengths: Uint32Array;
  private readonly values: Int32Array;
  /** Runs equal in their first EAGER bytes, not yet sorted on: their end, at their start (else 0). */
  private readonly pending: Int32Array;
  /** Sorted texts starting with byte c: [firstStart[c], firstStart[c + 1]). */
  private readonly firstStart: Int32Array;
  /** Matches of the last walk(): their lengths, shortest first, and values. */
  readonly matchLengths: Int32Array;
  readonly matchValues: Int32Array;

  /**
   * Texts bytes[starts[k], ends[k]) with values values[k]; of equal texts the later one is found
   * (as naive_trie::insert overwrites). Empty texts are never matched.
   *
   * Sorting a 250 K-token vocabulary in full takes a few hundred ms (its reads are all over the
   * vocabulary); by its first bytes, in one pass over it and the engine's numeric sort, a tenth
   * of that. Runs that share those bytes ('▁th...') are sorted when a text first reaches them.
   */
  constructor(
    private readonly bytes: Uint8Array,
    starts: ArrayLike<number>,
    ends: ArrayLike<number>,
    values: ArrayLike<number>,
  ) {
    const count = starts.length;
    // A double: the first EAGER bytes in base 257 (0 where the text has ended), then the index.
    const indexScale = 2 ** Math.ceil(Math.log2(count + 1));
    const keys: number[] = [];
    let longest = 0;
    for (let k = 0; k < count; k++) {
      const s = starts[k]!;
      const length = ends[k]! - s;
      if (length <= 0) continue;
      if (length > longest) longest = length;
      let key = 0;
      for (let d = 0; d < EAGER; d++) key = key * 257 + (d < length ? bytes[s + d]! + 1 : 0);
      keys.push(key * indexScale + k);
    }
    const sorted = Float64Array.from(keys).sort();
    const n = sorted.length;
    this.starts = new Uint32Array(n);
    this.lengths = new Uint32Array(n);
    this.values = new Int32Array(n);
    this.pending = new Int32Array(n);
    const firstStart = new Int32Array(257);
    for (let i = 0; i < n; i++) {
      const k = sorted[i]! % indexScale;
      this.starts[i] = starts[k]!;
      this.lengths[i] = ends[k]! - starts[k]!;
      this.values[i] = values[k]!;
      firstStart[bytes[starts[k]!]! + 1]!++;
    }
    for (let c = 1; c <= 256; c++) firstStart[c]! += firstStart[c - 1]!;
    // Runs of the same first EAGER bytes, all of them that long (texts that end sooner are equal).
    for (let i = 0; i < n; ) {
      const key = Math.floor(sorted[i]! / indexScale);
      let j = i + 1;
      while (j < n && Math.floor(sorted[j]! / indexScale) === key) j++;
      if (j - i > 1 && key % 257 !== 0) this.pending[i] = j;
      i = j;
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
    // [lo, hi): the texts that start with text[at, at + d), in order (shorter first).
    for (let d = 1; ; d++) {
      if (d === EAGER && this.pending[lo] !== 0) this.sortRun(lo);
      if (lengths[lo] === d) {
        // Of equal texts (in the order given), the last.
        while (lo + 1 < hi && lengths[lo + 1] === d) lo++;
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

  /** Sorts the run that starts at `a` on its bytes past the first EAGER (a stable sort: equal texts keep their order). */
  private sortRun(a: number): void {
    const b = this.pending[a]!;
    this.pending[a] = 0;
    const order = sortTexts(this.bytes, this.starts, this.lengths, a, b, EAGER);
    const s = this.starts.slice(a, b);
    const l = this.lengths.slice(a, b);
    const v = this.values.slice(a, b);
    for (let i = 0; i < order.length; i++) {
      const k = order[i]! - a;
      this.starts[a + i] = s[k]!;
      this.lengths[a + i] = l[k]!;
      this.values[a + i] = v[k]!;
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

/**
 * Texts [a, b) (bytes[starts[i], starts[i] + lengths[i])), equal in their first `depth` bytes, in
 * byte order (a prefix first; equal texts in the order they were): their indexes. A radix sort
 * from the left, one byte a level, each run equal so far sorted again on its next byte, short
 * runs by insertion.
 */
function sortTexts(bytes: Uint8Array, starts: Uint32Array, lengths: Uint32Array, a0: number, b0: number, depth0: number): Int32Array {
  const order = new Int32Array(b0 - a0);
  for (let i = 0; i < order.length; i++) order[i] = a0 + i;
  const scratch = new Int32Array(order.length);
  // Per byte value + 1 (0: the text ends here), counts and then where each run goes.
  const counts = new Int32Array(257);
  const byteAt = (k: number, depth: number) => (depth < lengths[k]! ? bytes[starts[k]! + depth]! + 1 : 0);
  const stack: number[] = [0, order.length, depth0];
  while (stack.length > 0) {
    const depth = stack.pop()!;
    const b = stack.pop()!;
    const a = stack.pop()!;
    if (b - a <= 16) {
      // Insertion sort, stable.
      for (let i = a + 1; i < b; i++) {
        const k = order[i]!;
        let j = i;
        while (j > a && before(bytes, starts, lengths, k, order[j - 1]!, depth)) {
          order[j] = order[j - 1]!;
          j--;
        }
        order[j] = k;
      }
      continue;
    }
    counts.fill(0);
    for (let i = a; i < b; i++) counts[byteAt(order[i]!, depth)]!++;
    for (let c = 0, sum = a; c < 257; c++) {
      const n = counts[c]!;
      counts[c] = sum;
      // Runs that go on past this byte; texts that end here are equal, already in order.
      if (c > 0 && n > 1) stack.push(sum, sum + n, depth + 1);
      sum += n;
    }
    for (let i = a; i < b; i++) {
      const k = order[i]!;
      scratch[counts[byteAt(k, depth)]!++] = k;
    }
    order.set(scratch.subarray(a, b), a);
  }
  return order;
}

/** Whether text x sorts strictly before text y, both equal in their first `depth` bytes. */
function before(bytes: Uint8Array, starts: Uint32Array, lengths: Uint32Array, x: number, y: number, depth: number): boolean {
  const sx = starts[x]!;
  const sy = starts[y]!;
  const lx = lengths[x]!;
  const ly = lengths[y]!;
  const l = Math.min(lx, ly);
  for (let i = depth; i < l; i++) if (bytes[sx + i] !== bytes[sy + i]) return bytes[sx + i]! < bytes[sy + i]!;
  return lx < ly;
}
