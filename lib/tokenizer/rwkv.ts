/** RWKV "world" vocabularies: escaped byte strings, tokenized by greedy longest match. */
import { ByteTrie } from './byte-trie.js';
import type { Vocabulary } from './vocab.js';

/** A token's bytes with its escapes (\t \n \r \xHH \<c>) resolved. */
export function rwkvUnescape(text: Uint8Array): Uint8Array {
  const out: number[] = [];
  let escaping = false;
  let hexLeft = 0;
  let hex = 0;
  for (const c of text) {
    if (hexLeft > 0) {
      hex = ((hex << 4) + (c >= 0x61 ? c - 0x61 + 10 : c - 0x30)) & 0xff;
      if (--hexLeft === 0) {
        out.push(hex);
        hex = 0;
      }
      continue;
    }
    if (escaping) {
      if (c === 0x74) out.push(9);
      else if (c === 0x6e) out.push(10);
      else if (c === 0x72) out.push(13);
      else if (c === 0x78) hexLeft = 2;
      else out.push(c);
      escaping = false;
      continue;
    }
    if (c === 0x5c) {
      escaping = true;
      continue;
    }
    out.push(c);
  }
  return Uint8Array.from(out);
}

const tries = new WeakMap<Vocabulary, ByteTrie>();

/** Every token's unescaped bytes, the last of equal ones kept (as llama.cpp's trie). */
function trieOf(vocab: Vocabulary): ByteTrie {
  let trie = tries.get(vocab);
  if (trie === undefined) {
    const texts: Uint8Array[] = [];
    let total = 0;
    for (let id = 0; id < vocab.size; id++) {
      const bytes = rwkvUnescape(vocab.tokenBytes(id));
      texts.push(bytes);
      total += bytes.length;
    }
    const all = new Uint8Array(total);
    const starts = new Uint32Array(vocab.size);
    const ends = new Uint32Array(vocab.size);
    let at = 0;
    for (let id = 0; id < vocab.size; id++) {
      all.set(texts[id]!, at);
      starts[id] = at;
      at += texts[id]!.length;
      ends[id] = at;
    }
    trie = new ByteTrie(all, starts, ends);
    tries.set(vocab, trie);
  }
  return trie;
}

/** Greedy longest match from the left; a byte no token starts with is an unknown token. */
export function rwkvTokenize(vocab: Vocabulary, text: Uint8Array, output: number[]): void {
  const trie = trieOf(vocab);
  for (let pos = 0; pos < text.length; ) {
    const length = trie.longest(text, pos, text.length);
    if (length === 0) {
      output.push(vocab.special.unk);
      pos += 1;
    } else {
      output.push(trie.matchValues[0]!);
      pos += length;
    }
  }
}
