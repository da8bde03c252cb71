/**
 * The nineteen vocabularies of llama.cpp's own test set against what llama.cpp v0.5.0 made of
 * them (../shared/tokenizer): its test texts (.inp/.out) and 120 more texts, both flag settings,
 * and the detokenized bytes.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openGguf } from '../../lib/index.js';
import { SKIP_SHARED, SHARED_DIR, sharedPath } from '../helpers/shared.js';

interface Expected {
  text: string;
  special: number[];
  plain: number[];
  detok: string;
}

const vocabDir = SHARED_DIR === undefined ? undefined : sharedPath('tokenizer', 'vocab');
const names = vocabDir === undefined || !existsSync(vocabDir) ? [] : readdirSync(vocabDir).filter((f) => f.endsWith('.gguf')).map((f) => f.slice(0, -5));

/** The test texts and ids of a .inp/.out pair (texts separated by "\n__ggml_vocab_test__\n"). */
function testCases(name: string): Array<{ text: string; ids: number[] }> {
  const inp = `${vocabDir}/${name}.gguf.inp`;
  if (!existsSync(inp)) return [];
  const texts = readFileSync(inp, 'utf8').split('\n__ggml_vocab_test__\n');
  const last = texts.length - 1;
  if (texts[last]!.endsWith('\n__ggml_vocab_test__')) texts[last] = texts[last]!.slice(0, -'\n__ggml_vocab_test__'.length);
  else if (texts[last] === '') texts.pop();
  const lines = readFileSync(`${vocabDir}/${name}.gguf.out`, 'utf8').split('\n');
  return texts.map((text, i) => ({ text, ids: lines[i]!.trim() === '' ? [] : lines[i]!.trim().split(/\s+/).map(Number) }));
}

describe.skipIf(SKIP_SHARED || names.length === 0)('llama.cpp vocabularies (../shared/tokenizer)', () => {
  it.each(names)('%s', (name) => {
    using file = openGguf(`${vocabDir}/${name}.gguf`);
    const tok = file.tokenizer();
    const failures: string[] = [];
    const cases = testCases(name);
    for (const { text, ids } of cases) {
      const got = Array.from(tok.encode(text, { addSpecial: false, parseSpecial: false }));
      if (JSON.stringify(got) !== JSON.stringify(ids)) failures.push(`inp ${JSON.stringify(text)}: ${JSON.stringify(got)} != ${JSON.stringify(ids)}`);
    }
    const expected = JSON.parse(readFileSync(sharedPath('tokenizer', 'expected', `${name}.json`), 'utf8')) as Expected[];
    for (const e of expected) {
      const special = Array.from(tok.encode(e.text, { addSpecial: true, parseSpecial: true }));
      if (JSON.stringify(special) !== JSON.stringify(e.special)) failures.push(`special ${JSON.stringify(e.text)}: ${JSON.stringify(special)} != ${JSON.stringify(e.special)}`);
      const plain = Array.from(tok.encode(e.text, { addSpecial: false, parseSpecial: false }));
      if (JSON.stringify(plain) !== JSON.stringify(e.plain)) failures.push(`plain ${JSON.stringify(e.text)}: ${JSON.stringify(plain)} != ${JSON.stringify(e.plain)}`);
      const detok = Buffer.from(tok.decodeBytes(e.special, { removeSpecial: false, unparseSpecial: true })).toString('hex');
      if (detok !== e.detok) failures.push(`detok ${JSON.stringify(e.text)}: ${detok} != ${e.detok}`);
    }
    const total = cases.length + expected.length * 3;
    expect(failures.slice(0, 5), `${name}: ${total - failures.length}/${total} pass`).toEqual([]);
  });
});

describe.skipIf(SKIP_SHARED || names.length === 0)('llama.cpp cases found by differential testing (recorded from llama.cpp v0.5.0)', () => {
  it("codepoints newer Unicode assigns but llama.cpp's tables do not (U+1AE7 is no accent to strip for BERT)", () => {
    using file = openGguf(`${vocabDir}/ggml-vocab-bert-bge.gguf`);
    const text = ' \u3000\u1ae7P\u45ff\u1bd0\u0e72\u0ce5yO/\u{1f625}n';
    expect(Array.from(file.tokenizer().encode(text, { addSpecial: false }))).toEqual([100, 100, 100, 1013, 100]);
  });
});
