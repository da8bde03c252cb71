/**
 * The tokens that begin a text, found in time linear in the longest of them, as llama.cpp's
 * naive_trie finds them (Unigram and RWKV tokenizers, the special-token split): a lookup of each
 * prefix by hash costs its length, so a vocabulary with one 20 KB token made those tokenizers
 * cubic in the text.
 *
 * Compact rather than a node per byte: the texts in one array, each step narrows the range of
 * those that share the prefix read so far (by the first byte through a table, then by binary
 * search, then by comparing on once a single text is left). The order is made lazily, one byte
 * a level: the constructor places the texts by their first byte (a counting sort, two passes);
 * a range is put in order of its next byte when a walk first enters it. A walk pays for the
 * ranges on its path, each once: opening a 250 K-token Unigram vocabulary and encoding a
 * sentence orders a few of them, not the vocabulary (sorting it all at once was 150-300 ms of
 * the first encode), and all walks together never cost more than ordering every text in full.
 */

export class ByteTrie {
  private readonly starts: Uint32Array;
  private readonly ends: Uint32Array;
  private readonly values: ArrayLike<number> | undefined;
  /** The texts (indexes into starts, ends and values) in the order made so far. */
  private readonly order: Int32Array;
  /**
   * Ranges whose texts share their first d bytes, not yet in order of byte d: their end and d,
   * at their start (else 0). (A range and the first of its runs start at the same text: the
   * depth says which one is waiting.)
   */
  private readonly pending: Int32Array;
  private readonly pendingDepth: Uint32Array;
  /** Texts starting with byte c: [firstStart[c], firstStart[c + 1]). */
  private readonly firstStart: Int32Array;
  /** A range's texts during its ordering, and the counts of its byte values. */
  private readonly scratch: Int32Array;
  private readonly counts = new Int32Array(257);
  /** @internal Texts placed by orderRange so far, a pass each (for tests: the work done lazily). */
  placed = 0;
  /** Matches of the last walk(): their lengths, shortest first, and values. */
  readonly matchLengths: Int32Array;
  readonly matchValues: Int32Array;

