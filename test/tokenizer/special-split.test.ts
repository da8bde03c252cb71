// Special and user-defined tokens split out of the text (llama.cpp's tokenizer_st_partition) in
// time linear in the text for each token: the same fragments as llama.cpp's search (written out
// below as the reference, checked on random texts and tokens with lstrip/rstrip), llama.cpp's ids
// on Qwen2's and Phi-3's vocabularies, and a text that took llama.cpp's way minutes.
import { describe, expect, it } from 'vitest';
import { encodeGguf, openGguf, parseGguf, type GgufWriteValue } from '../../lib/index.js';
import { SpecialTokenSplitter, type Fragment, type SpecialTokens } from '../../lib/tokenizer/special-split.js';
import { ATTR_LSTRIP, ATTR_RSTRIP } from '../../lib/tokenizer/vocab.js';
import { SKIP_SHARED, sharedPath } from '../helpers/shared.js';

const enc = new TextEncoder();
const isSpace = (b: number) => b === 0x20 || (b >= 0x09 && b <= 0x0d);

/**
 * llama.cpp's partition: each token in turn, in each text fragment, searched from the fragment's
 * start (or the end of its previous match there) with a search that may run past the fragment;
 * a match that ends past the fragment ends the fragment's search.
 */
function reference(bytes: Uint8Array, ids: number[], vocab: SpecialTokens): Fragment[] {
  const text = Buffer.from(bytes);
  let fragments: Fragment[] = bytes.length === 0 ? [] : [{ offset: 0, length: bytes.length }];
  for (const id of ids) {
    const token = vocab.tokenBytes(id);
    if (token.length === 0) continue;
    const attr = vocab.attr(id);
    const next: Fragment[] = [];
    for (const f of fragments) {
      if (typeof f === 'number') {
        next.push(f);
        continue;
      }
      const end = f.offset + f.length;
      let pos = f.offset;
      for (;;) {
        const m = text.indexOf(token, pos);
        if (m < 0 || m + token.length > end) {
          if (pos < end) next.push({ offset: pos, length: end - pos });
          break;
        }
        let left = m - pos;
        if (attr & ATTR_LSTRIP) while (left > 0 && isSpace(bytes[pos + left - 1]!)) left--;
        if (left > 0) next.push({ offset: pos, length: left });
        next.push(id);
        let right = m + token.length;
        if (attr & ATTR_RSTRIP) while (right < end && isSpace(bytes[right]!)) right++;
        if (right >= end) break;
        pos = right;
      }
    }
    fragments = next;
  }
  return fragments;
}

