/**
 * Unigram (llama.cpp's UGM session, T5 and friends): the text normalized by the precompiled
 * charsmap (SentencePiece's XOR-compressed double array of replacements), spaces as "▁", then the
 * best-scoring segmentation by Viterbi over the vocabulary; unknown characters cost the lowest
 * score minus 10, and runs of them become one unknown token.
 */
import { GgufError } from '../errors.js';
import { ByteTrie } from './byte-trie.js';
import { utf8Length } from './unicode.js';
import { ATTR_NORMAL, ATTR_UNUSED, ATTR_USER_DEFINED, type Vocabulary } from './vocab.js';

const SPACE_ESCAPE = [0xe2, 0x96, 0x81];

export class UgmSession {
  private readonly unknownScore: number;
  private readonly xcda: Uint32Array | undefined;
  private readonly replacements: Uint8Array | undefined;
  /** Normal, user-defined and unused tokens (llama.cpp's token_matcher). */
  private readonly tokens: ByteTrie;
  /** User-defined tokens (its user_defined_token_matcher), or undefined if there are none. */
  private readonly userDefined: ByteTrie | undefined;

  constructor(private readonly vocab: Vocabulary) {
    // One pass over the types for each (no per-token call: a 250 K-token vocabulary's first
    // encode builds this).
    const normal = vocab.idsWithAttr(ATTR_NORMAL);
    let min = Number.MAX_VALUE;
    const scores = vocab.scores;
    if (scores !== undefined) for (let i = 0; i < normal.length; i++) min = Math.min(min, Math.fround(scores[normal[i]!]!));
    else if (normal.length > 0) min = 0;
    // FLT_MAX when there is no normal token, as llama.cpp's float.
    if (min === Number.MAX_VALUE) min = 3.4028234663852886e38;
    this.unknownScore = Math.fround(min - 10);
    this.tokens = new ByteTrie(vocab.bytes, vocab.starts, vocab.ends, undefined, vocab.idsWithAttr(ATTR_NORMAL | ATTR_USER_DEFINED | ATTR_UNUSED));
    const userIds = vocab.idsWithAttr(ATTR_USER_DEFINED);
    this.userDefined = userIds.length === 0 ? undefined : new ByteTrie(vocab.bytes, vocab.starts, vocab.ends, undefined, userIds);
    const map = vocab.charsmap;
    if (map !== undefined && map.length > 0) {
      if (map.length < 4) throw new GgufError('UNSUPPORTED_TOKENIZER', 'precompiled_charsmap too small for its header', 0);
      const blob = new DataView(map.buffer, map.byteOffset, map.byteLength).getUint32(0, true);
      if (blob + 4 >= map.length) throw new GgufError('UNSUPPORTED_TOKENIZER', 'precompiled_charsmap: XCDA size past its end', 0);
      const words = blob >>> 2;
      const xcda = new Uint32Array(words);
      const view = new DataView(map.buffer, map.byteOffset + 4, blob);
      for (let i = 0; i < words; i++) xcda[i] = view.getUint32(i * 4, true);
      this.xcda = xcda;
      this.replacements = map.subarray(4 + blob);
    }
  }

  tokenize(text: Uint8Array, output: number[]): void {
    const vocab = this.vocab;
    const norm = this.normalize(text);
    const n = norm.length;
    if (n === 0) return;
    const unk = vocab.special.unk;
    const bestId = new Int32Array(n + 1).fill(unk);
    const bestFrom = new Int32Array(n + 1);
    const bestScore = new Float64Array(n + 1).fill(-Number.MAX_VALUE);
    bestScore[0] = 0;
    const trie = this.tokens;
    for (let at = 0; at < n; ) {
      const charLength = Math.min(utf8Length(norm[at]!), n - at);
      let singleFound = false;
      const base = bestScore[at]!;
      // The tokens that begin here, shortest first.
      const count = trie.walk(norm, at, n);
      for (let k = 0; k < count; k++) {
        const end = at + trie.matchLengths[k]!;
        const id = trie.matchValues[k]!;
        if (end - at === charLength) singleFound = true;
        const score = vocab.attr(id) & ATTR_USER_DEFINED ? 0 : Math.fround(vocab.score(id));
        const challenger = base + score;
        if (challenger > bestScore[end]!) {
          bestScore[end] = challenger;
          bestId[end] = id;
          bestFrom[end] = at;
        }
      }
      if (!singleFound) {
        const end = at + charLength;
        const challenger = base + this.unknownScore;
        if (challenger > bestScore[end]!) {
          bestScore[end] = challenger;
          bestId[end] = unk;
          bestFrom[end] = at;
        }
      }
      at += charLength;
    }
    const reversed: number[] = [];
    let prevUnknown = false;
    for (let at = n; ; at = bestFrom[at]!) {
      const id = bestId[at]!;
      const isUnknown = id === unk;
      if (!(prevUnknown && isUnknown)) reversed.push(id);
      if (bestFrom[at] === 0) break;
      prevUnknown = isUnknown;
    }
    for (let i = reversed.length - 1; i >= 0; i--) output.push(reversed[i]!);
  }

