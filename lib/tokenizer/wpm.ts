/**
 * WordPiece (llama.cpp's WPM session, BERT): BERT's normalizer (lowercase, accents stripped,
 * punctuation and CJK characters as words of their own), then greedy longest-match from the
 * left of "▁" + word; a word with an unmatched part is the unknown token.
 */
import { cptFlags, CONTROL, decodeCodepoints, MARK, nfdFirst, PUNCTUATION, putUtf8, SYMBOL, toLower, WHITESPACE } from './unicode.js';
import type { Vocabulary } from './vocab.js';

function isChinese(c: number): boolean {
  return (
    (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x20000 && c <= 0x2a6df) || (c >= 0x2a700 && c <= 0x2b73f) ||
    (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b920 && c <= 0x2ceaf) || (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f)
  );
}

/** The words of BERT's normalizer, as UTF-8 byte arrays. */
function words(vocab: Vocabulary, text: Uint8Array): Uint8Array[] {
  const cpts = decodeCodepoints(text, 0, text.length);
  const out: Uint8Array[] = [];
  const buf = new Uint8Array(cpts.length * 4 + 3);
  let len = 0;
  const finish = () => {
    if (len > 0) out.push(buf.slice(0, len));
    len = 0;
  };
  for (let i = 0; i < cpts.length; i++) {
    let c = cpts[i]!;
    if (vocab.stripAccents) c = nfdFirst(c);
    const flags = cptFlags(c);
    if (flags & WHITESPACE) {
      finish();
      continue;
    }
    if (c === 0 || c === 0xfffd || flags & CONTROL) continue;
    if (vocab.stripAccents && flags & MARK) continue;
    const lowered = vocab.lowercase ? toLower(c) : c;
    if (flags & PUNCTUATION || (c < 0x7f && flags & SYMBOL) || isChinese(c)) {
      finish();
      len = putUtf8(buf, 0, lowered);
      finish();
    } else len = putUtf8(buf, len, lowered);
  }
  finish();
  return out;
}

export function wpmTokenize(vocab: Vocabulary, text: Uint8Array, output: number[]): void {
  const maxLength = vocab.maxTokenLength;
  for (const word of words(vocab, text)) {
    const w = new Uint8Array(word.length + 3);
    w.set([0xe2, 0x96, 0x81], 0);
    w.set(word, 3);
    const n = w.length;
    const before = output.length;
    for (let i = 0; i < n; i++) {
      let matched = false;
      for (let j = Math.min(n, i + maxLength + 1); j > i; j--) {
        const id = vocab.find(w, i, j);
        if (id >= 0) {
          output.push(id);
          matched = true;
          i = j - 1;
          break;
        }
      }
      if (!matched) {
        output.length = before;
        break;
      }
    }
    if (output.length === before) output.push(vocab.special.unk);
  }
}
