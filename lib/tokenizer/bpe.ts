/**
 * Byte-pair encoding (llama.cpp's BPE session): the text split into words by the pre-tokenizer,
 * each word's characters merged pairwise by merge rank (lowest first, leftmost on ties) with a
 * priority queue, so a long word costs O(n log n), not O(n^2).
 */
import { Heap } from './heap.js';
import { splitWords, type PreTokenizer } from './pre-tokenizers.js';
import { BYTE_TO_CPT, decodeCodepoints, putUtf8, utf8Length } from './unicode.js';
import type { Vocabulary } from './vocab.js';

interface Bigram {
  left: number;
  right: number;
  rank: number;
  leftSize: number;
  rightSize: number;
}

const before = (a: Bigram, b: Bigram) => a.rank < b.rank || (a.rank === b.rank && a.left < b.left);
const HEX = '0123456789ABCDEF';

export class BpeSession {
  private scratch = new Uint8Array(256);
  private readonly queue = new Heap<Bigram>(before);
  private readonly byteIds = new Int32Array(256).fill(-2);

  constructor(
    private readonly vocab: Vocabulary,
    private readonly pre: PreTokenizer,
  ) {}

  tokenize(text: Uint8Array, output: number[]): void {
    if (text.length === 0) return;
    const cpts = decodeCodepoints(text, 0, text.length);
    const words = splitWords(cpts, this.pre);
    // Each word's bytes: UTF-8 of its codepoints, byte-encoded (GPT-2) if the pre-tokenizer says so.
    let word = new Uint8Array(64);
    let c = 0;
    for (const n of words) {
      const need = n * 8;
      if (word.length < need) word = new Uint8Array(need);
      let len = 0;
      if (this.pre.byteEncode) {
        const raw = new Uint8Array(n * 4);
        let r = 0;
        for (let k = 0; k < n; k++) r = putUtf8(raw, r, cpts[c + k]!);
        for (let k = 0; k < r; k++) len = putUtf8(word, len, BYTE_TO_CPT[raw[k]!]!);
      } else {
        for (let k = 0; k < n; k++) len = putUtf8(word, len, cpts[c + k]!);
      }
      c += n;
      this.word(word, len, output);
    }
  }

  private word(word: Uint8Array, length: number, output: number[]): void {
    const vocab = this.vocab;
    let whole = false;
    if (vocab.ignoreMerges && vocab.find(word, 0, length) >= 0) whole = true;
    else if (this.pre.kind === 'GEMMA4' && onlyNewlines(word, length) && vocab.find(word, 0, length) >= 0) whole = true;
    if (whole) {
      output.push(vocab.find(word, 0, length));
      return;
    }
    const startList: number[] = [];
    for (let offs = 0; offs < length; ) {
      startList.push(offs);
      offs += Math.min(utf8Length(word[offs]!), length - offs);
    }
    const count = startList.length;
    const start = Int32Array.from(startList);
    const size = new Int32Array(count);
    const prev = new Int32Array(count);
    const next = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      size[i] = (i + 1 < count ? start[i + 1]! : length) - start[i]!;
      prev[i] = i - 1;
      next[i] = i + 1 < count ? i + 1 : -1;
    }
    const queue = this.queue;
    queue.clear();
    const add = (left: number, right: number) => {
      if (left === -1 || right === -1) return;
      const ls = size[left]!;
      const rs = size[right]!;
      const total = ls + rs + 1;
      if (this.scratch.length < total) this.scratch = new Uint8Array(total * 2);
      const s = this.scratch;
      s.set(word.subarray(start[left]!, start[left]! + ls), 0);
      s[ls] = 0x20;
      s.set(word.subarray(start[right]!, start[right]! + rs), ls + 1);
      const rank = vocab.mergeRank(s, 0, total);
      if (rank < 0) return;
      queue.push({ left, right, rank, leftSize: ls, rightSize: rs });
    };
    for (let i = 1; i < count; i++) add(i - 1, i);
    while (queue.size > 0) {
      const b = queue.pop()!;
      const { left, right } = b;
      if (size[left] === 0 || size[right] === 0 || size[left] !== b.leftSize || size[right] !== b.rightSize) continue;
      size[left] = size[left]! + size[right]!;
      size[right] = 0;
      next[left] = next[right]!;
      if (next[right]! >= 0) prev[next[right]!] = left;
      add(prev[left]!, left);
      add(left, next[left]!);
    }
    for (let i = 0; i !== -1; i = next[i]!) {
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

function onlyNewlines(word: Uint8Array, length: number): boolean {
  for (let i = 0; i < length; i++) if (word[i] !== 0x0a) return false;
  return true;
}
