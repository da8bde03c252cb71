/**
 * Codepoint facts as llama.cpp's tokenizers use them: one general-category flag per codepoint
 * (from the Unicode tables of the JS engine, computed when a codepoint is first seen), White_Space,
 * simple lowercase, the first codepoint of the NFD, and UTF-8 with invalid bytes read as U+FFFD.
 */
import { unassignedInLlama } from './unassigned.js';

export const UNDEFINED = 0x0001;
export const NUMBER = 0x0002;
export const LETTER = 0x0004;
export const SEPARATOR = 0x0008;
export const MARK = 0x0010;
export const PUNCTUATION = 0x0020;
export const SYMBOL = 0x0040;
export const CONTROL = 0x0080;
export const CATEGORIES = 0x00ff;
export const WHITESPACE = 0x0100;
const KNOWN = 0x8000;

const MAX_CODEPOINT = 0x110000;
// Made on first use: 2.2 MB, filled a codepoint at a time.
let table: Uint16Array | undefined;
const CATEGORY = /(\p{N})|(\p{L})|(\p{Z})|(\p{M})|(\p{P})|(\p{S})|(\p{Cc}|\p{Cf}|\p{Co}|\p{Cs})/u;
const CATEGORY_FLAGS = [UNDEFINED, NUMBER, LETTER, SEPARATOR, MARK, PUNCTUATION, SYMBOL, CONTROL];

function isWhitespace(cpt: number): boolean {
  return (cpt >= 0x09 && cpt <= 0x0d) || (cpt >= 0x2000 && cpt <= 0x200a) || cpt === 0x20 || cpt === 0x85 || cpt === 0xa0 || cpt === 0x1680 || cpt === 0x2028 || cpt === 0x2029 || cpt === 0x202f || cpt === 0x205f || cpt === 0x3000;
}

function compute(cpt: number): number {
  let flags = UNDEFINED;
  // Surrogate codepoints cannot be tested as strings on their own with /u: they are Cs.
  if (cpt >= 0xd800 && cpt <= 0xdfff) flags = CONTROL;
  else if (unassignedInLlama(cpt)) flags = UNDEFINED;
  else {
    const m = CATEGORY.exec(String.fromCodePoint(cpt));
    if (m !== null) for (let g = 1; g < m.length; g++) if (m[g] !== undefined) flags = CATEGORY_FLAGS[g]!;
  }
  if (isWhitespace(cpt)) flags |= WHITESPACE;
  return flags;
}

/** The flags of a codepoint (0 outside Unicode's range, as llama.cpp's out-of-range lookups). */
export function cptFlags(cpt: number): number {
  if (cpt < 0 || cpt >= MAX_CODEPOINT) return 0;
  table ??= new Uint16Array(MAX_CODEPOINT);
  let f = table[cpt]!;
  if (f === 0) {
    f = compute(cpt) | KNOWN;
    table[cpt] = f;
  }
  return f & ~KNOWN;
}

/** Simple (one-codepoint) lowercase mapping, as UnicodeData.txt gives it. */
export function toLower(cpt: number): number {
  if (cpt < 0x80) return cpt >= 0x41 && cpt <= 0x5a ? cpt + 32 : cpt;
  if (cpt === 0x130) return 0x69;
  if (cpt >= 0xd800 && cpt <= 0xdfff) return cpt;
  const lower = String.fromCodePoint(cpt).toLowerCase();
  const first = lower.codePointAt(0)!;
  return lower.length === (first > 0xffff ? 2 : 1) ? first : cpt;
}

/** The first codepoint of the codepoint's canonical decomposition (llama.cpp's "NFD" of one codepoint). */
export function nfdFirst(cpt: number): number {
  if (cpt < 0xc0 || (cpt >= 0xd800 && cpt <= 0xdfff)) return cpt;
  return String.fromCodePoint(cpt).normalize('NFD').codePointAt(0)!;
}

