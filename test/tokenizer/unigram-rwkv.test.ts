// Unigram (t5) and RWKV vocabularies find the tokens that begin each position with a trie, in
// time linear in the match: a 20 KB token made them cubic in the text (10 KB: minutes). Checked
// against straightforward implementations (every substring looked up) on random vocabularies,
// and against ids recorded from llama.cpp v0.5.0.
import { describe, expect, it } from 'vitest';
import { encodeGguf, parseGguf, type GgufWriteValue } from '../../lib/index.js';

const strings = (value: string[]): GgufWriteValue => ({ type: 'ARRAY', arrayType: 'STRING', value });
const str = (value: string): GgufWriteValue => ({ type: 'STRING', value });
const enc = new TextEncoder();
const latin = (b: Uint8Array) => Buffer.from(b).toString('latin1');

/** A t5 vocabulary: <pad> </s> <unk>, then `words` (type 1 normal, 4 user-defined) scored -id. */
function t5(words: string[], types: number[] = words.map(() => 1)) {
  const tokens = ['<pad>', '</s>', '<unk>', ...words];
  return parseGguf(
    encodeGguf({
      metadata: {
        'general.architecture': str('t5'),
        'tokenizer.ggml.model': str('t5'),
        'tokenizer.ggml.tokens': strings(tokens),
        'tokenizer.ggml.scores': { type: 'ARRAY', arrayType: 'FLOAT32', value: tokens.map((_, i) => -i) },
        'tokenizer.ggml.token_type': { type: 'ARRAY', arrayType: 'INT32', value: [3, 3, 2, ...types] },
      },
    }),
  ).tokenizer();
}

function rwkv(words: string[]) {
  return parseGguf(encodeGguf({ metadata: { 'tokenizer.ggml.model': str('rwkv'), 'tokenizer.ggml.tokens': strings(['<unk>', ...words]) } })).tokenizer();
}

/**
 * llama.cpp's Unigram tokenization written out for vocabularies without a charsmap (spaces as
 * U+2581, no space prefix): user-defined tokens split out first (longest first, left to right),
 * then in each piece the best score by Viterbi over every substring looked up in a map, per
 * character an unknown token at the lowest normal score - 10 where no one-character token is,
 * runs of unknown tokens as one.
 */
function unigramReference(words: string[], types: number[], text: string): number[] {
  let pieces: Array<string | number> = [text];
  const userDefined = words.map((w, i) => i).filter((i) => types[i] === 4);
  userDefined.sort((x, y) => enc.encode(words[y]!).length - enc.encode(words[x]!).length || x - y);
  for (const i of userDefined) {
    pieces = pieces.flatMap((p) => (typeof p === 'number' ? [p] : p.split(words[i]!).flatMap((part, k) => (k === 0 ? [part] : [i + 3, part]))));
  }
  return pieces.flatMap((p) => (typeof p === 'number' ? [p] : p === '' ? [] : viterbi(words, types, p)));
}

function viterbi(words: string[], types: number[], text: string): number[] {
  const ids = new Map<string, number>();
  words.forEach((w, i) => ids.set(latin(enc.encode(w)), i + 3));
  const score = (id: number) => (types[id - 3] === 4 ? 0 : Math.fround(-id));
  const unknown = Math.fround(Math.min(...words.map((_, i) => (types[i] === 1 ? Math.fround(-(i + 3)) : Infinity))) - 10);
  const norm = enc.encode(text.replaceAll(' ', '\u2581'));
  const longest = Math.max(...words.map((w) => enc.encode(w).length));
  const n = norm.length;
  const best = Array.from({ length: n + 1 }, () => ({ score: -Number.MAX_VALUE, id: 2, from: 0 }));
  best[0]!.score = 0;
  for (let at = 0; at < n; ) {
    const c = norm[at]!;
    const charLength = Math.min(c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4, n - at);
    let single = false;
    for (let end = at + 1; end <= Math.min(n, at + longest); end++) {
      const id = ids.get(latin(norm.subarray(at, end)));
      if (id === undefined) continue;
      if (end - at === charLength) single = true;
      const s = best[at]!.score + score(id);
      if (s > best[end]!.score) best[end] = { score: s, id, from: at };
    }
    if (!single) {
      const s = best[at]!.score + unknown;
      if (s > best[at + charLength]!.score) best[at + charLength] = { score: s, id: 2, from: at };
    }
    at += charLength;
  }
  const out: number[] = [];
  for (let at = n; at > 0; at = best[at]!.from) {
    const id = best[at]!.id;
    if (!(id === 2 && out[out.length - 1] === 2)) out.push(id);
  }
  return out.reverse();
}

