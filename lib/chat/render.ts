/**
 * renderChatTemplate: a chat template rendered as transformers' apply_chat_template renders it
 * (jinja2's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loop controls, its
 * tojson, raise_exception and strftime_now), on @huggingface/jinja with our corrections
 * (interpreter.ts). A template is code from a file: it reaches only the values given to it, and
 * is stopped by a deadline and a size budget (see docs/api.md, "Chat templates").
 */
import { Environment, parse, tokenize } from '@huggingface/jinja';
import { GgufError } from '../errors.js';
import { ChatInterpreter } from './interpreter.js';
import { BudgetExceeded, TemplateFault } from './python-ops.js';
import { strftime } from './python-text.js';
import { describeSyntaxError } from './syntax-errors.js';
import { rewriteTokens } from './token-rewrites.js';
import {
  ArrayValue,
  BooleanValue,
  FloatValue,
  FunctionValue,
  IntegerValue,
  KeywordArgumentsValue,
  NullValue,
  ObjectValue,
  StringValue,
  isNumber,
  numberOf,
  pyStr,
  type Meter,
  type Value,
} from './values.js';

/** One message: `role` and `content` and whatever else the template reads (`tool_calls`, ...). */
export interface ChatMessage {
  role: string;
  content?: unknown;
  [key: string]: unknown;
}

export interface ChatTemplateLimits {
  /** Milliseconds a render may take before it is stopped (default 2000). */
  timeoutMs?: number;
  /** Longest string a template may build, its output included, in UTF-16 units (default 32 Mi); all it builds in a render: 8 times this. */
  maxChars?: number;
}

export interface RenderChatTemplateOptions extends ChatTemplateLimits {
  messages: readonly ChatMessage[];
  /** Tool (function) schemas, as transformers takes them; absent: `tools` is undefined in the template. */
  tools?: readonly object[];
  /** Whether to end with the opening of the assistant's turn (default false, as transformers). */
  addGenerationPrompt?: boolean;
  /** `bos_token` and `eos_token` in the template (default ''). */
  bosToken?: string;
  eosToken?: string;
  /** More variables for the template (e.g. `date_string`, `enable_thinking`); they override the above. */
  variables?: Record<string, unknown>;
  /** The date `strftime_now` formats (default: now). */
  now?: Date;
}

const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_MAX_CHARS = 32 * 1024 * 1024;
const MAX_ITEMS = 1 << 20;
/** The sandbox's MAX_RANGE. */
const MAX_RANGE = 100_000;
/** Parsed templates by their text: a model's template is rendered again and again. */
const parsedCache = new Map<string, ReturnType<typeof parse>>();
const PARSED_CACHE_SIZE = 16;

/**
 * Renders a chat template with these messages. Throws GgufError CHAT_TEMPLATE_ERROR when the
 * template raises (`raise_exception`, an undefined value used, a type error: the message as jinja2
 * words it, e.g. `TemplateError: System role not supported`), does not parse, or is stopped.
 */
export function renderChatTemplate(template: string, options: RenderChatTemplateOptions, errorOffset = 0): string {
  if (typeof template !== 'string') throw new TypeError('renderChatTemplate: the template is a string');
  if (!Array.isArray(options?.messages)) throw new TypeError('renderChatTemplate: options.messages is an array of messages');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxChars = options.maxChars ?? DEFAULT_MAX_CHARS;
  const start = performance.now();
  const context: Record<string, unknown> = {
    messages: options.messages,
    add_generation_prompt: options.addGenerationPrompt ?? false,
    bos_token: options.bosToken ?? '',
    eos_token: options.eosToken ?? '',
  };
  if (options.tools !== undefined && options.tools !== null) context.tools = options.tools;
  Object.assign(context, options.variables);
  // The caller's data is checked first: a TypeError for data a template cannot take.
  const values = Object.entries(context).map(([key, value]) => [key, toValue(value, key, 0)] as const);
  const env = new Environment();
  const interpreter = new ChatInterpreter(env, { deadline: start + timeoutMs, maxChars, maxItems: MAX_ITEMS });
  try {
    const program = parsed(template);
    setGlobals(env, options.now, interpreter);
    for (const [key, value] of values) env.setVariable(key, value as never);
    const out = (interpreter as unknown as { run(program: unknown): Value }).run(program);
    return out.value as string;
  } catch (error) {
    throw new GgufError('CHAT_TEMPLATE_ERROR', `chat template: ${describe(error, timeoutMs)}`, errorOffset);
  }
}