describe('splitting special tokens out of the text', () => {
  it("makes llama.cpp's fragments: 5000 random texts and token sets (overlapping, nested, repeated, lstrip/rstrip)", () => {
    let s = 12345;
    const next = (n: number) => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return (s >>> 8) % n;
    };
    const alphabet = 'ab< \n\t';
    const word = (max: number) => Array.from({ length: 1 + next(max) }, () => alphabet[next(alphabet.length)]).join('');
    // 500 token sets, 10 texts each.
    for (let round = 0; round < 500; round++) {
      const texts = Array.from({ length: 1 + next(6) }, () => word(4));
      const attrs = texts.map(() => [0, ATTR_LSTRIP, ATTR_RSTRIP, ATTR_LSTRIP | ATTR_RSTRIP][next(4)]!);
      const vocab: SpecialTokens = { tokenBytes: (id) => enc.encode(texts[id]!), attr: (id) => attrs[id]! };
      // As the vocabulary orders them: longest first, then by id.
      const ids = texts.map((_, id) => id).sort((x, y) => texts[y]!.length - texts[x]!.length || x - y);
      const splitter = new SpecialTokenSplitter(ids, vocab);
      // The other way, each token searched for on its own.
      const eachOnItsOwn = new SpecialTokenSplitter(ids, vocab, () => 0);
      for (let t = 0; t < 10; t++) {
        const bytes = enc.encode(word(40));
        const label = JSON.stringify({ text: new TextDecoder().decode(bytes), texts, attrs });
        const expected = reference(bytes, ids, vocab);
        expect(splitter.split(bytes), label).toEqual(expected);
        expect(eachOnItsOwn.split(bytes), label).toEqual(expected);
      }
    }
  });

  it('runs of whitespace tokens that begin one another: occurrences past the limit, each token searched for on its own, same fragments', () => {
    const texts = Array.from({ length: 8 }, (_, i) => ' '.repeat(8 - i));
    const attrs = [ATTR_RSTRIP, 0, ATTR_LSTRIP, 0, 0, 0, 0, 0];
    const vocab: SpecialTokens = { tokenBytes: (id) => enc.encode(texts[id]!), attr: (id) => attrs[id]! };
    const ids = texts.map((_, id) => id);
    // 8 occurrences a byte in the runs of spaces: past the limit of 2 a byte.
    for (const text of [' '.repeat(5000), ` x${' '.repeat(4001)}y ${' '.repeat(3)}`]) {
      const bytes = enc.encode(text);
      expect(new SpecialTokenSplitter(ids, vocab).split(bytes)).toEqual(reference(bytes, ids, vocab));
    }
  });

  it('a text of 2 MB with 175 K user-defined tokens and one other token near its start (minutes before: each fragment searched to the end of the text)', { timeout: 120_000 }, () => {
    // A Qwen-like vocabulary: byte-level BPE, 290 user-defined [PAD...] tokens.
    const pads = Array.from({ length: 290 }, (_, i) => `[PAD${151646 + i}]`);
    const tokens = ['a', 'x', 'Ġ', ...pads];
    const strings = (value: string[]): GgufWriteValue => ({ type: 'ARRAY', arrayType: 'STRING', value });
    const tok = parseGguf(
      encodeGguf({
        metadata: {
          'tokenizer.ggml.model': { type: 'STRING', value: 'gpt2' },
          'tokenizer.ggml.pre': { type: 'STRING', value: 'qwen2' },
          'tokenizer.ggml.tokens': strings(tokens),
          'tokenizer.ggml.token_type': { type: 'ARRAY', arrayType: 'INT32', value: tokens.map((_, i) => (i < 3 ? 1 : 4)) },
          'tokenizer.ggml.merges': strings(['a a']),
        },
      }),
    ).tokenizer();
    const count = 175_000;
    const ids = tok.encode('x[PAD151700]' + 'a[PAD151646]'.repeat(count), { addSpecial: false });
    expect(ids.length).toBe(2 + 2 * count);
    expect(Array.from(ids.subarray(0, 6))).toEqual([1, tok.tokenId('[PAD151700]'), 0, 3, 0, 3]);
    expect(ids.every((id, i) => i < 2 || id === (i % 2 === 0 ? 0 : 3))).toBe(true);
  });
});

describe.skipIf(SKIP_SHARED)("llama.cpp's ids (recorded from llama.cpp v0.5.0, add_special off)", () => {
  const vocab = (name: string) => openGguf(sharedPath('tokenizer', 'vocab', `ggml-vocab-${name}.gguf`));

  it("Qwen2: its user-defined [PAD...] tokens, touching, repeated, cut short; control tokens only with parseSpecial", () => {
    using file = vocab('qwen2');
    const tok = file.tokenizer();
    const a = 'x[PAD151700] a[PAD151646]  [PAD151646][PAD151647]b[PAD151646';
    const b = '[PAD151935][PAD151935]\n[PAD151700]<|im_start|>user\nhi<|im_end|>';
    const expectedA = [87, 151700, 264, 151646, 256, 151646, 151647, 65, 42347, 1808, 16, 20, 16, 21, 19, 21];
    for (const parseSpecial of [false, true]) expect(Array.from(tok.encode(a, { addSpecial: false, parseSpecial }))).toEqual(expectedA);
    expect(Array.from(tok.encode(b, { addSpecial: false }))).toEqual([151935, 151935, 198, 151700, 27, 91, 318, 4906, 91, 29, 872, 198, 6023, 27, 91, 318, 6213, 91, 29]);
    expect(Array.from(tok.encode(b, { addSpecial: false, parseSpecial: true }))).toEqual([151935, 151935, 198, 151700, 151644, 872, 198, 6023, 151645]);
  });

  it('Phi-3: special tokens that strip the whitespace after them (rstrip), with parseSpecial', () => {
    using file = vocab('phi-3');
    const tok = file.tokenizer();
    const special = { addSpecial: false, parseSpecial: true };
    expect(Array.from(tok.encode('hello <|user|>  \n world<|end|>  x</s> <s>  <unk>\tq<|assistant|>', special))).toEqual([22172, 29871, 32010, 3186, 32007, 921, 2, 1, 1678, 0, 29871, 12, 29939, 32001]);
    expect(Array.from(tok.encode('  <|system|>   <|system|><|system|> a', special))).toEqual([1678, 32006, 32006, 32006, 263]);
  });
});
