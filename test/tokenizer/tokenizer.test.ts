// The tokenizer on small vocabularies made here: the API, the kinds of files it opens, and
// vocabularies that try to break it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeGguf, GgufError, openGguf, openGgufRemote, parseGguf, writeGgufSplit, type GgufWriteSpec, type GgufWriteValue } from '../../lib/index.js';
import { useHubImitation } from '../helpers/hub.js';
import { tempDir } from '../helpers/tmp.js';
import { UNDER_WINE } from '../helpers/platform.js';

const strings = (value: string[]): GgufWriteValue => ({ type: 'ARRAY', arrayType: 'STRING', value });
const floats = (value: number[]): GgufWriteValue => ({ type: 'ARRAY', arrayType: 'FLOAT32', value });
const ints = (value: number[]): GgufWriteValue => ({ type: 'ARRAY', arrayType: 'INT32', value });
const str = (value: string): GgufWriteValue => ({ type: 'STRING', value });

const HEX = (b: number) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;

/** A SentencePiece vocabulary: <unk> <s> </s>, 256 byte tokens, then words with rising scores. */
function spm(extra: Record<string, GgufWriteValue> = {}): GgufWriteSpec {
  const words = ['▁', 'h', 'e', 'l', 'o', '▁h', '▁he', 'll', '▁hell', '▁hello', '▁w', 'or', 'ld', '▁wor', '▁world'];
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => HEX(b)), ...words];
  const types = [2, 3, 3, ...Array<number>(256).fill(6), ...Array<number>(words.length).fill(1)];
  const scores = tokens.map((_, i) => (i < 259 ? 0 : i - 1000));
  return {
    metadata: {
      'general.architecture': str('llama'),
      'tokenizer.ggml.model': str('llama'),
      'tokenizer.ggml.tokens': strings(tokens),
      'tokenizer.ggml.scores': floats(scores),
      'tokenizer.ggml.token_type': ints(types),
      'tokenizer.ggml.bos_token_id': { type: 'UINT32', value: 1 },
      'tokenizer.ggml.eos_token_id': { type: 'UINT32', value: 2 },
      ...extra,
    },
  };
}

/** A byte-level BPE vocabulary (GPT-2's pre-tokenizer) of 'a' runs. */
function bpe(tokens: string[], merges: string[], pre = 'gpt-2'): GgufWriteSpec {
  return {
    metadata: {
      'tokenizer.ggml.model': str('gpt2'),
      'tokenizer.ggml.pre': str(pre),
      'tokenizer.ggml.tokens': strings(tokens),
      'tokenizer.ggml.merges': strings(merges),
    },
  };
}

const id = (g: ReturnType<typeof parseGguf>, text: string) => g.tokenizer().tokenId(text)!;