function parsed(template: string): ReturnType<typeof parse> {
  let program = parsedCache.get(template);
  if (program === undefined) {
    // jinja2 reads \r\n and \r as \n everywhere in the source before lexing.
    const source = template.replace(/\r\n?/g, '\n');
    const parseText = (text: string) => parse(rewriteTokens(tokenize(text, { lstrip_blocks: true, trim_blocks: true })) as never);
    try {
      program = parseText(source);
    } catch (error) {
      const words = error instanceof SyntaxError ? error.message : 'the template does not parse';
      throw new TemplateFault('TemplateSyntaxError', describeSyntaxError(source, parseText, words));
    }
    if (parsedCache.size >= PARSED_CACHE_SIZE) parsedCache.delete(parsedCache.keys().next().value!);
    parsedCache.set(template, program);
  }
  return program;
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof TemplateFault) return `${error.pythonType}: ${error.message}`;
  if (error instanceof BudgetExceeded) return `stopped: ${error.message}${error.message.includes('time') ? ` (${timeoutMs} ms)` : ''}`;
  if (error instanceof RangeError) {
    if (/call stack/i.test(error.message)) return 'RecursionError: maximum recursion depth exceeded';
    return `stopped: ${error.message}`;
  }
  if (error instanceof SyntaxError) return `TemplateSyntaxError: ${error.message}`;
  return `TemplateError: ${error instanceof Error ? error.message : String(error)}`;
}

function setGlobals(env: Environment, now: Date | undefined, meter: Meter): void {
  const set = (name: string, value: Value) => env.setVariable(name, value as never);
  for (const [name, value] of [['true', true], ['false', false], ['True', true], ['False', false]] as const) set(name, new BooleanValue(value));
  set('none', new NullValue());
  set('None', new NullValue());
  set(
    'raise_exception',
    new FunctionValue((args: Value[]) => {
      throw new TemplateFault('TemplateError', args[0] === undefined ? '' : pyStr(args[0], meter));
    }),
  );
  set('strftime_now', new FunctionValue((args: Value[]) => new StringValue(strftime(now ?? new Date(), args[0] === undefined ? '' : pyStr(args[0], meter)))));
  set('range', new FunctionValue(range));
  set(
    'dict',
    new FunctionValue((args: Value[]) => {
      const map = new Map<string, Value>();
      for (const a of args) {
        if (a instanceof ObjectValue) for (const [k, v] of a.value as Map<string, Value>) map.set(k, v);
      }
      return new ObjectValue(map);
    }),
  );
}

/** Python's range() as the sandbox allows it: integers, at most MAX_RANGE items. */
function range(args: Value[]): Value {
  const ints = args.filter((a) => !(a instanceof KeywordArgumentsValue));
  if (ints.length === 0 || ints.length > 3 || !ints.every((a) => isNumber(a) && !(a instanceof FloatValue))) {
    throw new TemplateFault('TypeError', 'range() takes 1 to 3 integer arguments');
  }
  const n = ints.map(numberOf);
  const [start, stop, step] = n.length === 1 ? [0, n[0]!, 1] : [n[0]!, n[1]!, n[2] ?? 1];
  if (step === 0) throw new TemplateFault('ValueError', 'range() arg 3 must not be zero');
  const count = Math.max(0, Math.ceil((stop - start) / step));
  if (count > MAX_RANGE) throw new TemplateFault('OverflowError', `Range too big. The sandbox blocks ranges larger than MAX_RANGE (${MAX_RANGE}).`);
  return new ArrayValue(Array.from({ length: count }, (_, i) => new IntegerValue(start + i * step)));
}

/**
 * The caller's data as template values: JSON-like data only (strings, numbers, booleans, null,
 * arrays, plain objects' own enumerable keys). Nothing else crosses: no functions, no prototypes.
 */
function toValue(x: unknown, path: string, depth: number): Value {
  if (depth > 64) throw new TypeError(`chat: ${path} is nested deeper than 64 levels (or refers to itself)`);
  switch (typeof x) {
    case 'string':
      return new StringValue(x);
    case 'number':
      return Number.isInteger(x) ? new IntegerValue(x) : new FloatValue(x);
    case 'bigint':
      if (x > BigInt(Number.MAX_SAFE_INTEGER) || x < BigInt(Number.MIN_SAFE_INTEGER)) throw new TypeError(`chat: ${path} is a bigint beyond 2^53`);
      return new IntegerValue(Number(x));
    case 'boolean':
      return new BooleanValue(x);
    case 'undefined':
      return new NullValue();
    case 'object': {
      if (x === null) return new NullValue();
      // A hole in an array is null, as JSON.stringify writes it.
      if (Array.isArray(x)) return new ArrayValue(Array.from(x, (item, i) => toValue(item, `${path}[${i}]`, depth + 1)));
      // Plain objects only: a Map, Set, Date, RegExp, Buffer, typed array or class instance has no
      // JSON-like keys (it would render as {} or a dict of its bytes).
      const prototype = Object.getPrototypeOf(x) as unknown;
      if (prototype !== Object.prototype && prototype !== null) {
        const kind = Object.prototype.toString.call(x).slice(8, -1);
        throw new TypeError(`chat: ${path} is ${kind === 'Object' ? 'an object of a class' : `${/^[AEIO]/.test(kind) ? 'an' : 'a'} ${kind}`}; templates take JSON-like data (plain objects, arrays, strings, numbers, booleans, null)`);
      }
      const map = new Map<string, Value>();
      for (const key of Object.keys(x)) {
        const item = (x as Record<string, unknown>)[key];
        if (item !== undefined) map.set(key, toValue(item, `${path}.${key}`, depth + 1));
      }
      return new ObjectValue(map);
    }
    default:
      throw new TypeError(`chat: ${path} is a ${typeof x}; templates take JSON-like data`);
  }
}
