/**
 * Byte-pair encoding (llama.cpp's BPE session): the text split into words by the pre-tokenizer,
 * each word's characters merged pairwise by merge rank (lowest first, leftmost on ties) with a
 * priority queue, so a long word costs O(n log n), not O(n^2). Results of short words are cached
 * (a bounded cache, its keys never integer-like strings: see format/name-index.ts on V8's hashing).
 */
import { splitWords, type PreTokenizer } from './pre-tokenizers.js';
import { BYTE_TO_CPT, decodeCodepoints, putUtf8, utf8Length } from './unicode.js';
import type { Vocabulary } from './vocab.js';

const HEX = '0123456789ABCDEF';
const CACHE_ENTRIES = 1 << 16;
const CACHE_WORD_BYTES = 48;

// GPT-2's byte-level character of each byte, as UTF-8 (1 or 2 bytes), packed: length in bits 16+.
const BYTE_UTF8 = (() => {
  const t = new Uint32Array(256);
  const b = new Uint8Array(4);
  for (let i = 0; i < 256; i++) {
    const n = putUtf8(b, 0, BYTE_TO_CPT[i]!);
    t[i] = (n << 16) | (n === 1 ? b[0]! : (b[0]! << 8) | b[1]!);
  }
  return t;
})();

export class BpeSession {
  private scratch = new Uint8Array(256);
  private word = new Uint8Array(256);
  private start = new Int32Array(64);
  private size = new Int32Array(64);
  private prev = new Int32Array(64);
  private next = new Int32Array(64);
  // The merge queue: a binary heap of (rank, left, right, left size, right size) in parallel arrays.
  private qRank = new Int32Array(64);
  private qLeft = new Int32Array(64);
  private qRight = new Int32Array(64);
  private qLs = new Int32Array(64);
  private qRs = new Int32Array(64);
  private qn = 0;
  private readonly byteIds = new Int32Array(256).fill(-2);
  private readonly cache = new Map<string, number | Int32Array>();
  private readonly pieces: number[] = [];

  constructor(
    private readonly vocab: Vocabulary,
    private readonly pre: PreTokenizer,
  ) {}

  tokenize(text: Uint8Array, output: number[]): void {
    if (text.length === 0) return;
    const cpts = decodeCodepoints(text, 0, text.length);
    const words = splitWords(cpts, this.pre);
    const byteEncode = this.pre.byteEncode;
    let c = 0;
    for (const n of words) {
      if (this.word.length < n * 8) this.word = new Uint8Array(n * 8);
      const word = this.word;
      let len = 0;
      for (let k = 0; k < n; k++) {
        const cpt = cpts[c + k]!;
        if (!byteEncode) len = putUtf8(word, len, cpt);
        else if (cpt < 0x80) len = putByte(word, len, cpt);
        else if (cpt < 0x800) {
          len = putByte(word, len, 0xc0 | (cpt >> 6));
          len = putByte(word, len, 0x80 | (cpt & 0x3f));
        } else if (cpt < 0x10000) {
          len = putByte(word, len, 0xe0 | (cpt >> 12));
          len = putByte(word, len, 0x80 | ((cpt >> 6) & 0x3f));
          len = putByte(word, len, 0x80 | (cpt & 0x3f));
        } else {
          len = putByte(word, len, 0xf0 | (cpt >> 18));
          len = putByte(word, len, 0x80 | ((cpt >> 12) & 0x3f));
          len = putByte(word, len, 0x80 | ((cpt >> 6) & 0x3f));
          len = putByte(word, len, 0x80 | (cpt & 0x3f));
        }
      }
      c += n;
      if (len <= CACHE_WORD_BYTES) this.cachedWord(word, len, output);
      else this.wordTokens(word, len, output);
    }
  }

