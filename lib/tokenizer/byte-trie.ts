/**
 * The tokens that begin a text, found in time linear in the longest of them, as llama.cpp's
 * naive_trie finds them (Unigram and RWKV tokenizers, the special-token split): a lookup of each
 * prefix by hash costs its length, so a vocabulary with one 20 KB token made those tokenizers
 * cubic in the text.
 *
 * Compact rather than a node per byte: the texts in one array, each step narrows the range of
 * those that share the prefix read so far (by the first byte or two through a table, then by
 * binary search, then by comparing on once a single text is left). The order is made lazily, one
 * byte a level: the constructor places the texts by their first byte or two (a counting sort,
 * two passes); a range is put in order of its next byte when a walk first enters it. A walk pays for the
 * ranges on its path, each once: opening a 250 K-token Unigram vocabulary and encoding a
 * sentence orders a few of them, not the vocabulary (sorting it all at once was 150-300 ms of
 * the first encode), and all walks together never cost more than ordering every text in full.
 */

// A row of `rows` per text, in the order made so far: where the text starts in `bytes`, its
// length, its index (for its value), and, for a range not yet ordered that starts at this row,
// the range's end and depth. One row together: a step of a walk reads one place, not five arrays.
const START = 0;
const LENGTH = 1;
const INDEX = 2;
const PENDING_END = 3;
const PENDING_DEPTH = 4;
const ROW = 5;

export class ByteTrie {
  private readonly values: ArrayLike<number> | undefined;
  /**
   * The rows (see ROW). PENDING_END and PENDING_DEPTH of row i: a range [i, end) whose texts
   * share their first d bytes, not yet in order of byte d (0 where none starts). (A range and the
   * first of its runs start at the same row: the depth says which one is waiting.)
   */
  private readonly rows: Uint32Array;
  /**
   * Texts whose key is c: rows [firstStart[c], firstStart[c + 1]). The key is the first byte, or
   * the first two (keyBytes 2: first * 257 + second + 1, or + 0 for a text of one byte).
   */
  private readonly firstStart: Int32Array;
  private readonly keyBytes: 1 | 2;
  /**
   * @internal Texts from which the first two bytes are the key: the constructor's table is then
   * 256 * 257 entries (it would cost more than it saves for the few special tokens), and a range
   * like Unigram's '▁' (0xe2 0x96 0x81, most of its 250 K tokens) is ordered from its third byte.
   */
  static twoBytesFrom = 4096;
  /** The counts of a range's byte values during its ordering. */
  private readonly counts = new Int32Array(257);
  /** @internal Texts placed by orderRange so far, a pass each (for tests: the work done lazily). */
  placed = 0;
  /** Matches of the last walk(): their lengths, shortest first, and values. */
  readonly matchLengths: Int32Array;
  readonly matchValues: Int32Array;

