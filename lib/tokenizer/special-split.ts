/**
 * Special and user-defined token texts split out of a text before it is tokenized, with llama.cpp's
 * result (tokenizer_st_partition): one token after the other, longest first, each taken from left
 * to right in the pieces of text the ones before left, its lstrip/rstrip flags dropping the
 * whitespace beside it.
 *
 * llama.cpp looks for each token in each piece with a search that runs on to the end of the text,
 * so a text with many pieces costs pieces times its length per token (400 KB of Qwen's [PAD...]
 * tokens: 4 s). Here one pass with a trie of the tokens finds where each occurs, and the bytes
 * taken so far are marked: a token is taken where it does not overlap a byte already taken (in
 * llama.cpp's terms, where it lies inside one piece, at or past the end of its previous match).
 * Where tokens that begin one another occur so often that their occurrences would outnumber the
 * text's bytes (runs of whitespace tokens), each token is searched for on its own instead.
 */
import { byteSearcher } from '#platform/bytes';
import { ByteTrie } from './byte-trie.js';
import { ATTR_LSTRIP, ATTR_RSTRIP } from './vocab.js';

/** A token id, or a range of the text still to be tokenized. */
export type Fragment = number | { offset: number; length: number };

export interface SpecialTokens {
  tokenBytes(id: number): Uint8Array;
  attr(id: number): number;
}

const isSpace = (b: number) => b === 0x20 || (b >= 0x09 && b <= 0x0d);

export class SpecialTokenSplitter {
  private readonly ids: Int32Array;
  private readonly texts: Uint8Array[];
  private readonly attrs: Int32Array;
  /** The tokens' texts; its values are their ranks (of equal texts, the first). */
  private readonly trie: ByteTrie;
  /** Bytes a token starts with. */
  private readonly firstBytes = new Uint8Array(256);

  /**
   * `ids` in the order llama.cpp applies them (the vocabulary's special tokens, longest first).
   * `maxOccurrences(n)`: how many occurrences a text of n bytes may have before each token is
   * searched for on its own.
   */
  constructor(
    ids: ArrayLike<number>,
    vocab: SpecialTokens,
    private readonly maxOccurrences = (n: number) => 2 * n + 4096,
  ) {
    this.ids = Int32Array.from(ids);
    this.texts = Array.from(this.ids, (id) => vocab.tokenBytes(id));
    this.attrs = Int32Array.from(this.ids, (id) => vocab.attr(id));
    let total = 0;
    for (const t of this.texts) total += t.length;
    const all = new Uint8Array(total);
    const count = this.ids.length;
    const starts = new Uint32Array(count);
    const ends = new Uint32Array(count);
    const ranks = new Int32Array(count);
    // Inserted last to first, so that of equal texts the first (which takes them all) is kept.
    for (let i = 0, at = 0; i < count; i++) {
      const rank = count - 1 - i;
      all.set(this.texts[rank]!, at);
      starts[i] = at;
      at += this.texts[rank]!.length;
      ends[i] = at;
      ranks[i] = rank;
      if (this.texts[rank]!.length > 0) this.firstBytes[this.texts[rank]![0]!] = 1;
    }
    this.trie = new ByteTrie(all, starts, ends, ranks);
  }

  split(bytes: Uint8Array): Fragment[] {
    const n = bytes.length;
    if (n === 0) return [];
    if (this.ids.length === 0) return [{ offset: 0, length: n }];
    // Per byte: 0 free, -1 taken by a token or dropped beside one, id + 1 where a token starts.
    let taken: Int32Array | undefined;
    /** Takes token `rank` at m unless that overlaps a taken byte; where its next occurrence may start. */
    const place = (rank: number, m: number): number => {
      const length = this.texts[rank]!.length;
      taken ??= new Int32Array(n);
      // The last taken byte it would cover: an occurrence before it overlaps it too.
      for (let i = m + length - 1; i >= m; i--) if (taken[i] !== 0) return i + 1;
      const attr = this.attrs[rank]!;
      // Whitespace before it in its piece (not before the piece: those bytes are taken).
      if (attr & ATTR_LSTRIP) for (let i = m - 1; i >= 0 && taken[i] === 0 && isSpace(bytes[i]!); i--) taken[i] = -1;
      taken.fill(-1, m + 1, m + length);
      taken[m] = this.ids[rank]! + 1;
      let right = m + length;
      if (attr & ATTR_RSTRIP) while (right < n && taken[right] === 0 && isSpace(bytes[right]!)) taken[right++] = -1;
      return right;
    };
    const found = this.occurrences(bytes);
    if (found !== undefined) {
      const { byRank, positions } = found;
      for (let rank = 0; rank < this.ids.length; rank++) {
        let from = 0;
        for (let k = byRank[rank]!; k < byRank[rank + 1]!; k++) {
          const m = positions[k]!;
          if (m >= from) from = place(rank, m);
        }
      }
    } else {
      const haystack = byteSearcher(bytes);
      for (let rank = 0; rank < this.ids.length; rank++) {
        const token = this.texts[rank]!;
        if (token.length === 0) continue;
        for (let m = haystack.indexOf(token); m >= 0; m = haystack.indexOf(token, place(rank, m))) {}
      }
    }
    if (taken === undefined) return [{ offset: 0, length: n }];
    const out: Fragment[] = [];
    let rawStart = -1;
    for (let i = 0; i < n; i++) {
      const t = taken[i]!;
      if (t === 0) {
        if (rawStart < 0) rawStart = i;
        continue;
      }
      if (rawStart >= 0) {
        out.push({ offset: rawStart, length: i - rawStart });
        rawStart = -1;
      }
      if (t > 0) out.push(t - 1);
    }
    if (rawStart >= 0) out.push({ offset: rawStart, length: n - rawStart });
    return out;
  }

  /**
   * Where each token occurs, in one pass: the positions of token `rank`, ascending, are
   * positions[byRank[rank], byRank[rank + 1]). Undefined past maxOccurrences.
   */
  private occurrences(bytes: Uint8Array): { byRank: Int32Array; positions: Int32Array } | undefined {
    const n = bytes.length;
    const limit = this.maxOccurrences(n);
    const trie = this.trie;
    const at: number[] = [];
    const ranks: number[] = [];
    const first = this.firstBytes;
    for (let p = 0; p < n; p++) {
      if (first[bytes[p]!] === 0) continue;
      const count = trie.walk(bytes, p, n);
      if (count === 0) continue;
      if (at.length + count > limit) return undefined;
      for (let k = 0; k < count; k++) {
        at.push(p);
        ranks.push(trie.matchValues[k]!);
      }
    }
    const byRank = new Int32Array(this.ids.length + 1);
    for (const r of ranks) byRank[r + 1]!++;
    for (let r = 1; r <= this.ids.length; r++) byRank[r]! += byRank[r - 1]!;
    const fill = byRank.slice(0, this.ids.length);
    const positions = new Int32Array(at.length);
    for (let k = 0; k < at.length; k++) positions[fill[ranks[k]!]!++] = at[k]!;
    return { byRank, positions };
  }
}