/** RWKV: the longest token at each position (every length looked up), else an unknown byte (no unknown token: -1, as llama.cpp's LLAMA_TOKEN_NULL). */
function rwkvReference(words: string[], text: string): number[] {
  const ids = new Map<string, number>();
  words.forEach((w, i) => ids.set(latin(enc.encode(w)), i + 1));
  const b = latin(enc.encode(text));
  const out: number[] = [];
  for (let at = 0; at < b.length; ) {
    let length = b.length - at;
    while (length > 0 && !ids.has(b.slice(at, at + length))) length--;
    out.push(length === 0 ? -1 : ids.get(b.slice(at, at + length))!);
    at += Math.max(1, length);
  }
  return out;
}

function random(seed: number) {
  let s = seed;
  return (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) % n;
  };
}

describe('Unigram and RWKV: the same tokens as every substring looked up', () => {
  // Letters, a space, an unknown letter, and two-, three- and four-byte characters.
  const alphabet = ['a', 'b', 'c', ' ', 'z', 'é', '中', '\u{1f600}'];
  const words = (next: (n: number) => number) => {
    const set = new Set<string>();
    for (let k = 4 + next(20); k > 0; k--) set.add(Array.from({ length: 1 + next(next(4) === 0 ? 12 : 4) }, () => alphabet[next(alphabet.length)]!.replace(' ', '\u2581').replace('z', 'a')).join(''));
    return [...set];
  };
  const text = (next: (n: number) => number) => Array.from({ length: next(30) }, () => alphabet[next(alphabet.length)]).join('');

  it('Unigram: 100 random vocabularies (normal and user-defined tokens), 20 texts each', () => {
    const next = random(5);
    for (let round = 0; round < 100; round++) {
      const w = words(next);
      // User-defined tokens of ASCII letters only: they end on a character, as the reference assumes.
      const types = w.map((x) => (/^[abc]+$/.test(x) && next(4) === 0 ? 4 : 1));
      const tok = t5(w, types);
      for (let k = 0; k < 20; k++) {
        const t = text(next);
        expect(Array.from(tok.encode(t, { addSpecial: false })), JSON.stringify({ w, types, t })).toEqual(unigramReference(w, types, t));
      }
    }
  });

  it('RWKV: 150 random vocabularies, 20 texts each', () => {
    const next = random(6);
    for (let round = 0; round < 150; round++) {
      const w = words(next).map((x) => x.replaceAll('\u2581', ' '));
      const tok = rwkv(w);
      for (let k = 0; k < 20; k++) {
        const t = text(next);
        expect(Array.from(tok.encode(t, { addSpecial: false })), JSON.stringify({ w, t })).toEqual(rwkvReference(w, t));
      }
    }
  });
});

describe('a 20 KB token: linear in the match (10 KB of text took minutes)', () => {
  const long = 'a'.repeat(20_000);

  it('Unigram (ids as llama.cpp v0.5.0 gives them)', { timeout: 120_000 }, () => {
    const tok = t5(['\u2581', 'a', 'aa', 'b', long]);
    const runs = (text: string) => {
      const out: Array<[number, number]> = [];
      for (const id of tok.encode(text, { addSpecial: false })) {
        const last = out[out.length - 1];
        if (last !== undefined && last[0] === id) last[1]++;
        else out.push([id, 1]);
      }
      return out;
    };
    expect(runs('a'.repeat(10_000))).toEqual([[5, 5000]]);
    expect(runs(long + 'b')).toEqual([[7, 1], [6, 1]]);
    expect(runs('b' + long + 'a')).toEqual([[6, 1], [4, 1], [7, 1]]);
    expect(runs('aaa b')).toEqual([[4, 1], [5, 1], [3, 1], [6, 1]]);
  });

  it('RWKV', { timeout: 120_000 }, () => {
    const tok = rwkv(['a', 'aa', 'b', long]);
    const ids = tok.encode('a'.repeat(10_000), { addSpecial: false });
    expect(ids.length).toBe(5000);
    expect(ids.every((id) => id === 2)).toBe(true);
    expect(Array.from(tok.encode(long + 'ab', { addSpecial: false }))).toEqual([4, 1, 3]);
  });
});

describe('Unigram: a user-defined token is kept as far as the text goes along it (recorded from llama.cpp v0.5.0)', () => {
  it("llama.cpp's get_longest_prefix stops at the deepest node, a whole token or not: 'é' user-defined keeps the first byte of 'ê' alone", () => {
    // 'ê' is C3 AA; user-defined 'é' is C3 A9: C3 is kept, AA alone is invalid UTF-8 and becomes
    // U+FFFD, and the whole is one unknown token (not 'ê', which is in the vocabulary).
    const tok = t5(['\u2581', 'é', 'ê', '\ufffd', 'abc', 'ab', 'x', 'y', 'xyz'], [1, 4, 1, 1, 4, 1, 1, 1, 1]);
    const got = ['ê', 'ê é', 'abx', 'ab', 'xy'].map((t) => Array.from(tok.encode(t, { addSpecial: false })));
    expect(got).toEqual([[2], [2, 3, 4], [8, 9], [8], [9, 10]]);
  });
});