  /**
   * Texts bytes[starts[k], ends[k]) with values values[k] (k itself without `values`, which is
   * kept, not copied), for each k of `texts` (default: all), in that order; of equal texts the
   * later one is found (as naive_trie::insert overwrites). Empty texts are never matched.
   */
  constructor(
    private readonly bytes: Uint8Array,
    starts: ArrayLike<number>,
    ends: ArrayLike<number>,
    values?: ArrayLike<number>,
    texts?: ArrayLike<number>,
  ) {
    this.values = values;
    const count = texts === undefined ? starts.length : texts.length;
    // Placed by the first byte (or two: see twoBytesFrom), stable (equal texts keep their
    // order): counts, then places. Key: the first byte, or first * 257 + (second + 1, 0 for a
    // text of one byte).
    const two = count >= ByteTrie.twoBytesFrom;
    this.keyBytes = two ? 2 : 1;
    const keys = two ? 256 * 257 : 256;
    const keyOf = (s: number, length: number) => (two ? bytes[s]! * 257 + (length > 1 ? bytes[s + 1]! + 1 : 0) : bytes[s]!);
    const firstStart = new Int32Array(keys + 2);
    let longest = 0;
    for (let i = 0; i < count; i++) {
      const k = texts === undefined ? i : texts[i]!;
      const length = ends[k]! - starts[k]!;
      if (length <= 0) continue;
      if (length > longest) longest = length;
      firstStart[keyOf(starts[k]!, length) + 2]!++;
    }
    for (let c = 2; c <= keys + 1; c++) firstStart[c]! += firstStart[c - 1]!;
    const n = firstStart[keys + 1]!;
    const rows = new Uint32Array(n * ROW);
    for (let i = 0; i < count; i++) {
      const k = texts === undefined ? i : texts[i]!;
      const s = starts[k]!;
      const length = ends[k]! - s;
      if (length <= 0) continue;
      const r = firstStart[keyOf(s, length) + 1]!++ * ROW;
      rows[r + START] = s;
      rows[r + LENGTH] = length;
      rows[r + INDEX] = k;
    }
    // firstStart[c + 1] now ends key c's range, which starts at firstStart[c]; each range of
    // more than one text waits for its order by the byte after the key's (texts of one byte,
    // key % 257 === 0 with two, are equal).
    for (let c = 0; c < keys; c++) {
      if (firstStart[c + 1]! - firstStart[c]! > 1 && !(two && c % 257 === 0)) {
        rows[firstStart[c]! * ROW + PENDING_END] = firstStart[c + 1]!;
        rows[firstStart[c]! * ROW + PENDING_DEPTH] = this.keyBytes;
      }
    }
    this.rows = rows;
    this.firstStart = firstStart.subarray(0, keys + 1);
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

  private value(row: number): number {
    const k = this.rows[row * ROW + INDEX]!;
    return this.values === undefined ? k : this.values[k]!;
  }

  /** Reads text[at, end) along the texts: the matches (`record`) or how far it went. */
  private follow(text: Uint8Array, at: number, end: number, record: boolean): number {
    if (at >= end) return 0;
    const { bytes, rows } = this;
    let count = 0;
    const table = this.firstStart;
    let lo: number;
    let hi: number;
    let d = 1;
    if (this.keyBytes === 1) {
      lo = table[text[at]!]!;
      hi = table[text[at]! + 1]!;
      if (lo === hi) return 0;
    } else {
      const key = text[at]! * 257;
      if (table[key] === table[key + 257]) return 0;
      // The one-byte text (the last of equal ones), then the texts going on with the next byte.
      if (table[key] !== table[key + 1]) {
        if (record) {
          this.matchLengths[count] = 1;
          this.matchValues[count++] = this.value(table[key + 1]! - 1);
        }
      }
      if (at + 1 >= end) return record ? count : 1;
      lo = table[key + text[at + 1]! + 1]!;
      hi = table[key + text[at + 1]! + 2]!;
      if (lo === hi) return record ? count : 1;
      d = 2;
    }
    for (; ; d++) {
      if (rows[lo * ROW + PENDING_END] !== 0 && rows[lo * ROW + PENDING_DEPTH] === d) this.orderRange(lo, d);
      if (rows[lo * ROW + LENGTH] === d) {
        // Of equal texts (in the order given), the last.
        while (lo + 1 < hi && rows[(lo + 1) * ROW + LENGTH] === d) lo++;
        if (record) {
          this.matchLengths[count] = d;
          this.matchValues[count++] = this.value(lo);
        }
        lo++;
      }
      if (lo === hi || at + d >= end) return record ? count : d;
      if (hi - lo === 1) {
        // One text left: compare on.
        const s = rows[lo * ROW + START]!;
        const length = rows[lo * ROW + LENGTH]!;
        const stop = Math.min(length, end - at);
        let i = d;
        while (i < stop && bytes[s + i] === text[at + i]) i++;
        if (!record) return i;
        if (i === length) {
          this.matchLengths[count] = length;
          this.matchValues[count++] = this.value(lo);
        }
        return count;
      }
      const c = text[at + d]!;
      // (All of them going on with c, as texts with a long common prefix do: no search.)
      if (bytes[rows[lo * ROW + START]! + d] !== c || bytes[rows[(hi - 1) * ROW + START]! + d] !== c) {
        lo = bound(bytes, rows, lo, hi, d, c, false);
        hi = bound(bytes, rows, lo, hi, d, c, true);
        if (lo === hi) return record ? count : d;
      }
    }
  }

  /**
   * Puts the range that starts at row `a` (texts equal in their first d bytes) in order of byte
   * d, stable (equal texts keep their order), those that end at d first; marks each run of one
   * byte value for the next level. Bytes the whole range shares are passed over with a count
   * alone: the range is in order of them as it is.
   */
  private orderRange(a: number, d: number): void {
    const { bytes, rows, counts } = this;
    const b = rows[a * ROW + PENDING_END]!;
    rows[a * ROW + PENDING_END] = 0;
    rows[a * ROW + PENDING_DEPTH] = 0;
    // Per byte value + 1 (0: the text ends here).
    for (; ; d++) {
      this.placed += b - a;
      counts.fill(0);
      for (let r = a * ROW; r < b * ROW; r += ROW) counts[rows[r + LENGTH]! > d ? bytes[rows[r + START]! + d]! + 1 : 0]!++;
      if (counts[0] !== 0 || counts[bytes[rows[a * ROW + START]! + d]! + 1] !== b - a) break;
    }
    for (let c = 0, sum = a; c < 257; c++) {
      const m = counts[c]!;
      counts[c] = sum - a;
      if (c > 0 && m > 1) {
        rows[sum * ROW + PENDING_END] = sum + m;
        rows[sum * ROW + PENDING_DEPTH] = d + 1;
      }
      sum += m;
    }
    // The range's rows (START, LENGTH, INDEX) in their new order, then back.
    const scratch = new Uint32Array((b - a) * 3);
    for (let r = a * ROW; r < b * ROW; r += ROW) {
      const s = rows[r + START]!;
      const length = rows[r + LENGTH]!;
      const to = counts[length > d ? bytes[s + d]! + 1 : 0]!++ * 3;
      scratch[to] = s;
      scratch[to + 1] = length;
      scratch[to + 2] = rows[r + INDEX]!;
    }
    for (let i = 0, r = a * ROW; i < (b - a) * 3; i += 3, r += ROW) {
      rows[r + START] = scratch[i]!;
      rows[r + LENGTH] = scratch[i + 1]!;
      rows[r + INDEX] = scratch[i + 2]!;
    }
  }
}

/** The first of the ordered texts [lo, hi) whose byte d is above c (`above`), or at least c. */
function bound(bytes: Uint8Array, rows: Uint32Array, lo: number, hi: number, d: number, c: number, above: boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const b = bytes[rows[mid * ROW + START]! + d]!;
    if (b < c || (above && b === c)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
