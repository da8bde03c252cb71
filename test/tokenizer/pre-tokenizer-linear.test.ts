// The pre-tokenizer regexes that V8 backtracks on quadratically (deepseek-llm's `\s+$`,
// superbpe's digit lookahead) are split in code: the same words as the regexes make (checked here
// against them on random texts; llama.cpp's own texts for deepseek-llm are in
// shared-vocabs.test.ts), in linear time on the texts that made the regexes take minutes.
import { describe, expect, it } from 'vitest';
import { compileRegex, preTokenizerOf, splitWords, type PreTokenizer } from '../../lib/tokenizer/pre-tokenizers.js';

const codepoints = (text: string) => Uint32Array.from(Array.from(text, (c) => c.codePointAt(0)!));

/** The pre-tokenizer with every regex run as a regex. */
function asRegexes(pre: PreTokenizer): PreTokenizer {
  return { ...pre, regexes: pre.regexes.map((r) => compileRegex(r.source, { linear: false })) };
}

// Whitespace ASCII and not (U+0085, U+00A0, U+2028, U+3000), ASCII digits and other numbers,
// letters, punctuation, CJK, a combining mark, an astral codepoint.
const ALPHABET = [' ', '\t', '\n', '\r', '\v', '\f', '\u0085', '\u00a0', '\u2028', '\u3000', '0', '1', '7', '9', '\u0663', '\u00b2', 'a', 'Z', '.', ',', '!', '中', '한', 'é', '\u0301', '\u{1f600}', '\u{1d7d8}'];

/** Texts of runs: a codepoint repeated 1-8 times, 0-12 runs (seeded). */
function randomTexts(count: number, seed: number): string[] {
  let s = seed;
  const next = (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) % n;
  };
  const texts: string[] = [];
  for (let i = 0; i < count; i++) {
    let text = '';
    for (let runs = next(13); runs > 0; runs--) text += ALPHABET[next(ALPHABET.length)]!.repeat(1 + next(8));
    texts.push(text);
  }
  return texts;
}

describe.each(['deepseek-llm', 'superbpe'])('%s: the regex V8 backtracks on, split in code', (name) => {
  const pre = preTokenizerOf(name)!;
  const regexOnly = asRegexes(pre);

  it('uses a split in code for it, and makes the same words as the regexes on 3000 random texts', () => {
    expect(pre.regexes.some((r) => r.custom !== undefined)).toBe(true);
    expect(regexOnly.regexes.every((r) => r.custom === undefined)).toBe(true);
    for (const text of randomTexts(3000, name.length)) {
      const cpts = codepoints(text);
      expect(splitWords(cpts, pre), JSON.stringify(text)).toEqual(splitWords(cpts, regexOnly));
    }
  });

  it('same words on texts made to exercise it (a run that does or does not end the piece, groups of three)', () => {
    const texts = ['', ' ', '1', '12', '123', '1234', ' 1', '1 ', '  \u3000', 'a  ', 'a  b', '\u0663\u0663 ', '12\u00b2345', '1234567', 'x1234567y 89 ', '\n\n  \t', '\u{1f600} ', '9'.repeat(31) + ' '.repeat(7)];
    for (const text of texts) {
      const cpts = codepoints(text);
      expect(splitWords(cpts, pre), JSON.stringify(text)).toEqual(splitWords(cpts, regexOnly));
    }
  });
});

describe('linear time where the regexes take minutes (200 K codepoints: 1-2 minutes for the regex, milliseconds in code)', () => {
  it('deepseek-llm: 200 K spaces then a digit', { timeout: 120_000 }, () => {
    const words = splitWords(codepoints(' '.repeat(200_000) + '1'), preTokenizerOf('deepseek-llm')!);
    expect(words).toEqual([200_000, 1]);
    expect(splitWords(codepoints('a' + ' '.repeat(200_000)), preTokenizerOf('deepseek-llm')!)).toEqual([1, 200_000]);
  });

  it('superbpe: 200 K digits, in groups of three from the end', { timeout: 120_000 }, () => {
    const words = splitWords(codepoints('7'.repeat(200_000)), preTokenizerOf('superbpe')!);
    expect(words.length).toBe(1 + 66_666);
    expect(words[0]).toBe(2);
    expect(words.slice(1).every((n) => n === 3)).toBe(true);
  });
});
