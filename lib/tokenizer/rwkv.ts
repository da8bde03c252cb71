/** RWKV "world" vocabularies: escaped byte strings, tokenized by greedy longest match. */
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

const tries = new WeakMap<Vocabulary, { index: Map<string, number>; maxLength: number }>();

function trieOf(vocab: Vocabulary) {
  let t = tries.get(vocab);
  if (t === undefined) {
    const index = new Map<string, number>();
    let maxLength = 0;
    for (let id = 0; id < vocab.size; id++) {
      const bytes = rwkvUnescape(vocab.tokenBytes(id));
      index.set(Buffer.from(bytes).toString('latin1'), id);
      if (bytes.length > maxLength) maxLength = bytes.length;
    }
    t = { index, maxLength };
    tries.set(vocab, t);
  }
  return t;
}

export function rwkvTokenize(vocab: Vocabulary, text: Uint8Array, output: number[]): void {
  const { index, maxLength } = trieOf(vocab);
  const latin = Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString('latin1');
  let pos = 0;
  while (pos < latin.length) {
    let found = -1;
    let length = 0;
    for (let n = Math.min(maxLength, latin.length - pos); n >= 1; n--) {
      const id = index.get(latin.slice(pos, pos + n));
      if (id !== undefined) {
        found = id;
        length = n;
        break;
      }
    }
    if (found < 0) {
      output.push(vocab.special.unk);
      pos += 1;
    } else {
      output.push(found);
      pos += length;
    }
  }
}