describe('Tokenizer API (a SentencePiece vocabulary)', () => {
  const g = parseGguf(encodeGguf(spm()));
  const tok = g.tokenizer();

  it('is made once, from the metadata; token facts', () => {
    expect(g.tokenizer()).toBe(tok);
    expect(tok.type).toBe('SPM');
    expect(tok.vocabSize).toBe(259 + 15);
    expect([tok.bos, tok.eos, tok.unk, tok.eot, tok.pad, tok.fimPre]).toEqual([1, 2, 0, undefined, undefined, undefined]);
    expect(tok.tokenType(0)).toBe('unknown');
    expect(tok.tokenType(1)).toBe('control');
    expect(tok.tokenType(3 + 0x41)).toBe('byte');
    expect(tok.tokenType(id(g, '▁hello'))).toBe('normal');
    expect(tok.tokenId('nope')).toBeUndefined();
    expect(tok.tokenText(id(g, '▁world'))).toBe('▁world');
    expect(() => tok.tokenType(tok.vocabSize)).toThrow(RangeError);
  });

  it('encodes with the space prefix and BOS, merging by score, bytes for the rest', () => {
    expect(Array.from(tok.encode('hello world'))).toEqual([1, id(g, '▁hello'), id(g, '▁world')]);
    expect(Array.from(tok.encode('hello', { addSpecial: false }))).toEqual([id(g, '▁hello')]);
    expect(Array.from(tok.encode('é', { addSpecial: false }))).toEqual([id(g, '▁'), 3 + 0xc3, 3 + 0xa9]);
    expect(Array.from(tok.encode(''))).toEqual([1]);
  });

  it('special token texts are tokens only with parseSpecial', () => {
    expect(Array.from(tok.encode('hello</s>', { addSpecial: false, parseSpecial: true }))).toEqual([id(g, '▁hello'), 2]);
    expect(tok.encode('hello</s>', { addSpecial: false })).not.toContain(2);
  });

  it('a lone surrogate is encoded as TextEncoder encodes it (U+FFFD)', () => {
    expect(Array.from(tok.encode('a\ud800b'))).toEqual(Array.from(tok.encode('a\ufffdb')));
  });

  it('decodes as llama_detokenize: leading space dropped, control tokens only with unparseSpecial', () => {
    const ids = tok.encode('hello world');
    expect(tok.decode(ids.subarray(1))).toBe('hello world');
    // Only the first token loses its leading space: after a BOS (shown or not, or removed), none does.
    expect(tok.decode(ids)).toBe(' hello world');
    expect(tok.decode(ids, { unparseSpecial: true })).toBe('<s> hello world');
    expect(tok.decode(ids, { removeSpecial: true })).toBe(' hello world');
    expect(tok.decode([id(g, '▁'), 3 + 0xc3, 3 + 0xa9])).toBe('é');
    expect(Array.from(tok.decodeBytes([3 + 0xc3]))).toEqual([0xc3]);
    expect(tok.tokenToPiece(1, { special: false })).toBe('');
    expect(tok.tokenToPiece(id(g, '▁world'))).toBe(' world');
    expect(() => tok.decode([tok.vocabSize])).toThrow(RangeError);
    expect(() => tok.decode([-1])).toThrow(RangeError);
  });

  it('a streaming decoder gives a character split across tokens whole, once', () => {
    const stream = tok.streamingDecoder();
    expect(stream.push(id(g, '▁hello'))).toBe('hello');
    expect(stream.push(3 + 0xc3)).toBe('');
    expect(stream.push(3 + 0xa9)).toBe('é');
    expect(stream.push(3 + 0xc3)).toBe('');
    expect(stream.flush()).toBe('\ufffd');
  });
});

describe('BPE', () => {
  it('merges by rank with a queue: a 100k-character word of one letter', () => {
    const g = parseGguf(encodeGguf(bpe(['a', 'aa', 'aaaa', 'aaaaaaaa'], ['a a', 'aa aa', 'aaaa aaaa'])));
    const ids = g.tokenizer().encode('a'.repeat(100_000), { addSpecial: false });
    expect(ids.length).toBe(12_500);
    expect(ids.every((x) => x === 3)).toBe(true);
    expect(g.tokenizer().decode(ids.subarray(0, 2))).toBe('a'.repeat(16));
  });

  it('merges naming unknown tokens and duplicate tokens work (the last of equal tokens, the first of equal merges)', () => {
    const g = parseGguf(encodeGguf(bpe(['a', 'b', 'ab', 'a', 'Ġ'], ['x y', 'a b', 'q r', 'a b', 'Ġ a'])));
    const tok = g.tokenizer();
    expect(Array.from(tok.encode('ab', { addSpecial: false }))).toEqual([2]);
    expect(Array.from(tok.encode('ba', { addSpecial: false }))).toEqual([1, 3]);
    expect(tok.tokenId('a')).toBe(3);
  });
});

