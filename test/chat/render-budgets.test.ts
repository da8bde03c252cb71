// What one render may cost in all: memory (everything it builds, counted against one budget for
// the whole render) and time (operations that walk a million items read the clock as they go).
// Before these budgets, the first templates here ended the process (V8 "heap out of memory",
// SIGABRT) and the others ran 48x past their limit, or for hours.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeGguf, GgufError, renderChatTemplate } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const dir = tempDir();

/** `gguf-mmap chat` on a file holding this template, in a process of its own with Node's default heap. */
function chatInChild(template: string, name: string): Promise<{ status: number | null; signal: string | null; stderr: string }> {
  const model = join(dir, `${name}.gguf`);
  writeFileSync(
    model,
    encodeGguf({
      metadata: [
        ['general.architecture', { type: 'STRING', value: 'llama' }],
        ['tokenizer.chat_template', { type: 'STRING', value: template }],
      ],
      tensors: [],
    }),
  );
  const messages = join(dir, 'messages.json');
  writeFileSync(messages, JSON.stringify([{ role: 'user', content: 'hi' }]));
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'chat', model, '--messages', messages], { maxBuffer: 1 << 20 }, (error, _stdout, stderr) =>
      resolve({ status: error === null ? 0 : typeof error.code === 'number' ? error.code : null, signal: error?.signal ?? null, stderr }),
    );
  });
}

const BIG = "{% set a = 'x' * 30000000 %}";

describe('one render cannot exhaust the heap (default limits)', () => {
  const crashes: Array<[string, string]> = [
    ['map over copies', `${BIG}{{ ([a] * 1000)|map('upper')|list|length }}`],
    ['printing a list', `${BIG}{{ [a] * 20 }}`],
    ['% formatting', `${BIG}{{ '%s' % ([a] * 20) }}`],
    ['iterating a long string', `${BIG}{% for c in a %}{% endfor %}`],
  ];
  it.each(crashes)('%s: CHAT_TEMPLATE_ERROR "stopped", exit 3, no abort', async (name, template) => {
    const r = await chatInChild(template, name.replace(/\W+/g, '-'));
    expect({ status: r.status, signal: r.signal }).toEqual({ status: 3, signal: null });
    expect(r.stderr).toContain('gguf-mmap: CHAT_TEMPLATE_ERROR: chat template: stopped: the template built');
  });

  it('what a render builds in all is bounded, each string and list being within its own bound', () => {
    // Ten strings of 1,000 characters each: each is within maxChars, all of them are not within 8x.
    const template = "{% set a = 'x' * 1000 %}{% for i in range(10) %}{% set b = a|upper %}{% endfor %}";
    expect(() => renderChatTemplate(template, { messages: [], maxChars: 1000 })).toThrow('stopped: the template built more than 8000 characters (and list items) in all');
    expect(renderChatTemplate("{% set a = 'x' * 1000 %}{% for i in range(3) %}{% set b = a|upper %}{% endfor %}ok", { messages: [], maxChars: 1000 })).toBe('ok');
  });
});

function stopped(template: string): GgufError {
  try {
    renderChatTemplate(template, { messages: [], timeoutMs: 100 });
  } catch (error) {
    return error as GgufError;
  }
  throw new Error(`rendered: ${template}`);
}

describe('deep operations read the clock as they go (a 100 ms limit)', () => {
  // Each is the template's last operation: with the clock read only between steps, it ran to its end
  // (seconds, or hours for ==) and the template rendered.
  // l and m: equal lists, not the same object; n: the same length as l, its last item different.
  const L = '{% set l = range(100000)|list %}{% set m = range(100000)|list %}{% set n = range(99999)|list + [0] %}';
  const slow: Array<[string, string]> = [
    ['== on nested lists', `${L}{{ [l] * 100000 == [m] * 100000 }}`],
    ['in over nested lists', `${L}{{ n in [l] * 100000 }}`],
    ['sort', `${L}{{ ([l] * 100000)|sort|length }}`],
    ['max', `${L}{{ ([l] * 100000)|max|length }}`],
    ['groupby', `${L}{{ ([{'k': l}] * 100000)|groupby('k')|length }}`],
    ['printing a list', `${L}{{ [l] * 40 }}`],
    ['tojson', `${L}{{ ([l] * 40)|tojson }}`],
  ];
  it.each(slow)('%s: stopped', (_, template) => {
    const error = stopped(template);
    expect(error).toBeInstanceOf(GgufError);
    expect(error.message).toContain('stopped: the template ran past its time limit (100 ms)');
  });

  it('the same list compared with itself is equal at once, as in Python (item by item, the same object)', () => {
    expect(renderChatTemplate(`${L}{% set b = [l] * 1000000 %}{{ b == b }} {{ [b] == [b] }} {{ b[:] == b }}`, { messages: [], timeoutMs: 10_000 })).toBe('True True True');
  });
});
