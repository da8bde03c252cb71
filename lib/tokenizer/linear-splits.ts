/**
 * Pre-tokenizer regexes that V8's backtracking runs in quadratic time, done in code with the same
 * matches, in linear time. Each is the split that regex makes where it runs on the codepoints
 * (pre-tokenizers.ts: whitespace past ASCII seen as \v, \s as C's isspace, \d as ASCII digits):
 * every match a piece, the text between matches a piece, an empty match a cut.
 */
import type { CustomSplit } from './custom-splits.js';
import { cptFlags, WHITESPACE } from './unicode.js';

/** \s as the regex sees it: \t \n \v \f \r, space, and any whitespace past ASCII (made \v). */
function isRegexSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || (c > 0x7f && (cptFlags(c) & WHITESPACE) !== 0);
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * deepseek-llm's `\s+$`: the whitespace that ends the piece, split off. (The regex tries \s+ from
 * every space of a run and backtracks the whole run when a non-space follows it: 100 K spaces
 * before a digit took 11 s.)
 */
export const trailingWhitespace: CustomSplit = (cpts, start, end, out) => {
  let p = end;
  while (p > start && isRegexSpace(cpts[p - 1]!)) p--;
  if (p > start) out.push(p - start);
  if (end > p) out.push(end - p);
};

/**
 * superbpe's `(?=(\d{3})+(?!\d))`: an empty match before each group of three digits counted back
 * from the end of a run of ASCII digits, so the piece is cut there (not at its own start). (The
 * regex counts the rest of the run at every digit.)
 */
export const digitGroupsFromEnd: CustomSplit = (cpts, start, end, out) => {
  let last = start;
  for (let p = start; p < end; ) {
    if (!isDigit(cpts[p]!)) {
      p++;
      continue;
    }
    let e = p;
    while (e < end && isDigit(cpts[e]!)) e++;
    for (let cut = p + ((e - p) % 3); cut < e; cut += 3) {
      if (cut > last) {
        out.push(cut - last);
        last = cut;
      }
    }
    p = e;
  }
  if (end > last) out.push(end - last);
};
