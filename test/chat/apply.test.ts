// GgufFile.applyChatTemplate: the file's own template with its vocabulary's BOS/EOS text, local
// (mapped or read) and remote (header only). The truth for real templates is the shared cases'
// jinja2 output, with the same special tokens put in a vocabulary.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { GgufError, encodeGguf, openGguf, openGgufRemote, parseGguf, writeGgufFile, type GgufWriteSpec, type GgufWriteValue } from '../../lib/index.js';
import type { HubServer } from '../../scripts/hub-imitation.js';
import { useHubImitation } from '../helpers/hub.js';
import { SKIP_SHARED, readJson, sharedPath } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';
import type { ChatTemplateCase } from '../../scripts/chat-cases.js';

const SIMPLE = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";

function spec(template: string | undefined, options: { bos?: number; eos?: number; named?: Record<string, string>; tokens?: string[] } = {}): GgufWriteSpec {
  const tokens = options.tokens ?? ['<unk>', '<s>', '</s>', 'a', 'b'];
  const metadata: Array<readonly [string, GgufWriteValue]> = [
    ['general.architecture', { type: 'STRING', value: 'llama' }],
    ['tokenizer.ggml.model', { type: 'STRING', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }],
  ];
  if (options.bos !== undefined) metadata.push(['tokenizer.ggml.bos_token_id', { type: 'UINT32', value: options.bos }]);
  if (options.eos !== undefined) metadata.push(['tokenizer.ggml.eos_token_id', { type: 'UINT32', value: options.eos }]);
  if (template !== undefined) metadata.push(['tokenizer.chat_template', { type: 'STRING', value: template }]);
  for (const [name, text] of Object.entries(options.named ?? {})) metadata.push([`tokenizer.chat_template.${name}`, { type: 'STRING', value: text }]);
  return { metadata, tensors: [] };
}

const messages = [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: 'hello' },
];

describe('GgufFile.applyChatTemplate', () => {
  it("renders the file's template with the vocabulary's BOS and EOS text", () => {
    const file = parseGguf(encodeGguf(spec(SIMPLE, { bos: 1, eos: 2 })));
    expect(file.applyChatTemplate(messages)).toBe('<s>[user]hi</s>[assistant]hello</s>');
    expect(file.applyChatTemplate(messages, { addGenerationPrompt: true })).toBe('<s>[user]hi</s>[assistant]hello</s>[assistant]');
  });

  it('BOS/EOS absent, or an id outside the vocabulary, are empty text', () => {
    expect(parseGguf(encodeGguf(spec(SIMPLE))).applyChatTemplate(messages)).toBe('[user]hi[assistant]hello');
    expect(parseGguf(encodeGguf(spec(SIMPLE, { bos: 99, eos: 4 }))).applyChatTemplate(messages)).toBe('[user]hib[assistant]hellob');
  });

  it('a named template, tools and variables', () => {
    const file = parseGguf(encodeGguf(spec(SIMPLE, { named: { tool_use: '{{ tools|map(attribute="name")|join(",") }} {{ date_string }} {{ messages|length }}' } })));
    const out = file.applyChatTemplate(messages, { name: 'tool_use', tools: [{ name: 'f' }, { name: 'g' }], variables: { date_string: '1 Jan' } });
    expect(out).toBe('f,g 1 Jan 2');
  });

  it('no template, or no template of that name: CHAT_TEMPLATE_ERROR naming what there is', () => {
    expect(() => parseGguf(encodeGguf(spec(undefined))).applyChatTemplate(messages)).toThrow(/has no tokenizer\.chat_template/);
    const named = parseGguf(encodeGguf(spec(SIMPLE, { named: { rag: 'r' } })));
    expect(() => named.applyChatTemplate(messages, { name: 'tool_use' })).toThrow(
      'the file has no tokenizer.chat_template.tool_use; it has the default template (tokenizer.chat_template) and named templates: rag',
    );
    const onlyDefault = parseGguf(encodeGguf(spec(SIMPLE)));
    expect(() => onlyDefault.applyChatTemplate(messages, { name: 'rag' })).toThrow('the file has no tokenizer.chat_template.rag; it has the default template (tokenizer.chat_template)');
    const onlyNamed = parseGguf(encodeGguf(spec(undefined, { named: { rag: 'r' } })));
    expect(() => onlyNamed.applyChatTemplate(messages)).toThrow('the file has no tokenizer.chat_template; it has named templates: rag');
    expect(() => parseGguf(encodeGguf(spec(undefined))).applyChatTemplate(messages, { name: 'rag' })).toThrow('the file has no tokenizer.chat_template.rag; it has no chat template');
  });

  it("a template that raises: CHAT_TEMPLATE_ERROR at the template key's offset", () => {
    const file = parseGguf(encodeGguf(spec("{{ raise_exception('no ' ~ messages[0].role) }}")));
    let error: GgufError | undefined;
    try {
      file.applyChatTemplate(messages);
    } catch (caught) {
      error = caught as GgufError;
    }
    expect(error?.code).toBe('CHAT_TEMPLATE_ERROR');
    expect(error?.message).toContain('TemplateError: no user');
    expect(error?.offset).toBe(file.metadata.info('tokenizer.chat_template')!.offset);
  });

  it('a mapped or read file on disk', () => {
    const path = join(tempDir(), 'chat.gguf');
    writeGgufFile(path, spec(SIMPLE, { bos: 1, eos: 2 }));
    const file = openGguf(path);
    try {
      expect(file.applyChatTemplate(messages)).toBe('<s>[user]hi</s>[assistant]hello</s>');
    } finally {
      file.close();
    }
  });

  describe.skipIf(SKIP_SHARED)('real templates with their special tokens in the vocabulary (shared cases)', () => {
    const cases = SKIP_SHARED ? [] : readJson<ChatTemplateCase[]>(sharedPath('chat-templates', 'cases.json'));
    const expected = SKIP_SHARED ? [] : readJson<Array<{ ok: boolean; text?: string }>>(sharedPath('chat-templates', 'expected.json'));
    const picked = ['google-gemma-2-2b-it#0', 'meta-llama-Llama-3.1-8B-Instruct#2', 'Qwen-Qwen2.5-7B-Instruct#2', 'mistralai-Mistral-Nemo-Instruct-2407#0'];

    it.each(picked)('%s', (id) => {
      const i = cases.findIndex((c) => c.id === id);
      const c = cases[i]!;
      const tokens = ['<unk>', c.bos_token || '<no-bos>', c.eos_token, 'x'];
      const file = parseGguf(encodeGguf(spec(c.template, { tokens, bos: c.bos_token === '' ? undefined : 1, eos: 2 })));
      const out = file.applyChatTemplate(c.messages, { tools: c.tools, addGenerationPrompt: c.add_generation_prompt, variables: c.extra, now: new Date(2024, 6, 26) });
      expect(out).toBe(expected[i]!.text);
    });
  });
});

describe('applyChatTemplate on a remote file', () => {
  const imitation = useHubImitation();
  let hub: HubServer;
  beforeAll(() => {
    hub = imitation.hub;
  });

  it('reads the template and vocabulary from the header alone', async () => {
    hub.files.set('org/chat/model.gguf', { bytes: encodeGguf(spec(SIMPLE, { bos: 1, eos: 2 })) });
    const file = await openGgufRemote('hf:org/chat/model.gguf');
    try {
      expect(file.mode).toBe('remote');
      expect(file.applyChatTemplate(messages, { addGenerationPrompt: true })).toBe('<s>[user]hi</s>[assistant]hello</s>[assistant]');
    } finally {
      file.close();
    }
  });
});
