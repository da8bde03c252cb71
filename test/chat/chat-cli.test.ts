// `gguf-mmap chat` as users run it (the compiled CLI), local and remote; the truth for the prompt
// is the shared case's jinja2 output with the same special tokens in the file's vocabulary.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeGguf, parseGguf, type GgufWriteSpec } from '../../lib/index.js';
import { parseChatArgs, runChat } from '../../lib/cli/chat-command.js';
import type { HubServer } from '../../scripts/hub-imitation.js';
import { useHubImitation } from '../helpers/hub.js';
import { SKIP_SHARED, readJson, sharedPath } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';
import { tinyllamaShapedSpec } from '../../scripts/tinyllama-shape.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const imitation = useHubImitation();
let hub: HubServer;
beforeAll(() => {
  hub = imitation.hub;
});

/** Asynchronous: the Hub imitation answering the remote case is in this process. */
function cli(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, HF_ENDPOINT: hub.endpoint } }, (error, stdout, stderr) =>
      resolve({ status: error === null ? 0 : Number((error as { code?: number }).code), stdout, stderr }),
    );
  });
}

function model(template: string, bos: string, eos: string): Uint8Array {
  const spec: GgufWriteSpec = {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: ['<unk>', bos, eos] }],
      ['tokenizer.ggml.bos_token_id', { type: 'UINT32', value: 1 }],
      ['tokenizer.ggml.eos_token_id', { type: 'UINT32', value: 2 }],
      ['tokenizer.chat_template', { type: 'STRING', value: template }],
    ],
    tensors: [],
  };
  return encodeGguf(spec);
}

const dir = tempDir();
const write = (name: string, data: unknown) => {
  const path = join(dir, name);
  writeFileSync(path, typeof data === 'string' || data instanceof Uint8Array ? data : JSON.stringify(data));
  return path;
};

