// The streaming decoder, for a text's own tokens (its first piece loses the space the vocabulary
// adds, as llama_detokenize does) and for a continuation (ids generated after a prompt: each
// piece as llama_token_to_piece gives it, the first one's space kept, as llama.cpp's server
// streams them).
//
// The truth is llama_token_to_piece's rule (lstrip 0, special off) applied here to the stored
// token texts of the shared vocabularies: a normal SPM token is its text with U+2581 as a space,
// a byte token <0xXX> is that byte; a normal BPE token is its text mapped back through GPT-2's
// byte alphabet (bytes_to_unicode); control tokens are empty.
import { describe, expect, it } from 'vitest';
import { openGguf } from '../../lib/index.js';
import type { Tokenizer } from '../../lib/tokenizer/tokenizer.js';
import { SKIP_SHARED, sharedPath } from '../helpers/shared.js';

/** GPT-2's bytes_to_unicode, inverted: codepoint to byte. */
const GPT2_BYTE = (() => {
  const map = new Map<number, number>();
  const kept = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let extra = 0;
  for (let b = 0; b < 256; b++) map.set(kept(b) ? b : 256 + extra++, b);
  return map;
})();

/** llama_token_to_piece(id, lstrip 0, special off), from the token's stored text and type. */
function piece(tok: Tokenizer, id: number): Uint8Array {
  const text = tok.tokenText(id);
  const type = tok.tokenType(id);
  if (type === 'control' || type === 'unknown') return new Uint8Array(0);
  if (tok.type === 'SPM') {
    const hex = /^<0x([0-9A-F]{2})>$/.exec(text);
    if (type === 'byte' && hex !== null) return Uint8Array.of(parseInt(hex[1]!, 16));
    return new TextEncoder().encode(text.replaceAll('\u2581', ' '));
  }
  return Uint8Array.from(Array.from(text, (c) => GPT2_BYTE.get(c.codePointAt(0)!)!));
}

const utf8 = (parts: Uint8Array[]) => new TextDecoder().decode(Buffer.concat(parts));

describe.skipIf(SKIP_SHARED)('streamingDecoder: a text, or a continuation (llama_token_to_piece)', () => {
  const cases: Array<[string, string, boolean]> = [
    // vocabulary, text, whether the vocabulary adds a space in front (the first piece loses it)
    ['llama-spm', ' hello world\n🙂 x', true],
    ['llama-spm', 'hello world', true],
    ['llama-bpe', ' Hello, world 🙂\n', false],
    ['llama-bpe', 'Hello', false],
  ];

  it.each(cases)('%s, %j', (name, text, addsSpace) => {
    using file = openGguf(sharedPath('tokenizer', 'vocab', `ggml-vocab-${name}.gguf`));
    const tok = file.tokenizer();
    const ids = Array.from(tok.encode(text, { addSpecial: false }));
    const pieces = ids.map((id) => piece(tok, id));

    // A continuation: every piece as it is, the first one's space included, one token at a time.
    const continuation = tok.streamingDecoder({ continuation: true });
    let out = '';
    for (const id of ids) out += continuation.push(id);
    out += continuation.flush();
    expect(out).toBe(utf8(pieces));

    // A text's own tokens: the first piece loses its leading space where the vocabulary adds one.
    const own = tok.streamingDecoder();
    const first = pieces[0]!;
    const trimmed = addsSpace && first[0] === 0x20 ? first.subarray(1) : first;
    expect(own.push(...ids) + own.flush()).toBe(utf8([trimmed, ...pieces.slice(1)]));
    expect(utf8(pieces).startsWith(' ')).toBe(text.startsWith(' ') || addsSpace);
  });

  it('the option only matters for the first piece, and only where the vocabulary adds a space', () => {
    using spm = openGguf(sharedPath('tokenizer', 'vocab', 'ggml-vocab-llama-spm.gguf'));
    const tok = spm.tokenizer();
    const [hello, world] = [tok.tokenId('\u2581hello')!, tok.tokenId('\u2581world')!];
    expect(tok.streamingDecoder({ continuation: true }).push(hello, world)).toBe(' hello world');
    expect(tok.streamingDecoder().push(hello, world)).toBe('hello world');
    expect(tok.streamingDecoder({ continuation: false }).push(hello, world)).toBe('hello world');
    using bpe = openGguf(sharedPath('tokenizer', 'vocab', 'ggml-vocab-llama-bpe.gguf'));
    const b = bpe.tokenizer();
    const ids = b.encode(' world', { addSpecial: false });
    expect(b.streamingDecoder({ continuation: true }).push(...ids)).toBe(' world');
    expect(b.streamingDecoder().push(...ids)).toBe(' world');
  });
});
