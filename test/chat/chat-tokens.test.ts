// applyChatTemplate(..., { tokenize: true }): the ids llama.cpp v0.5.0's server feeds the model
// (common/chat.cpp strips a leading BOS / trailing EOS text from the render when the vocabulary
// adds them; the server tokenizes with add_special and parse_special on). Truth: llama.cpp's own
// llama_tokenize(text, add_special = true, parse_special = true) of the shared texts
// (../shared/tokenizer/expected, `special`), with templates that print a message's content
// verbatim, with and without the BOS text, on vocabularies that add BOS and ones that do not.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { GgufError, editMetadata, encodeGguf, openGguf, parseGguf, type GgufFile } from '../../lib/index.js';
import { SKIP_SHARED, readJson, sharedPath } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

interface Expected {
  text: string;
  special: number[];
}

const dir = SKIP_SHARED ? '' : tempDir();

/** A copy of a shared vocabulary with this chat template. */
function withTemplate(vocab: string, template: string, tag: string): GgufFile {
  const out = join(dir, `${vocab}-${tag}.gguf`);
  editMetadata(sharedPath('tokenizer', 'vocab', `ggml-vocab-${vocab}.gguf`), { set: [['tokenizer.chat_template', { type: 'STRING', value: template }]] }, { out });
  return openGguf(out);
}

const CONTENT = '{% for m in messages %}{{ m.content }}{% endfor %}';
const texts = (vocab: string) => readJson<Expected[]>(sharedPath('tokenizer', 'expected', `ggml-vocab-${vocab}.json`)).slice(0, 12);

describe.skipIf(SKIP_SHARED)('applyChatTemplate({ tokenize: true }) as llama.cpp server', () => {
  // Vocabularies that add BOS (SPM, BPE) and ones that add none (BPE): with a template that
  // writes BOS, and one that does not.
  it.each([
    ['llama-spm', true],
    ['llama-bpe', true],
    ['qwen2', false],
    ['gpt-2', false],
  ] as const)('%s (adds BOS: %s): one BOS whether or not the template writes it, none when the vocabulary adds none', (vocab, addsBos) => {
    using writes = withTemplate(vocab, `{{ bos_token }}${CONTENT}`, 'bos');
    using plain = withTemplate(vocab, CONTENT, 'plain');
    const bos = writes.tokenizer().bos!;
    expect(writes.tokenizer().addsBos).toBe(addsBos);
    for (const { text, special } of texts(vocab)) {
      const messages = [{ role: 'user', content: text }];
      // The template's BOS text is taken off when the vocabulary adds BOS; kept (one BOS, parsed
      // as the special token) when it does not.
      expect(Array.from(writes.applyChatTemplate(messages, { tokenize: true })), text).toEqual(addsBos ? special : [bos, ...special]);
      expect(Array.from(plain.applyChatTemplate(messages, { tokenize: true })), text).toEqual(special);
    }
  });

  it('a vocabulary that adds EOS (nomic-bert-moe, UGM): a trailing EOS text is taken off too', () => {
    using file = withTemplate('nomic-bert-moe', `{{ bos_token }}${CONTENT}{{ eos_token }}`, 'eos');
    expect([file.tokenizer().addsBos, file.tokenizer().addsEos]).toEqual([true, true]);
    for (const { text, special } of texts('nomic-bert-moe')) {
      expect(Array.from(file.applyChatTemplate([{ role: 'user', content: text }], { tokenize: true })), text).toEqual(special);
    }
  });

  it('the same options as the text (tools, variables, generation prompt)', () => {
    using file = withTemplate('llama-bpe', `${CONTENT}{{ tools | length }}{{ greeting }}{% if add_generation_prompt %}>{% endif %}`, 'opts');
    const messages = [{ role: 'user', content: 'Hi' }];
    const options = { tools: [{ name: 'f' }], variables: { greeting: ' hello' }, addGenerationPrompt: true };
    const text = file.applyChatTemplate(messages, options);
    expect(text).toBe('Hi1 hello>');
    const tok = file.tokenizer();
    expect(Array.from(file.applyChatTemplate(messages, { ...options, tokenize: true }))).toEqual(Array.from(tok.encode(text, { addSpecial: true, parseSpecial: true })));
  });

  it('errors are the render\'s', () => {
    using raises = withTemplate('llama-spm', "{{ raise_exception('no') }}", 'raises');
    const error = (() => {
      try {
        raises.applyChatTemplate([], { tokenize: true });
      } catch (e) {
        return e as GgufError;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(GgufError);
    expect(error?.code).toBe('CHAT_TEMPLATE_ERROR');
    expect(error?.message).toContain('TemplateError: no');
    expect(() => raises.applyChatTemplate([], { tokenize: true, name: 'rag' })).toThrow(/has no tokenizer\.chat_template\.rag/);
  });
});

// Every shared vocabulary that carries its own template (command-r, gemma-4, phi-3, qwen2,
// qwen35): conversations with and without tools, rendered by jinja2 and turned into ids by
// llama.cpp v0.5.0's server rule (scripts/chat-ids-truth.ts wrote them).
interface OwnTemplateCase {
  vocab: string;
  id: string;
  messages: Array<{ role: string; content: string }>;
  tools?: object[];
  text: string;
  ids: number[];
}

describe.skipIf(SKIP_SHARED)("applyChatTemplate({ tokenize: true }) with the shared vocabularies' own templates", () => {
  const cases = readJson<OwnTemplateCase[]>(join(import.meta.dirname, 'own-templates-expected.json'));
  it('covers every shared vocabulary that has a template', () => {
    const withTemplate = readdirSync(sharedPath('tokenizer', 'vocab'))
      .filter((f) => f.endsWith('.gguf'))
      .filter((f) => {
        using g = openGguf(sharedPath('tokenizer', 'vocab', f));
        return g.metadata.has('tokenizer.chat_template');
      })
      .map((f) => f.slice('ggml-vocab-'.length, -'.gguf'.length))
      .sort();
    expect([...new Set(cases.map((c) => c.vocab))]).toEqual(withTemplate);
    expect(withTemplate.length).toBeGreaterThanOrEqual(5);
  });
  it.each(cases.map((c) => [`${c.vocab} ${c.id}`, c] as const))('%s: the text and the ids llama.cpp feeds the model', (_, c) => {
    using file = openGguf(sharedPath('tokenizer', 'vocab', `ggml-vocab-${c.vocab}.gguf`));
    const options = { tools: c.tools, addGenerationPrompt: true };
    expect(file.applyChatTemplate(c.messages, options)).toBe(c.text);
    expect(Array.from(file.applyChatTemplate(c.messages, { ...options, tokenize: true }))).toEqual(c.ids);
  });
});

describe('applyChatTemplate types', () => {
  it('Int32Array with tokenize: true, string otherwise', () => {
    // A file with neither template nor tokenizer: the missing template is the error, first.
    const file = parseGguf(encodeGguf({ metadata: [['general.architecture', { type: 'STRING', value: 'llama' }]] }));
    expect(() => file.applyChatTemplate([], { tokenize: true })).toThrow(/has no tokenizer\.chat_template/);
    const ids = (f: GgufFile) => f.applyChatTemplate([], { tokenize: true });
    const text = (f: GgufFile) => f.applyChatTemplate([], { addGenerationPrompt: true });
    const either = (f: GgufFile, t: boolean) => f.applyChatTemplate([], { tokenize: t });
    expectTypeOf(ids).returns.toEqualTypeOf<Int32Array>();
    expectTypeOf(text).returns.toEqualTypeOf<string>();
    expectTypeOf(either).returns.toEqualTypeOf<string | Int32Array>();
  });
});
