// The string index under the tokenizer: addon and TypeScript builds agree, equal strings keep the
// id asked for, and a table whose probes run long is rebuilt with the keyed hash and still works.
import { describe, expect, it } from 'vitest';
import { encodeGguf, parseGguf } from '../../lib/index.js';
import { ByteIndex } from '../../lib/tokenizer/byte-index.js';

const words = Array.from({ length: 5000 }, (_, i) => `w${(i * 7919) % 4001}`); // duplicates among them
const g = parseGguf(encodeGguf({ metadata: { list: { type: 'ARRAY', arrayType: 'STRING', value: words } } }));
const raw = g.metadata.array('list')!.rawBytes();
const enc = new TextEncoder();
const find = (index: ByteIndex, text: string) => {
  const b = enc.encode(text);
  return index.find(b, 0, b.length);
};

describe('ByteIndex', () => {
  for (const [name, useAddon] of [['addon (where loaded)', true], ['TypeScript', false]] as const) {
    it(`${name}: last or first of equal strings; unknown strings are -1; keyed rebuild`, () => {
      for (const probeLimit of [48, 0]) {
        const last = ByteIndex.ofStrings(raw, words.length, true, probeLimit, useAddon);
        const first = ByteIndex.ofStrings(raw, words.length, false, probeLimit, useAddon);
        if (probeLimit === 0) expect(last.keyed).toBe(true);
        for (const w of ['w0', 'w17', 'w4000']) {
          expect(find(last, w)).toBe(words.lastIndexOf(w));
          expect(find(first, w)).toBe(words.indexOf(w));
        }
        expect(find(last, 'w4001')).toBe(-1);
        expect(find(last, '')).toBe(-1);
        expect(Array.from(last.starts.subarray(0, 3), (s, i) => new TextDecoder().decode(raw.bytes.subarray(s, last.ends[i])))).toEqual(words.slice(0, 3));
      }
    });
  }
});