/** UTF-8 sequence length from a lead byte, as llama.cpp's unicode_len_utf8 (continuation bytes count 1). */
export function utf8Length(lead: number): number {
  const high = lead >> 4;
  return high < 12 ? 1 : high < 14 ? 2 : high === 14 ? 3 : 4;
}

/**
 * Decodes UTF-8 bytes [start, end) into codepoints as llama.cpp does: a byte that does not begin
 * a valid sequence is U+FFFD and one byte is consumed. `offsets` (if given) gets each codepoint's
 * byte offset, plus the end at the last index.
 */
export function decodeCodepoints(bytes: Uint8Array, start: number, end: number, offsets?: Uint32Array): Uint32Array {
  const out = new Uint32Array(end - start);
  let n = 0;
  let i = start;
  while (i < end) {
    if (offsets !== undefined) offsets[n] = i;
    const b = bytes[i]!;
    if (b < 0x80) {
      out[n++] = b;
      i++;
      continue;
    }
    let cpt = 0xfffd;
    let len = 1;
    if ((b & 0x40) === 0) {
      // a continuation byte
    } else if ((b & 0x20) === 0) {
      if (i + 1 < end && (bytes[i + 1]! & 0xc0) === 0x80) {
        cpt = ((b & 0x1f) << 6) | (bytes[i + 1]! & 0x3f);
        len = 2;
      }
    } else if ((b & 0x10) === 0) {
      if (i + 2 < end && (bytes[i + 1]! & 0xc0) === 0x80 && (bytes[i + 2]! & 0xc0) === 0x80) {
        cpt = ((b & 0x0f) << 12) | ((bytes[i + 1]! & 0x3f) << 6) | (bytes[i + 2]! & 0x3f);
        len = 3;
      }
    } else if ((b & 0x08) === 0) {
      if (i + 3 < end && (bytes[i + 1]! & 0xc0) === 0x80 && (bytes[i + 2]! & 0xc0) === 0x80 && (bytes[i + 3]! & 0xc0) === 0x80) {
        cpt = ((b & 0x07) << 18) | ((bytes[i + 1]! & 0x3f) << 12) | ((bytes[i + 2]! & 0x3f) << 6) | (bytes[i + 3]! & 0x3f);
        len = 4;
      }
    }
    out[n++] = cpt;
    i += len;
  }
  if (offsets !== undefined) offsets[n] = i;
  return out.subarray(0, n);
}

/** Appends the UTF-8 of a codepoint at `pos`; returns the new position. */
export function putUtf8(out: Uint8Array, pos: number, cpt: number): number {
  if (cpt < 0x80) out[pos++] = cpt;
  else if (cpt < 0x800) {
    out[pos++] = 0xc0 | (cpt >> 6);
    out[pos++] = 0x80 | (cpt & 0x3f);
  } else if (cpt < 0x10000) {
    out[pos++] = 0xe0 | (cpt >> 12);
    out[pos++] = 0x80 | ((cpt >> 6) & 0x3f);
    out[pos++] = 0x80 | (cpt & 0x3f);
  } else {
    out[pos++] = 0xf0 | (cpt >> 18);
    out[pos++] = 0x80 | ((cpt >> 12) & 0x3f);
    out[pos++] = 0x80 | ((cpt >> 6) & 0x3f);
    out[pos++] = 0x80 | (cpt & 0x3f);
  }
  return pos;
}

/**
 * GPT-2's byte-level alphabet: byte b is shown as a printable codepoint (itself for the printable
 * Latin-1 bytes, 256 + k for the k-th other byte).
 */
export const BYTE_TO_CPT: Uint16Array = (() => {
  const map = new Uint16Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    map[b] = printable ? b : 256 + extra++;
  }
  return map;
})();

/** The inverse of BYTE_TO_CPT: codepoint (< 324) to byte, -1 for others. */
export const CPT_TO_BYTE: Int16Array = (() => {
  const map = new Int16Array(324).fill(-1);
  for (let b = 0; b < 256; b++) map[BYTE_TO_CPT[b]!] = b;
  return map;
})();