  private cachedWord(word: Uint8Array, length: number, output: number[]): void {
    let key = 'w';
    for (let i = 0; i < length; i++) key += String.fromCharCode(word[i]!);
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      if (typeof hit === 'number') output.push(hit);
      else for (let i = 0; i < hit.length; i++) output.push(hit[i]!);
      return;
    }
    const pieces = this.pieces;
    pieces.length = 0;
    this.wordTokens(word, length, pieces);
    for (let i = 0; i < pieces.length; i++) output.push(pieces[i]!);
    if (this.cache.size >= CACHE_ENTRIES) this.cache.clear();
    this.cache.set(key, pieces.length === 1 ? pieces[0]! : Int32Array.from(pieces));
  }

  private wordTokens(word: Uint8Array, length: number, output: number[]): void {
    const vocab = this.vocab;
    if ((vocab.ignoreMerges || (this.pre.kind === 'GEMMA4' && onlyNewlines(word, length))) && length > 0) {
      const id = vocab.find(word, 0, length);
      if (id >= 0) {
        output.push(id);
        return;
      }
    }
    if (this.start.length < length) {
      const n = Math.max(length, this.start.length * 2);
      this.start = new Int32Array(n);
      this.size = new Int32Array(n);
      this.prev = new Int32Array(n);
      this.next = new Int32Array(n);
    }
    const { start, size, prev, next } = this;
    let count = 0;
    for (let offs = 0; offs < length; count++) {
      start[count] = offs;
      const n = Math.min(utf8Length(word[offs]!), length - offs);
      size[count] = n;
      offs += n;
    }
    for (let i = 0; i < count; i++) {
      prev[i] = i - 1;
      next[i] = i + 1 < count ? i + 1 : -1;
    }
    this.qn = 0;
    for (let i = 1; i < count; i++) this.add(word, i - 1, i);
    while (this.qn > 0) {
      const left = this.qLeft[0]!;
      const right = this.qRight[0]!;
      const ls = this.qLs[0]!;
      const rs = this.qRs[0]!;
      this.pop();
      if (size[left] === 0 || size[right] === 0 || size[left] !== ls || size[right] !== rs) continue;
      size[left] = ls + rs;
      size[right] = 0;
      const after = next[right]!;
      next[left] = after;
      if (after >= 0) prev[after] = left;
      this.add(word, prev[left]!, left);
      this.add(word, left, after);
    }
    for (let i = 0; i !== -1 && count > 0; i = next[i]!) {
      const a = start[i]!;
      const id = vocab.find(word, a, a + size[i]!);
      if (id >= 0) {
        output.push(id);
        continue;
      }
      for (let k = 0; k < size[i]!; k++) {
        const byteId = this.byteId(word[a + k]!);
        if (byteId >= 0) output.push(byteId);
      }
    }
  }

  private add(word: Uint8Array, left: number, right: number): void {
    if (left === -1 || right === -1) return;
    const ls = this.size[left]!;
    const rs = this.size[right]!;
    const total = ls + rs + 1;
    if (this.scratch.length < total) this.scratch = new Uint8Array(total * 2);
    const s = this.scratch;
    const a = this.start[left]!;
    for (let k = 0; k < ls; k++) s[k] = word[a + k]!;
    s[ls] = 0x20;
    const b = this.start[right]!;
    for (let k = 0; k < rs; k++) s[ls + 1 + k] = word[b + k]!;
    const rank = this.vocab.mergeRank(s, 0, total);
    if (rank >= 0) this.push(rank, left, right, ls, rs);
  }

  private push(rank: number, left: number, right: number, ls: number, rs: number): void {
    if (this.qn === this.qRank.length) {
      const grow = (a: Int32Array) => {
        const b = new Int32Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.qRank = grow(this.qRank);
      this.qLeft = grow(this.qLeft);
      this.qRight = grow(this.qRight);
      this.qLs = grow(this.qLs);
      this.qRs = grow(this.qRs);
    }
    const { qRank, qLeft, qRight, qLs, qRs } = this;
    let i = this.qn++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!(rank < qRank[p]! || (rank === qRank[p]! && left < qLeft[p]!))) break;
      qRank[i] = qRank[p]!;
      qLeft[i] = qLeft[p]!;
      qRight[i] = qRight[p]!;
      qLs[i] = qLs[p]!;
      qRs[i] = qRs[p]!;
      i = p;
    }
    qRank[i] = rank;
    qLeft[i] = left;
    qRight[i] = right;
    qLs[i] = ls;
    qRs[i] = rs;
  }

  private pop(): void {
    const { qRank, qLeft, qRight, qLs, qRs } = this;
    const n = --this.qn;
    if (n === 0) return;
    const rank = qRank[n]!;
    const left = qLeft[n]!;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && (qRank[r]! < qRank[l]! || (qRank[r] === qRank[l] && qLeft[r]! < qLeft[l]!)) ? r : l;
      if (!(qRank[c]! < rank || (qRank[c] === rank && qLeft[c]! < left))) break;
      qRank[i] = qRank[c]!;
      qLeft[i] = qLeft[c]!;
      qRight[i] = qRight[c]!;
      qLs[i] = qLs[c]!;
      qRs[i] = qRs[c]!;
      i = c;
    }
    qRank[i] = rank;
    qLeft[i] = left;
    qRight[i] = qRight[n]!;
    qLs[i] = qLs[n]!;
    qRs[i] = qRs[n]!;
  }

  /** A byte with no token of its own: the token of that single raw byte, or "<0xXX>" for raw-UTF-8 vocabularies. */
  private byteId(byte: number): number {
    let id = this.byteIds[byte]!;
    if (id === -2) {
      id = this.pre.byteEncode ? this.vocab.find(Uint8Array.of(byte), 0, 1) : (this.vocab.tokenId(`<0x${HEX[byte >> 4]}${HEX[byte & 15]}>`) ?? -1);
      this.byteIds[byte] = id;
    }
    return id;
  }
}

function putByte(out: Uint8Array, pos: number, byte: number): number {
  const e = BYTE_UTF8[byte]!;
  if (e >>> 16 === 1) out[pos++] = e & 0xff;
  else {
    out[pos++] = (e >> 8) & 0xff;
    out[pos++] = e & 0xff;
  }
  return pos;
}

function onlyNewlines(word: Uint8Array, length: number): boolean {
  for (let i = 0; i < length; i++) if (word[i] !== 0x0a) return false;
  return true;
}
