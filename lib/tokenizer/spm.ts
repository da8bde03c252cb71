/**
 * SentencePiece BPE (llama.cpp's SPM session): characters merged pairwise, highest-scoring
 * vocabulary token first (leftmost on ties), with a priority queue; what is left and not a token
 * comes out as byte tokens.
 */
import { Heap } from './heap.js';
import { utf8Length } from './unicode.js';
import type { Vocabulary } from './vocab.js';

interface Bigram {
  left: number;
  right: number;
  score: number;
  size: number;
}

const before = (a: Bigram, b: Bigram) => a.score > b.score || (a.score === b.score && a.left < b.left);

export function spmTokenize(vocab: Vocabulary, text: Uint8Array, output: number[]): void {
  const length = text.length;
  if (length === 0) return;
  const starts: number[] = [];
  for (let offs = 0; offs < length; ) {
    starts.push(offs);
    offs += Math.min(utf8Length(text[offs]!), length - offs);
  }
  const count = starts.length;
  const start = Int32Array.from(starts);
  const size = new Int32Array(count);
  const prev = new Int32Array(count);
  const next = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    size[i] = (i + 1 < count ? start[i + 1]! : length) - start[i]!;
    prev[i] = i - 1;
    next[i] = i + 1 < count ? i + 1 : -1;
  }
  const queue = new Heap<Bigram>(before);
  const tryAdd = (left: number, right: number) => {
    if (left === -1 || right === -1) return;
    const a = start[left]!;
    const bytes = size[left]! + size[right]!;
    const id = vocab.find(text, a, a + bytes);
    if (id < 0) return;
    queue.push({ left, right, score: vocab.score(id), size: bytes });
  };
  for (let i = 1; i < count; i++) tryAdd(i - 1, i);
  while (queue.size > 0) {
    const bigram = queue.pop()!;
    const { left, right } = bigram;
    if (size[left] === 0 || size[right] === 0 || size[left]! + size[right]! !== bigram.size) continue;
    size[left] = size[left]! + size[right]!;
    size[right] = 0;
    next[left] = next[right]!;
    if (next[right]! >= 0) prev[next[right]!] = left;
    tryAdd(prev[left]!, left);
    tryAdd(left, next[left]!);
  }
  for (let i = 0; i !== -1; i = next[i]!) {
    const a = start[i]!;
    const id = vocab.find(text, a, a + size[i]!);
    if (id >= 0) {
      output.push(id);
      continue;
    }
    for (let k = 0; k < size[i]!; k++) {
      const byteId = vocab.byteToken(text[a + k]!);
      if (byteId >= 0) output.push(byteId);
    }
  }
}
