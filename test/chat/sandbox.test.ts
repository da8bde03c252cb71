// A chat template is code from a model file: it reaches only the values it is given (no process,
// require, prototypes or engine internals), and a template that loops, recurses or grows is
// stopped with CHAT_TEMPLATE_ERROR. Limits are set low here so that each stop comes quickly.
import { describe, expect, it } from 'vitest';
import { GgufError, renderChatTemplate } from '../../lib/index.js';

const messages = [{ role: 'user', content: 'hi' }];

function errorOf(template: string, options: { timeoutMs?: number; maxChars?: number } = {}): GgufError {
  try {
    renderChatTemplate(template, { messages, ...options });
  } catch (error) {
    expect(error).toBeInstanceOf(GgufError);
    expect((error as GgufError).code).toBe('CHAT_TEMPLATE_ERROR');
    return error as GgufError;
  }
  throw new Error(`rendered: ${template}`);
}

describe('chat template sandbox', () => {
  it('attributes of the engine and of JS objects are undefined, as the sandbox makes them', () => {
    const probes = [
      "''.__class__",
      'messages.constructor',
      "messages['constructor']",
      '{}.constructor',
      "{}['__proto__']",
      'messages.__proto__',
      'messages[0].toString',
      'messages[0].hasOwnProperty',
      'range.constructor',
      'raise_exception.value',
      'namespace.prototype',
      'strftime_now.__globals__',
      "'x'.constructor",
      'loop',
      'process',
      'require',
      'globalThis',
    ];
    const out = renderChatTemplate(probes.map((p) => `[{{ ${p} is defined }}:{{ ${p} }}]`).join(''), { messages });
    expect(out).toBe('[False:]'.repeat(probes.length));
  });

  it('using them further raises, as jinja2 does (SecurityError for the unsafe ones)', () => {
    expect(errorOf("{{ ''.__class__.__mro__ }}").message).toContain("SecurityError: access to attribute '__class__' of 'str' object is unsafe.");
    expect(errorOf("{{ 'x'.constructor.constructor('return process')() }}").message).toContain("UndefinedError: 'str object' has no attribute 'constructor'");
    expect(errorOf('{{ range.constructor("return process")() }}').message).toContain('UndefinedError');
    expect(errorOf('{{ messages.append(1) }}').message).toContain("SecurityError: access to attribute 'append' of 'list' object is unsafe.");
    expect(errorOf("{{ messages[0].update({'role': 'x'}) }}").message).toContain('SecurityError');
  });

  it('keys named like JS internals are plain data', () => {
    const data = JSON.parse('[{"role": "user", "content": "c", "__proto__": "p", "constructor": "k"}]') as typeof messages;
    expect(renderChatTemplate("{{ messages[0]['__proto__'] }}{{ messages[0].constructor }}{{ messages[0]|length }}", { messages: data })).toBe('pk4');
  });

  it('the caller data is JSON-like: functions and cycles are refused before rendering', () => {
    expect(() => renderChatTemplate('{{ messages }}', { messages: [{ role: 'user', content: (() => 1) as unknown as string }] })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = { role: 'user' };
    cyclic.self = cyclic;
    expect(() => renderChatTemplate('x', { messages: [cyclic as { role: string }] })).toThrow(/nested deeper/);
  });

  it('so are a Map, Set, Date, RegExp, Buffer, typed array or class instance, wherever they are (not rendered as {} or a dict of bytes)', () => {
    class Point {
      x = 1;
    }
    const odd: Array<[string, unknown]> = [
      ['a Map', new Map([['k', 'v']])],
      ['a Set', new Set([1])],
      ['a Date', new Date(0)],
      ['a RegExp', /x/],
      ['a Uint8Array', Buffer.from('hi')],
      ['a Float32Array', new Float32Array(2)],
      ['an ArrayBuffer', new ArrayBuffer(2)],
      ['an object of a class', new Point()],
      ['a String', new String('boxed')],
    ];
    for (const [kind, value] of odd) {
      const message = `chat: messages[0].content is ${kind}; templates take JSON-like data`;
      expect(() => renderChatTemplate('{{ messages }}', { messages: [{ role: 'user', content: value }] }), kind).toThrow(TypeError);
      expect(() => renderChatTemplate('{{ messages }}', { messages: [{ role: 'user', content: value }] }), kind).toThrow(message);
      expect(() => renderChatTemplate('{{ x }}', { messages, variables: { x: [value] } }), kind).toThrow('chat: x[0] is');
      expect(() => renderChatTemplate('{{ tools }}', { messages, tools: [{ f: value }] }), kind).toThrow('chat: tools[0].f is');
    }
    // Plain data still crosses: objects without a prototype, and arrays with holes (null, as JSON writes them).
    const bare = Object.assign(Object.create(null) as object, { role: 'user', content: 'c' });
    // eslint-disable-next-line no-sparse-arrays
    expect(renderChatTemplate('{{ messages[0].content }}{{ x }}', { messages: [bare as { role: string }], variables: { x: [1, , 3] } })).toBe('c[1, None, 3]');
  });

  it('a loop that runs too long is stopped at the deadline', () => {
    const error = errorOf('{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}', { timeoutMs: 30 });
    expect(error.message).toContain('stopped: the template ran past its time limit (30 ms)');
  });

  it('a string that grows past the limit is stopped, before it is built', () => {
    expect(errorOf("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", { maxChars: 1 << 16 }).message).toContain(
      'stopped: the template built a string of more than 65536 characters',
    );
    expect(errorOf("{{ 'x' * 1000000000000 }}", { maxChars: 10_000 }).message).toContain('stopped');
    expect(errorOf("{{ range(100000)|join(',') }}{{ range(100000)|join(',') }}", { maxChars: 1000 }).message).toContain('stopped');
    expect(errorOf('{% for i in range(2000) %}{{ messages }}{% endfor %}', { maxChars: 10_000 }).message).toContain('stopped: the template wrote more than 40000 characters');
    expect(errorOf('{{ messages|tojson(indent=1000000000) }}', { maxChars: 10_000 }).message).toContain('stopped');
    expect(errorOf("{{ 'x'|indent(1000000000, true) }}", { maxChars: 10_000 }).message).toContain('stopped');
    expect(errorOf("{{ ('x' * 5000).replace('', 'y' * 5000) }}", { maxChars: 10_000 }).message).toContain('stopped');
    expect(errorOf("{{ ('x' * 5000)|replace('x', 'yyy') }}", { maxChars: 10_000 }).message).toContain('stopped');
  });

  it('ranges are bounded as in the sandbox, recursion as in Python', () => {
    expect(errorOf('{{ range(100001)|length }}').message).toContain('OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).');
    expect(renderChatTemplate('{{ range(100000)|length }}', { messages })).toBe('100000');
    expect(errorOf('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}').message).toContain('RecursionError: maximum recursion depth exceeded');
  });

  it('strip and split scan long runs of spaces once (an end-anchored regex would take hours here)', () => {
    const content = ' '.repeat(300_000) + 'x' + ' y'.repeat(100_000);
    const out = renderChatTemplate("{{ messages[0].content|trim|length }} {{ messages[0].content.rstrip()|length }} {{ messages[0].content.split()|length }}", {
      messages: [{ role: 'user', content }],
    });
    expect(out).toBe(`${200_001} ${500_001} ${100_001}`);
  });

  it("a template that does not parse: jinja2's words and line (recorded: str(e) and e.lineno of jinja2's TemplateSyntaxError)", () => {
    const recorded: Array<[string, string, number]> = [
      ["{% for x in messages %}", "TemplateSyntaxError: Unexpected end of template. Jinja was looking for the following tags: 'endfor' or 'else'. The innermost block that needs to be closed is 'for'.", 1],
      ["a\n{% for x in messages %}\n{% if x %}\nb{% endfor %}", "TemplateSyntaxError: Encountered unknown tag 'endfor'. You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.", 4],
      ["{% if x %}{% endfor %}", "TemplateSyntaxError: Encountered unknown tag 'endfor'. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.", 1],
      ["{% endif %}", "TemplateSyntaxError: Encountered unknown tag 'endif'.", 1],
      ["x\n\n{% foo %}", "TemplateSyntaxError: Encountered unknown tag 'foo'.", 3],
      ["{% for x in messages %}{% else %}{% else %}{% endfor %}", "TemplateSyntaxError: Encountered unknown tag 'else'. Jinja was looking for the following tags: 'endfor'. The innermost block that needs to be closed is 'for'.", 1],
      ["{% macro f() %}", "TemplateSyntaxError: Unexpected end of template. Jinja was looking for the following tags: 'endmacro'. The innermost block that needs to be closed is 'macro'.", 1],
      ["{% set x %}abc", "TemplateSyntaxError: Unexpected end of template. Jinja was looking for the following tags: 'endset'. The innermost block that needs to be closed is 'set'.", 1],
      ["{% for x in messages %}\n{% endif %}", "TemplateSyntaxError: Encountered unknown tag 'endif'. Jinja was looking for the following tags: 'endfor' or 'else'. The innermost block that needs to be closed is 'for'.", 2],
      ["{% if a %}{% elif b %}{% else %}{% elif c %}{% endif %}", "TemplateSyntaxError: Encountered unknown tag 'elif'. Jinja was looking for the following tags: 'endif'. The innermost block that needs to be closed is 'if'.", 1],
      ["{% if a %}\n{% for b in c %}\n{% endif %}", "TemplateSyntaxError: Encountered unknown tag 'endif'. You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for 'endfor' or 'else'. The innermost block that needs to be closed is 'for'.", 3],
      ["x\n{% set y = '%}' %}\n{{ y }}\n{% if y %}\n", "TemplateSyntaxError: Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.", 4],
      ["{{ 1 + }}", "TemplateSyntaxError: unexpected 'end of print statement'", 1],
      ["{{ x ", "TemplateSyntaxError: unexpected end of template, expected 'end of print statement'.", 1]
    ];
    for (const [template, words, line] of recorded) expect(errorOf(template).message, template).toContain(`chat template: ${words} (line ${line})`);
    // What jinja2 words otherwise is said in the parser's words, on the line of the tag.
    expect(errorOf('a\n{% if %}').message).toContain("TemplateSyntaxError: unexpected 'end of statement block' (line 2)");
    expect(errorOf('a\n\n{% raw %}{{ x }}{% endraw %}').message).toContain("TemplateSyntaxError: the tag 'raw' is not supported here (line 3)");
  });
});