  private normalize(input: Uint8Array): Uint8Array {
    const vocab = this.vocab;
    const out: number[] = [];
    const space = vocab.escapeWhitespaces ? SPACE_ESCAPE : [0x20];
    const prepend = !vocab.treatWhitespaceAsSuffix && vocab.addSpacePrefix;
    const append = vocab.treatWhitespaceAsSuffix && vocab.addSpacePrefix;
    const merge = vocab.removeExtraWhitespaces;
    let prepended = false;
    let inWord = false;
    for (let at = 0; at < input.length; ) {
      const { bytes, consumed } = this.normalizePrefix(input, at);
      for (const c of bytes) {
        if (c !== 0x20) {
          if (!inWord) {
            inWord = true;
            if ((prepend && !prepended) || merge) {
              out.push(...space);
              prepended = true;
            }
          }
          out.push(c);
        } else {
          inWord = false;
          if (!merge) out.push(...space);
        }
      }
      at += consumed;
    }
    if (append) out.push(...space);
    return Uint8Array.from(out);
  }

  private normalizePrefix(input: Uint8Array, at: number): { bytes: Uint8Array; consumed: number } {
    // A user-defined token is kept as it is: as far as the text goes along one, as llama.cpp
    // does (its get_longest_prefix stops at the deepest node, a whole token or not).
    if (this.userDefined !== undefined) {
      const n = this.userDefined.deepest(input, at, input.length);
      if (n > 0) return { bytes: input.subarray(at, at + n), consumed: n };
    }
    const xcda = this.xcda;
    if (xcda !== undefined) {
      const node = (i: number) => {
        if (i >= xcda.length) throw new GgufError('UNSUPPORTED_TOKENIZER', 'precompiled_charsmap: index out of its array', 0);
        return xcda[i]!;
      };
      const baseOf = (p: number) => (p >>> 10) << ((p & (1 << 9)) >>> 6);
      let longest = 0;
      let replacementAt = 0;
      let index = baseOf(node(0));
      for (let p = at; p < input.length; p++) {
        const c = input[p]!;
        if (c === 0) break;
        index ^= c;
        const packed = node(index);
        if ((packed & (0x80000000 | 0xff)) >>> 0 !== c) break;
        const leaf = ((packed >>> 8) & 1) === 1;
        index ^= baseOf(packed);
        if (leaf) {
          longest = p - at + 1;
          replacementAt = node(index) & 0x7fffffff;
        }
      }
      if (longest > 0) {
        const r = this.replacements!;
        if (replacementAt >= r.length) throw new GgufError('UNSUPPORTED_TOKENIZER', 'precompiled_charsmap: replacement out of its array', 0);
        let end = replacementAt;
        while (end < r.length && r[end] !== 0) end++;
        if (end === r.length) throw new GgufError('UNSUPPORTED_TOKENIZER', 'precompiled_charsmap: unterminated replacement', 0);
        return { bytes: r.subarray(replacementAt, end), consumed: longest };
      }
    }
    const n = validUtf8Length(input, at);
    if (n === 0) return { bytes: Uint8Array.of(0xef, 0xbf, 0xbd), consumed: 1 };
    return { bytes: input.subarray(at, at + n), consumed: n };
  }
}

/** Length of the valid UTF-8 sequence at `at` (llama.cpp's checks), or 0. */
function validUtf8Length(b: Uint8Array, at: number): number {
  const c = b[at]!;
  if ((c & 0x80) === 0) return 1;
  if ((c & 0x40) === 0) return 0;
  const cont = (k: number) => at + k < b.length && (b[at + k]! & 0xc0) === 0x80;
  if ((c & 0x20) === 0) return cont(1) ? 2 : 0;
  if ((c & 0x10) === 0) return cont(1) && cont(2) ? 3 : 0;
  if ((c & 0x08) === 0) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}