  /**
   * Texts bytes[starts[k], ends[k]) with values values[k] (k itself without `values`), for each k
   * of `texts` (default: all), in that order; of equal texts the later one is found (as
   * naive_trie::insert overwrites). Empty texts are never matched. The arrays are kept, not
   * copied.
   */
  constructor(
    private readonly bytes: Uint8Array,
    starts: Uint32Array,
    ends: Uint32Array,
    values?: ArrayLike<number>,
    texts?: Int32Array,
  ) {
    this.starts = starts;
    this.ends = ends;
    this.values = values;
    const count = texts === undefined ? starts.length : texts.length;
    // By the first byte, stable (equal texts keep their order): counts, then places.
    const firstStart = new Int32Array(258);
    let longest = 0;
    for (let i = 0; i < count; i++) {
      const k = texts === undefined ? i : texts[i]!;
      const length = ends[k]! - starts[k]!;
      if (length <= 0) continue;
      if (length > longest) longest = length;
      firstStart[bytes[starts[k]!]! + 2]!++;
    }
    for (let c = 2; c <= 257; c++) firstStart[c]! += firstStart[c - 1]!;
    const n = firstStart[257]!;
    const order = new Int32Array(n);
    for (let i = 0; i < count; i++) {
      const k = texts === undefined ? i : texts[i]!;
      if (ends[k]! - starts[k]! > 0) order[firstStart[bytes[starts[k]!]! + 1]!++] = k;
    }
    this.order = order;
    this.pending = new Int32Array(n);
    this.pendingDepth = new Uint32Array(n);
    this.scratch = new Int32Array(n);
    // firstStart[c + 1] now ends byte c's range, which starts at firstStart[c].
    for (let c = 0; c < 256; c++) {
      if (firstStart[c + 1]! - firstStart[c]! > 1) {
        this.pending[firstStart[c]!] = firstStart[c + 1]!;
        this.pendingDepth[firstStart[c]!] = 1;
      }
    }
    this.firstStart = firstStart.subarray(0, 257);
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

  private value(k: number): number {
    return this.values === undefined ? k : this.values[k]!;
  }

  /** Reads text[at, end) along the texts: the matches (`record`) or how far it went. */
  private follow(text: Uint8Array, at: number, end: number, record: boolean): number {
    if (at >= end) return 0;
    const { bytes, starts, ends, order, pending } = this;
    let count = 0;
    let lo = this.firstStart[text[at]!]!;
    let hi = this.firstStart[text[at]! + 1]!;
    if (lo === hi) return 0;
    // [lo, hi): the texts that start with text[at, at + d), in order of byte d (those that end
    // at d first).
    for (let d = 1; ; d++) {
      if (pending[lo] !== 0 && this.pendingDepth[lo] === d) this.orderRange(lo, d);
      let k = order[lo]!;
      if (ends[k]! - starts[k]! === d) {
        // Of equal texts (in the order given), the last.
        while (lo + 1 < hi && ends[order[lo + 1]!]! - starts[order[lo + 1]!]! === d) k = order[++lo]!;
        if (record) {
          this.matchLengths[count] = d;
          this.matchValues[count++] = this.value(k);
        }
        lo++;
      }
      if (lo === hi || at + d >= end) return record ? count : d;
      if (hi - lo === 1) {
        // One text left: compare on.
        k = order[lo]!;
        const s = starts[k]!;
        const length = ends[k]! - s;
        const stop = Math.min(length, end - at);
        let i = d;
        while (i < stop && bytes[s + i] === text[at + i]) i++;
        if (!record) return i;
        if (i === length) {
          this.matchLengths[count] = length;
          this.matchValues[count++] = this.value(k);
        }
        return count;
      }
      const c = text[at + d]!;
      // (All of them going on with c, as texts with a long common prefix do: no search.)
      if (bytes[starts[order[lo]!]! + d] !== c || bytes[starts[order[hi - 1]!]! + d] !== c) {
        lo = bound(bytes, starts, order, lo, hi, d, c, false);
        hi = bound(bytes, starts, order, lo, hi, d, c, true);
        if (lo === hi) return record ? count : d;
      }
    }
  }

  /**
   * Puts the range that starts at `a` (texts equal in their first d bytes) in order of byte d,
   * stable (equal texts keep their order), those that end at d first; marks each run of one byte
   * value for the next level. Bytes the whole range shares are passed over with a count alone:
   * the range is in order of them as it is.
   */
  private orderRange(a: number, d: number): void {
    const b = this.pending[a]!;
    this.pending[a] = 0;
    const { bytes, starts, ends, order, scratch, counts } = this;
    // Per byte value + 1 (0: the text ends here).
    for (; ; d++) {
      this.placed += b - a;
      counts.fill(0);
      for (let i = a; i < b; i++) {
        const k = order[i]!;
        const s = starts[k]!;
        counts[ends[k]! - s > d ? bytes[s + d]! + 1 : 0]!++;
      }
      if (counts[0] !== 0 || counts[bytes[starts[order[a]!]! + d]! + 1] !== b - a) break;
    }
    for (let c = 0, sum = a; c < 257; c++) {
      const m = counts[c]!;
      counts[c] = sum;
      if (c > 0 && m > 1) {
        this.pending[sum] = sum + m;
        this.pendingDepth[sum] = d + 1;
      }
      sum += m;
    }
    for (let i = a; i < b; i++) {
      const k = order[i]!;
      const s = starts[k]!;
      scratch[counts[ends[k]! - s > d ? bytes[s + d]! + 1 : 0]!++] = k;
    }
    order.set(scratch.subarray(a, b), a);
  }
}

/** The first of the ordered texts [lo, hi) whose byte d is above c (`above`), or at least c. */
function bound(bytes: Uint8Array, starts: Uint32Array, order: Int32Array, lo: number, hi: number, d: number, c: number, above: boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const b = bytes[starts[order[mid]!]! + d]!;
    if (b < c || (above && b === c)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
