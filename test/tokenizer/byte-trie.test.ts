// The trie under the Unigram and RWKV tokenizers and the special-token split: on random sets of
// byte strings (duplicates, prefixes of one another, empty ones, bytes 0 and 255) it finds what
// a brute-force scan of the strings finds.
import { describe, expect, it, onTestFinished } from 'vitest';
import { ByteTrie } from '../../lib/tokenizer/byte-trie.js';

/** The trie of `texts` (value: index), over one buffer as the tokenizers lay them out. */
function trieOf(texts: number[][]): ByteTrie {
  const bytes = Uint8Array.from(texts.flat());
  const starts: number[] = [];
  const ends: number[] = [];
  let at = 0;
  for (const t of texts) {
    starts.push(at);
    at += t.length;
    ends.push(at);
  }
  return new ByteTrie(bytes, starts, ends, texts.map((_, i) => i));
}

const startsWith = (text: Uint8Array, at: number, end: number, t: number[]) => t.length <= end - at && t.every((b, i) => text[at + i] === b);

/** Brute force: [length, value] of each text that begins text[at, end), shortest first; of equal texts the last. */
function matches(texts: number[][], text: Uint8Array, at: number, end: number): Array<[number, number]> {
  const byLength = new Map<number, number>();
  texts.forEach((t, i) => {
    if (t.length > 0 && startsWith(text, at, end, t)) byLength.set(t.length, i);
  });
  return [...byLength].sort((a, b) => a[0] - b[0]);
}

/** Brute force: the longest common prefix of text[at, end) with any text. */
function deepest(texts: number[][], text: Uint8Array, at: number, end: number): number {
  let best = 0;
  for (const t of texts) {
    let i = 0;
    while (i < t.length && at + i < end && t[i] === text[at + i]) i++;
    best = Math.max(best, i);
  }
  return best;
}

describe('ByteTrie', () => {
  // Keyed by the first byte (small sets) and by the first two (large ones: forced here).
  it.each([['one byte', 4096], ['two bytes', 0]])('finds what a scan of the strings finds: 400 random sets, every position of 5 texts each (key: %s)', (_, twoBytesFrom) => {
    const saved = ByteTrie.twoBytesFrom;
    ByteTrie.twoBytesFrom = twoBytesFrom;
    onTestFinished(() => {
      ByteTrie.twoBytesFrom = saved;
    });
    let s = 99;
    const next = (n: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return (s >>> 8) % n;
    };
    const alphabet = [0, 1, 2, 97, 255];
    const string = (max: number) => Array.from({ length: next(max + 1) }, () => alphabet[next(alphabet.length)]!);
    for (let round = 0; round < 400; round++) {
      const texts = Array.from({ length: 1 + next(40) }, () => string(next(4) === 0 ? 30 : 6));
      // Duplicates.
      for (let d = next(4); d > 0; d--) texts.push(texts[next(texts.length)]!.slice());
      const trie = trieOf(texts);
      for (let k = 0; k < 5; k++) {
        const text = Uint8Array.from(string(40));
        const end = next(text.length + 1);
        for (let at = 0; at <= text.length; at++) {
          const count = trie.walk(text, at, end);
          const got = Array.from({ length: count }, (_, i) => [trie.matchLengths[i]!, trie.matchValues[i]!]);
          const want = at < end ? matches(texts, text, at, end) : [];
          const longest = trie.longest(text, at, end);
          const result = { walk: got, longest: longest === 0 ? [] : [[longest, trie.matchValues[0]!]], deepest: trie.deepest(text, at, end) };
          const expected = { walk: want, longest: want.slice(-1), deepest: at < end ? deepest(texts, text, at, end) : 0 };
          // (The label only for a failure: it costs more than the checks.)
          if (JSON.stringify(result) !== JSON.stringify(expected)) expect(result, JSON.stringify({ texts, text: Array.from(text), at, end })).toEqual(expected);
        }
      }
    }
  });

  it('a 20 KB string costs the length of the match, not its square (10 K positions of a 10 KB text)', { timeout: 60_000 }, () => {
    const long = Array<number>(20_000).fill(97);
    const trie = trieOf([[97], [97, 97], long]);
    const text = new Uint8Array(10_000).fill(97);
    let total = 0;
    for (let at = 0; at < text.length; at++) total += trie.walk(text, at, text.length);
    expect(total).toBe(10_000 + 9_999);
    expect(trie.deepest(text, 0, text.length)).toBe(10_000);
  });

  it('orders only the texts a walk passes through (a word over 200 K texts orders its letters\' ranges; all walks together at most every text byte)', () => {
    let s = 5;
    const next = (n: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return (s >>> 8) % n;
    };
    // 200 K texts of 1-12 letters, as a vocabulary's words.
    const texts = Array.from({ length: 200_000 }, () => Array.from({ length: 1 + next(12) }, () => 97 + next(26)));
    const trie = trieOf(texts);
    const text = new TextEncoder().encode('fox');
    for (let at = 0; at < text.length; at++) trie.walk(text, at, text.length);
    // Each first letter's range is ~7.7 K texts; a walk orders it and the few hundred under its
    // next letter: three of them, not the 200 K that sorting up front placed.
    expect(trie.placed).toBeLessThan(3 * 9_000);
    expect(trie.placed).toBeGreaterThan(0);
    // Ranges are ordered once: walking it all again places nothing more.
    const after = trie.placed;
    for (let at = 0; at < text.length; at++) trie.walk(text, at, text.length);
    expect(trie.placed).toBe(after);
    const all = Uint8Array.from(texts.flat());
    for (let at = 0; at < 20_000; at++) trie.walk(all, at, all.length);
    expect(trie.placed).toBeLessThanOrEqual(all.length);
  });
});
