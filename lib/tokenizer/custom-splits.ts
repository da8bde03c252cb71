/**
 * The pre-tokenizer splits llama.cpp does in code rather than with a regex (kimi-k2's, afmoe's
 * digit grouping, which tiny_aya's digit regex also runs as): the same decisions over codepoint
 * flags. Each takes the codepoints [start, end) of one piece and appends the lengths it is cut into.
 */
import { cptFlags, CATEGORIES, LETTER, NUMBER, toLower, WHITESPACE } from './unicode.js';

export type CustomSplit = (cpts: Uint32Array, start: number, end: number, out: number[]) => void;

/** Han (CJK ideograph) blocks, as llama.cpp's unicode_cpt_is_han. */
function isHan(c: number): boolean {
  return (
    (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x20000 && c <= 0x2a6df) || (c >= 0x2a700 && c <= 0x2b73f) ||
    (c >= 0x2b740 && c <= 0x2b81f) || (c >= 0x2b820 && c <= 0x2ceaf) || (c >= 0x2ceb0 && c <= 0x2ebef) || (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0x2f800 && c <= 0x2fa1f)
  );
}

const OUT = 0xffffffff;

/** Digit runs in groups of three from the right; what precedes a run goes with its first group. */
export const afmoeDigits: CustomSplit = (cpts, start, end, out) => {
  let prevEnd = start;
  const add = (to: number) => {
    if (to > prevEnd) out.push(to - prevEnd);
    prevEnd = to;
  };
  const isNumber = (p: number) => p < end && (cptFlags(cpts[p]!) & NUMBER) !== 0;
  for (let pos = start; pos < end; ) {
    if (isNumber(pos)) {
      const digitStart = pos;
      while (isNumber(pos)) pos++;
      const count = pos - digitStart;
      let current = digitStart;
      const remainder = count % 3;
      if (remainder > 0) {
        add(current + remainder);
        current += remainder;
      }
      while (current < digitStart + count) {
        add(current + 3);
        current += 3;
      }
      continue;
    }
    pos++;
  }
  if (prevEnd < end) add(end);
};

/** Kimi-K2: Han runs, letter words (Han excluded) with contractions, 1-3 digits, then as llama3. */
export const kimiK2: CustomSplit = (cpts, start, end, out) => {
  const cpt = (p: number) => (p >= start && p < end ? cpts[p]! : OUT);
  const flags = (p: number) => (p >= start && p < end ? cptFlags(cpts[p]!) : 0);
  const letter = (p: number) => (flags(p) & LETTER) !== 0 && !isHan(cpt(p));
  let prevEnd = start;
  const add = (to: number) => {
    if (to > prevEnd) out.push(to - prevEnd);
    prevEnd = to;
  };
  for (let pos = start; pos < end; ) {
    const c = cpt(pos);
    const f = flags(pos);
    if (isHan(c)) {
      while (isHan(cpt(pos))) pos++;
      add(pos);
      continue;
    }
    const leading = !(c === 0x0d || c === 0x0a || f & LETTER || f & NUMBER);
    if (letter(pos) || (leading && letter(pos + 1))) {
      let hasLeading = false;
      if (leading) {
        hasLeading = true;
        pos++;
      }
      let hasLetters = false;
      while (letter(pos)) {
        hasLetters = true;
        pos++;
      }
      if (hasLetters || (!hasLeading && letter(pos))) {
        if (!hasLetters) pos++;
        while (letter(pos)) pos++;
        if (cpt(pos) === 0x27 && pos + 1 < end) {
          const n1 = toLower(cpt(pos + 1));
          if (n1 === 0x73 || n1 === 0x74 || n1 === 0x6d || n1 === 0x64) pos += 2;
          else if (pos + 2 < end) {
            const n2 = toLower(cpt(pos + 2));
            if ((n1 === 0x72 && n2 === 0x65) || (n1 === 0x76 && n2 === 0x65) || (n1 === 0x6c && n2 === 0x6c)) pos += 3;
          }
        }
        add(pos);
        continue;
      } else if (hasLeading) pos--;
    }
    if (f & NUMBER) {
      let first = pos;
      while (flags(pos) & NUMBER) {
        if (++pos - first >= 3) {
          add(pos);
          first = pos;
        }
      }
      add(pos);
      continue;
    }
    let f2 = c === 0x20 ? flags(pos + 1) : f;
    if (!(f2 & (WHITESPACE | LETTER | NUMBER)) && f2 & (CATEGORIES | WHITESPACE)) {
      if (c === 0x20) pos++;
      while (!(f2 & (WHITESPACE | LETTER | NUMBER)) && f2 & (CATEGORIES | WHITESPACE)) f2 = flags(++pos);
      let c2 = cpt(pos);
      while (c2 === 0x0d || c2 === 0x0a) c2 = cpt(++pos);
      add(pos);
      continue;
    }
    let spaces = 0;
    let lastNewlineEnd = 0;
    while (flags(pos + spaces) & WHITESPACE) {
      const c2 = cpt(pos + spaces);
      if (c2 === 0x0d || c2 === 0x0a) lastNewlineEnd = pos + spaces + 1;
      spaces++;
    }
    if (lastNewlineEnd > 0) {
      pos = lastNewlineEnd;
      add(pos);
      continue;
    }
    if (spaces > 1 && cpt(pos + spaces) !== OUT) {
      pos += spaces - 1;
      add(pos);
      continue;
    }
    if (spaces > 0) {
      pos += spaces;
      add(pos);
      continue;
    }
    add(++pos);
  }
};
