// Chat templates rendered against jinja2's own output: the shared cases (17 real templates x 3
// conversations, recorded with ../shared/chat-templates/chat-template-ref.py), and held-out cases
// of ours (held-out-cases.json: templates written here to reach each corner of jinja2's semantics,
// recorded with the same script into held-out-expected.json).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GgufError, renderChatTemplate } from '../../lib/index.js';
import { SKIP_SHARED, readJson, sharedPath } from '../helpers/shared.js';
import type { ChatTemplateCase as Case } from '../../scripts/chat-cases.js';

type Expected = { id: string; ok: true; text: string } | { id: string; ok: false; error: string };

/** The reference script renders strftime_now on 2024-07-26. */
const REFERENCE_DAY = new Date(2024, 6, 26);

function render(c: Case): string {
  return renderChatTemplate(c.template, {
    messages: c.messages,
    tools: c.tools,
    addGenerationPrompt: c.add_generation_prompt,
    bosToken: c.bos_token,
    eosToken: c.eos_token,
    variables: c.extra,
    now: REFERENCE_DAY,
  });
}

function check(c: Case, e: Expected): void {
  expect(e.id).toBe(c.id);
  if (e.ok) {
    expect(render(c), c.id).toBe(e.text);
    return;
  }
  let error: unknown;
  try {
    render(c);
  } catch (caught) {
    error = caught;
  }
  expect(error, `${c.id} renders, jinja2 raised ${e.error}`).toBeInstanceOf(GgufError);
  expect((error as GgufError).code).toBe('CHAT_TEMPLATE_ERROR');
  // The message names the exception as jinja2 raised it: `TemplateError: System role not supported`.
  expect((error as GgufError).message, c.id).toContain(e.error);
}

describe.skipIf(SKIP_SHARED)('shared chat-template cases (jinja2 as transformers runs it)', () => {
  const cases = SKIP_SHARED ? [] : readJson<Case[]>(sharedPath('chat-templates', 'cases.json'));
  const expected = SKIP_SHARED ? [] : readJson<Expected[]>(sharedPath('chat-templates', 'expected.json'));

  it('has the 51 cases, some of which raise', () => {
    expect(cases).toHaveLength(51);
    expect(expected.filter((e) => !e.ok).length).toBeGreaterThan(0);
  });

  it.each(cases.map((c, i) => [c.id, c, expected[i]!] as const))('%s', (_, c, e) => check(c, e));
});

describe('held-out chat-template cases (our templates, recorded from jinja2)', () => {
  const dir = import.meta.dirname;
  const cases = JSON.parse(readFileSync(join(dir, 'held-out-cases.json'), 'utf8')) as Case[];
  const expected = JSON.parse(readFileSync(join(dir, 'held-out-expected.json'), 'utf8')) as Expected[];

  it.each(cases.map((c, i) => [c.id, c, expected[i]!] as const))('%s', (_, c, e) => check(c, e));
});

describe('what is not done here raises, never printing another text than jinja2', () => {
  const errorOf = (template: string) => {
    try {
      renderChatTemplate(template, { messages: [] });
    } catch (error) {
      return (error as GgufError).message;
    }
    return 'rendered';
  };

  it.each(['attr', 'filesizeformat', 'pprint', 'random', 'slice', 'striptags', 'urlencode', 'urlize', 'wordwrap', 'xmlattr'])('the filter %s', (name) => {
    expect(errorOf(`{{ 'x'|${name} }}`)).toContain(`TemplateRuntimeError: the filter '${name}' is not supported here`);
  });

  it('% with a width, a precision or another conversion (jinja2 prints "    a", "3.14")', () => {
    expect(errorOf("{{ '%5s' % 'a' }}")).toContain("TemplateRuntimeError: the format '%5s' is not supported here");
    expect(errorOf("{{ '%.2f'|format(3.14159) }}")).toContain("TemplateRuntimeError: the format '%.2f' is not supported here");
    expect(errorOf("{{ '%q' % 1 }}")).toContain("ValueError: unsupported format character 'q' (0x71)");
  });
});