describe.skipIf(SKIP_SHARED)('gguf-mmap chat', () => {
  interface Case {
    id: string;
    template: string;
    bos_token: string;
    eos_token: string;
    messages: object[];
    tools?: object[];
    add_generation_prompt: boolean;
  }
  const cases = SKIP_SHARED ? [] : readJson<Case[]>(sharedPath('chat-templates', 'cases.json'));
  const expected = SKIP_SHARED ? [] : readJson<Array<{ ok: boolean; text?: string; error?: string }>>(sharedPath('chat-templates', 'expected.json'));
  const at = (id: string) => {
    const i = cases.findIndex((c) => c.id === id);
    return { c: cases[i]!, e: expected[i]! };
  };

  it('prints the prompt of a local file, with tools and variables, as jinja2 renders it', async () => {
    const { c, e } = at('meta-llama-Llama-3.1-8B-Instruct#2');
    const file = write('llama31.gguf', model(c.template, c.bos_token, c.eos_token));
    const args = ['chat', file, '--messages', write('m.json', c.messages), '--tools', write('t.json', c.tools), '--var', 'date_string=26 Jul 2024'];
    if (!c.add_generation_prompt) args.push('--no-generation-prompt');
    const r = await cli(...args);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(e.text);
  });

  it('reads a remote model header only (hf: URI)', async () => {
    const { c, e } = at('google-gemma-2-2b-it#0');
    hub.files.set('org/gemma/model.gguf', { bytes: model(c.template, c.bos_token, c.eos_token) });
    const r = await cli('chat', 'hf:org/gemma/model.gguf', '--messages', write('g.json', c.messages), ...(c.add_generation_prompt ? [] : ['--no-generation-prompt']));
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(e.text);
  });

  it('a template that raises: its message, exit 3', async () => {
    const { c, e } = at('google-gemma-2-2b-it#1');
    const file = write('gemma.gguf', model(c.template, c.bos_token, c.eos_token));
    const r = await cli('chat', file, '--messages', write('sys.json', c.messages));
    expect(r.status).toBe(3);
    expect(r.stderr).toContain(`gguf-mmap: CHAT_TEMPLATE_ERROR: chat template: ${e.error}`);
  });

  it('arguments: messages and tools files, variables, named template (in-process)', () => {
    const m = write('args.json', [{ role: 'user', content: 'x' }]);
    expect(parseChatArgs(['model.gguf', '--messages', m, '--var', 'enable_thinking=false', '--var', 'date_string=26 Jul 2024', '--template', 'rag', '--no-generation-prompt'])).toEqual({
      model: 'model.gguf',
      messages: [{ role: 'user', content: 'x' }],
      tools: undefined,
      generationPrompt: false,
      tokens: false,
      name: 'rag',
      variables: { enable_thinking: false, date_string: '26 Jul 2024' },
      split: true,
    });
    expect(() => parseChatArgs(['model.gguf', '--messages', write('bad.json', '{not json')])).toThrow(/is not JSON/);
    expect(() => parseChatArgs(['model.gguf', '--messages', write('obj.json', { role: 'user' })])).toThrow(/not a JSON list of objects/);
    expect(() => parseChatArgs(['model.gguf', '--messages', m, '--tools', write('tools.json', { name: 'f' })])).toThrow(/not a JSON list/);
    expect(() => parseChatArgs(['model.gguf', '--messages', m, '--var', 'novalue'])).toThrow(/KEY=JSON/);
    expect(() => parseChatArgs(['a.gguf', 'b.gguf', '--messages', m])).toThrow(/one MODEL/);
    expect(() => parseChatArgs(['model.gguf', '--messages', m, '--bogus'])).toThrow(/unknown option '--bogus'/);
  });

  it('on a terminal, the text is shown unambiguously: a backslash doubled, control characters but newline and tab escaped (in-process)', () => {
    const file = parseGguf(model('{% for m in messages %}{{ m.content }}|{% endfor %}', '<s>', '</s>'));
    // Six characters `\u000a` and `\u0009`, a real newline and tab, an escape sequence.
    const content = 'a\\u000ab\\u0009c\nd\te\u001b[31mf\\g';
    const args = { model: 'm', messages: [{ role: 'user', content }], generationPrompt: false, tokens: false, variables: {}, split: true };
    expect(runChat(file, args, { terminal: true })).toBe('a\\\\u000ab\\\\u0009c\nd\te\\u001b[31mf\\\\g|\n');
    expect(runChat(file, args, { terminal: false })).toBe(`${content}|`);
  });

  it('usage errors: exit 1', async () => {
    const { c } = at('google-gemma-2-2b-it#0');
    const file = write('gemma0.gguf', model(c.template, c.bos_token, c.eos_token));
    const missing = await cli('chat', file);
    expect([missing.status, missing.stderr]).toEqual([1, expect.stringContaining('chat needs --messages')]);
  });
});

describe('gguf-mmap chat --tokens', () => {
  it("adds the BOS llama.cpp adds when the template writes none (TinyLlama's shape), as applyChatTemplate({ tokenize: true })", async () => {
    // TinyLlama's vocabulary shape (SPM, adds BOS) and a template without bos_token; the header
    // alone (no tensors), written by the project's writer.
    const bytes = encodeGguf({ ...tinyllamaShapedSpec(), tensors: [] });
    const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi there' }];
    const r = await cli('chat', write('tinyllama-shaped.gguf', bytes), '--messages', write('tiny.json', messages), '--tokens');
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { prompt: string; tokens: number[]; count: number };
    expect(out.prompt).toBe('<|system|>\nBe brief.</s>\n<|user|>\nHi there</s>\n');
    // llama.cpp v0.5.0 (node-llama-cpp 3.22.1, vocabOnly): common_tokenize(prompt, add_special =
    // false, parse_special = true) of this prompt on this file; the server's add_special adds BOS (1).
    const llamaCpp = [
      229, 153, 132, 63, 127, 707, 291, 597, 127, 65, 13, 69, 104, 229, 153, 132, 278, 371, 104, 105, 49, 2, 229, 153, 132, 13, 63, 127, 120, 5673, 127, 65, 13, 75, 263,
      229, 153, 132, 260, 266, 467, 104, 2, 229, 153, 132, 13,
    ];
    expect(out.tokens).toEqual([1, ...llamaCpp]);
    expect(out.count).toBe(48);
    expect(out.tokens).toEqual(Array.from(parseGguf(bytes).applyChatTemplate(messages, { addGenerationPrompt: true, tokenize: true })));
  });
});