describe('hostile and unsupported vocabularies', () => {
  const code = (spec: GgufWriteSpec) => {
    try {
      parseGguf(encodeGguf(spec)).tokenizer();
    } catch (error) {
      expect(error).toBeInstanceOf(GgufError);
      return [(error as GgufError).code, (error as GgufError).message];
    }
    return ['ok', ''];
  };

  it('fewer scores or types than tokens, an empty vocabulary, no tokens: UNSUPPORTED_TOKENIZER', () => {
    expect(code(spm({ 'tokenizer.ggml.scores': floats([1, 2]) }))[0]).toBe('UNSUPPORTED_TOKENIZER');
    expect(code(spm({ 'tokenizer.ggml.token_type': ints([1]) }))[0]).toBe('UNSUPPORTED_TOKENIZER');
    expect(code(spm({ 'tokenizer.ggml.tokens': strings([]) }))[0]).toBe('UNSUPPORTED_TOKENIZER');
    expect(code({ metadata: { 'tokenizer.ggml.model': str('llama') } })[0]).toBe('UNSUPPORTED_TOKENIZER');
    expect(code({ metadata: {} })[0]).toBe('UNSUPPORTED_TOKENIZER');
  });

  it('an unknown model or pre-tokenizer is UNSUPPORTED_TOKENIZER naming it; BPE without merges too', () => {
    const [c1, m1] = code(spm({ 'general.name': str('Weird'), 'tokenizer.ggml.model': str('sentencepiece-v9') }));
    expect(c1).toBe('UNSUPPORTED_TOKENIZER');
    expect(m1).toContain("'sentencepiece-v9'");
    expect(m1).toContain('Weird');
    const [c2, m2] = code(bpe(['a'], [], 'no-such-pre'));
    expect(c2).toBe('UNSUPPORTED_TOKENIZER');
    expect(m2).toContain("'no-such-pre'");
    expect(code({ metadata: { 'tokenizer.ggml.model': str('gpt2'), 'tokenizer.ggml.tokens': strings(['a']) } })[0]).toBe('UNSUPPORTED_TOKENIZER');
  });

  it('special ids out of range are ignored; a text of many special-token texts and a regex-heavy text work', () => {
    const g = parseGguf(encodeGguf(spm({ 'tokenizer.ggml.bos_token_id': { type: 'UINT32', value: 99_999 } })));
    expect(g.tokenizer().bos).toBe(1);
    expect(g.tokenizer().encode('</s>'.repeat(10_000), { parseSpecial: true }).length).toBe(10_001);
    const b = parseGguf(encodeGguf(bpe(['a', 'Ġ', 'Ċ'], [], 'llama-bpe'))).tokenizer();
    expect(b.encode(' \n'.repeat(50_000) + "'s".repeat(1000), { addSpecial: false }).length).toBeGreaterThan(0);
  });
});

describe('every kind of file', () => {
  const imitation = useHubImitation();
  const bytes = encodeGguf({ ...spm(), tensors: [{ name: 'token_embd.weight', type: 'F32', shape: [4, 274] }, { name: 'output.weight', type: 'F32', shape: [4, 2] }] });
  const expected = Array.from(parseGguf(bytes).tokenizer().encode('hello world é'));

  it('mapped or read (as GGUF_MMAP_MODE says), split, and remote (the header alone)', async () => {
    const dir = tempDir();
    const path = join(dir, 'm.gguf');
    writeFileSync(path, bytes);
    using local = openGguf(path);
    expect(Array.from(local.tokenizer().encode('hello world é'))).toEqual(expected);
    const parts = writeGgufSplit(join(dir, 'split'), { ...spm(), tensors: [{ name: 'a', type: 'F32', shape: [4] }, { name: 'b', type: 'F32', shape: [4] }] }, { maxTensors: 1 });
    using split = openGguf(parts[1]!);
    expect(split.parts.length).toBe(parts.length);
    expect(Array.from(split.tokenizer().encode('hello world é'))).toEqual(expected);
    // (Under wine fetch cannot reach a local server: vitest.config.ts.)
    if (UNDER_WINE) return;
    imitation.hub.files.set('org/tok/model.gguf', { bytes });
    const remote = await openGgufRemote('hf:org/tok/model.gguf', { backoffMs: 1 });
    expect(Array.from(remote.tokenizer().encode('hello world é'))).toEqual(expected);
    expect(imitation.hub.log.filter((r) => r.server === 'cdn').length).toBe(1);
    remote.close();
  });

  it('after close() every call that reads the vocabulary is CLOSED, not ids or text made of zeroed pages', () => {
    const path = join(tempDir(), 'closed.gguf');
    writeFileSync(path, bytes);
    const file = openGguf(path);
    const tok = file.tokenizer();
    const ids = tok.encode('hello world');
    const stream = tok.streamingDecoder();
    expect(tok.decode(ids).trim()).toBe('hello world');
    file.close();
    const closed = expect.objectContaining({ code: 'CLOSED' }) as GgufError;
    expect(() => tok.encode('hello world')).toThrowError(closed);
    expect(() => tok.decode(ids)).toThrowError(closed);
    expect(() => tok.decodeBytes(ids)).toThrowError(closed);
    expect(() => tok.tokenToPiece(ids[1]!)).toThrowError(closed);
    expect(() => tok.tokenText(ids[1]!)).toThrowError(closed);
    expect(() => tok.tokenType(ids[1]!)).toThrowError(closed);
    expect(() => tok.tokenId('hello')).toThrowError(closed);
    expect(() => stream.push(ids[1]!)).toThrowError(closed);
  });
});
