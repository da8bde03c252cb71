/**
 * @huggingface/jinja's runtime value classes (the package exports only the interpreter, so they are
 * taken from values it makes), our two additions (Markup strings, one-shot iterators), and Python's
 * view of them: truthiness, str(), repr(), ==, json.dumps, type names.
 */
import { Environment, Interpreter } from '@huggingface/jinja';
import { compareCodePoints, jsonFloat, jsonString, pythonFloat, pythonInt, pythonStringRepr } from './python-text.js';

/** A runtime value of the engine: `type` names its class, `value` holds the JS data. */
export interface Value {
  type: string;
  value: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  __bool__(): { value: boolean };
  /** Set on IteratorValue: Python's name of the iterator's type. */
  pythonType?: string;
}
// Instances typed `any`: the engine's classes share one shape, and instanceof must narrow to each of them.
type ValueClass = new (value?: any) => any; // eslint-disable-line @typescript-eslint/no-explicit-any

const probeEnv = new Environment();
let probeCount = 0;
const classOf = (v: unknown): ValueClass => (probeEnv.set(`v${probeCount++}`, v) as object).constructor as ValueClass;
const probe = new Interpreter(probeEnv);
const evalNode = (node: object): Value => probe.evaluate(node as never, probeEnv) as unknown as Value;

export const StringValue = classOf('');
export const IntegerValue = classOf(1);
export const FloatValue = classOf(1.5);
export const BooleanValue = classOf(true);
export const ObjectValue = classOf({});
export const ArrayValue = classOf([]);
export const FunctionValue = classOf(() => 0);
export const NullValue = classOf(null);
export const UndefinedValue = classOf(undefined);
export const TupleValue = evalNode({ type: 'TupleLiteral', value: [] }).constructor as ValueClass;
export const NamespaceValue = (probeEnv.lookupVariable('namespace') as unknown as Value).value([], probeEnv).constructor as ValueClass;
let kwargsSeen: Value | undefined;
probeEnv.setVariable('capture', new FunctionValue((args: Value[]) => ((kwargsSeen = args[0]), new NullValue())) as never);
evalNode({ type: 'CallExpression', callee: { type: 'Identifier', value: 'capture' }, args: [{ type: 'KeywordArgumentExpression', key: { value: 'k' }, value: { type: 'IntegerLiteral', value: 1 } }] });
export const KeywordArgumentsValue = kwargsSeen!.constructor as ValueClass;
/** The errors `{% break %}` and `{% continue %}` throw, up to the loop. */
const thrown = (node: object): new () => Error => {
  try {
    evalNode(node);
  } catch (error) {
    return (error as Error).constructor as new () => Error;
  }
  throw new Error(`${JSON.stringify(node)} did not throw`);
};
export const BreakControl = thrown({ type: 'Break' });
export const ContinueControl = thrown({ type: 'Continue' });

/** markupsafe's Markup: a string already escaped; `+` with a plain string escapes the other side. */
class Markup extends StringValue {
  readonly markup = true;
}
export const MarkupValue = Markup as ValueClass;

/**
 * What Python gives as a one-shot iterator rather than a list (`select`, `map`, `reverse`, ...):
 * iterable, but json.dumps refuses it, len() refuses it, and a generator is true even when empty.
 */
class PythonIterator extends ArrayValue {
  constructor(
    items: Value[],
    readonly pythonType: string,
  ) {
    super(items);
  }
  __bool__(): { value: boolean } {
    return new BooleanValue(this.pythonType === 'generator' || this.pythonType === 'list_reverseiterator' || this.value.length > 0);
  }
}
export const IteratorValue = PythonIterator as new (items: Value[], pythonType: string) => any; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * A dict's key in the engine's Map<string, ...>: strings as they are; numbers, booleans and None
 * (Python allows them, e.g. `{0: 0, 512: 128}`) under a prefix no string key from JSON or a
 * template starts with.
 */
const KEY_PREFIX = '\u0000key:';
export function dictKey(v: Value): string | undefined {
  if (v instanceof StringValue) return v.value as string;
  if (isNumber(v)) return KEY_PREFIX + numberOf(v);
  if (v instanceof NullValue) return KEY_PREFIX + 'None';
  return undefined;
}
export function keyValue(k: string): Value {
  if (!k.startsWith(KEY_PREFIX)) return new StringValue(k);
  const text = k.slice(KEY_PREFIX.length);
  if (text === 'None') return new NullValue();
  const n = Number(text);
  return Number.isInteger(n) ? new IntegerValue(n) : new FloatValue(n);
}

/** An undefined value remembers why it is undefined, to say so when a template uses it. */
export interface UndefinedInfo {
  hint?: string;
  /** 'SecurityError' for an attribute the sandbox refuses. */
  kind?: string;
}

export function undefinedValue(hint?: string, kind?: string): Value {
  const u = new UndefinedValue();
  Object.assign(u, { hint, kind } satisfies UndefinedInfo);
  return u;
}

export const isUndefined = (v: Value): boolean => v instanceof UndefinedValue;
export const isString = (v: Value): boolean => v instanceof StringValue;
export const isMarkup = (v: Value): boolean => v instanceof MarkupValue;
export const isNumber = (v: Value): boolean => v instanceof IntegerValue || v instanceof FloatValue || v instanceof BooleanValue;
export const isList = (v: Value): boolean => v instanceof ArrayValue && !(v instanceof TupleValue) && !(v instanceof IteratorValue);
export const isDict = (v: Value): boolean => v instanceof ObjectValue;

export function pythonTypeName(v: Value): string {
  if (v instanceof IteratorValue) return v.pythonType!;
  if (v instanceof MarkupValue) return 'Markup';
  if (v instanceof StringValue) return 'str';
  if (v instanceof BooleanValue) return 'bool';
  if (v instanceof IntegerValue) return 'int';
  if (v instanceof FloatValue) return 'float';
  if (v instanceof TupleValue) return 'tuple';
  if (v instanceof ArrayValue) return 'list';
  if (v instanceof NamespaceValue) return 'Namespace';
  if (v instanceof ObjectValue) return 'dict';
  if (v instanceof NullValue) return 'NoneType';
  if (v instanceof UndefinedValue) return 'Undefined';
  if (v instanceof FunctionValue) return 'function';
  return v.type;
}

/** A number's value as Python sees it: True is 1. */
export const numberOf = (v: Value): number => (v instanceof BooleanValue ? Number(v.value) : (v.value as number));

/**
 * What the deep operations (repr, ==, <, json.dumps) report their work to, the render's budgets
 * (ChatInterpreter): one call may walk a million items, so each counts its steps against the
 * deadline and the characters it builds against the size budgets as it goes.
 */
export interface Meter {
  /** Work done (items walked, compared or written); the deadline is read every 1,024 steps. */
  countSteps(n: number): void;
  /** A string of this many characters is built: at most maxChars, and counted in the render's total. */
  buildChars(n: number): void;
  readonly limits: { readonly maxChars: number };
}

/** Python's str(): what `{{ x }}`, `~` and `|string` print. */
export function pyStr(v: Value, meter: Meter): string {
  if (v instanceof StringValue) return v.value as string;
  if (v instanceof UndefinedValue) return '';
  return pyRepr(v, meter);
}

/** Python's repr() of a value without items. */
function scalarRepr(v: Value): string {
  if (v instanceof MarkupValue) return `Markup(${pythonStringRepr(v.value)})`;
  if (v instanceof StringValue) return pythonStringRepr(v.value);
  if (v instanceof BooleanValue) return v.value ? 'True' : 'False';
  if (v instanceof IntegerValue) return pythonInt(v.value);
  if (v instanceof FloatValue) return pythonFloat(v.value);
  if (v instanceof NullValue) return 'None';
  if (v instanceof UndefinedValue) return 'Undefined';
  if (v instanceof IteratorValue) return `<${v.pythonType} object at 0x7f0000000000>`;
  if (v instanceof FunctionValue) return '<function object at 0x7f0000000000>';
  return String(v.value);
}

/**
 * Python's repr(), as str() of lists and dicts shows their items. Written piece by piece, each
 * string's size checked before its repr is made, so that a list of big strings stops at maxChars.
 */
export function pyRepr(v: Value, meter: Meter): string {
  const max = meter.limits.maxChars;
  const parts: string[] = [];
  let length = 0;
  const emit = (text: string) => {
    length += text.length;
    if (length > max) meter.buildChars(length); // throws
    parts.push(text);
  };
  const walk = (x: Value): void => {
    meter.countSteps(1);
    if (x instanceof StringValue) {
      // A repr is at least as long as the text (its quotes aside).
      if (length + (x.value as string).length > max) meter.buildChars(length + (x.value as string).length);
      return emit(scalarRepr(x));
    }
    if (x instanceof IteratorValue || !(x instanceof ArrayValue || x instanceof ObjectValue)) return emit(scalarRepr(x));
    if (x instanceof ArrayValue) {
      const items = x.value as Value[];
      const tuple = x instanceof TupleValue;
      emit(tuple ? '(' : '[');
      items.forEach((item, i) => {
        if (i > 0) emit(', ');
        walk(item);
      });
      return emit(tuple ? (items.length === 1 ? ',)' : ')') : ']');
    }
    const namespace = x instanceof NamespaceValue;
    emit(namespace ? '<Namespace {' : '{');
    let first = true;
    for (const [k, item] of x.value as Map<string, Value>) {
      if (!first) emit(', ');
      first = false;
      walk(keyValue(k));
      emit(': ');
      walk(item);
    }
    emit(namespace ? '}>' : '}');
  };
  walk(v);
  const text = parts.length === 1 ? parts[0]! : parts.join('');
  meter.buildChars(text.length);
  return text;
}

/**
 * Python's ==. Items are compared as CPython compares them, the same object being equal to itself
 * without a walk (`b == b` over a million references to one list is quick in Python too).
 */
export function pyEquals(a: Value, b: Value, meter: Meter): boolean {
  meter.countSteps(1);
  if (isNumber(a) && isNumber(b)) return numberOf(a) === numberOf(b);
  if (a instanceof StringValue && b instanceof StringValue) return a.value === b.value;
  if (a instanceof NullValue || b instanceof NullValue) return a instanceof NullValue && b instanceof NullValue;
  if (a instanceof UndefinedValue || b instanceof UndefinedValue) return a instanceof UndefinedValue && b instanceof UndefinedValue;
  if (a instanceof IteratorValue || b instanceof IteratorValue) return a === b;
  if (a instanceof ArrayValue && b instanceof ArrayValue) {
    if (a instanceof TupleValue !== b instanceof TupleValue) return false;
    if (a === b) return true;
    const x = a.value as Value[];
    const y = b.value as Value[];
    // The walk below may skip its items (the same object): its length is the work.
    meter.countSteps(x.length);
    return x.length === y.length && x.every((item, i) => item === y[i] || pyEquals(item, y[i]!, meter));
  }
  if (a instanceof ObjectValue && b instanceof ObjectValue && !(a instanceof NamespaceValue) && !(b instanceof NamespaceValue)) {
    if (a === b) return true;
    const x = a.value as Map<string, Value>;
    const y = b.value as Map<string, Value>;
    if (x.size !== y.size) return false;
    meter.countSteps(x.size);
    for (const [k, item] of x) {
      const other = y.get(k);
      if (other === undefined || !(item === other || pyEquals(item, other, meter))) return false;
    }
    return true;
  }
  return a === b;
}

/** Python's <, >, <=, >= as a sign, or undefined where Python raises TypeError. */
export function pyCompare(a: Value, b: Value, meter: Meter): number | undefined {
  meter.countSteps(1);
  if (isNumber(a) && isNumber(b)) {
    const x = numberOf(a);
    const y = numberOf(b);
    return x < y ? -1 : x > y ? 1 : x === y ? 0 : NaN;
  }
  if (a instanceof StringValue && b instanceof StringValue) return Math.sign(compareCodePoints(a.value, b.value));
  if (a instanceof ArrayValue && b instanceof ArrayValue && !(a instanceof IteratorValue) && !(b instanceof IteratorValue) && a instanceof TupleValue === b instanceof TupleValue) {
    const x = a.value as Value[];
    const y = b.value as Value[];
    meter.countSteps(Math.min(x.length, y.length));
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (x[i] === y[i] || pyEquals(x[i]!, y[i]!, meter)) continue;
      return pyCompare(x[i]!, y[i]!, meter);
    }
    return Math.sign(x.length - y.length);
  }
  return undefined;
}

export interface JsonOptions {
  ensureAscii: boolean;
  /** The text of one level of indentation, or undefined for one line. */
  indent: string | undefined;
  itemSeparator: string;
  keySeparator: string;
  sortKeys: boolean;
}

/** What json.dumps refuses, as Python says it. */
export class NotSerializable extends Error {}

/** Python's json.dumps of a value, its size and work counted by the meter as it is written. */
export function jsonDumps(v: Value, options: JsonOptions, meter: Meter): string {
  const out: string[] = [];
  let written = 0;
  const emit = (s: string) => {
    written += s.length;
    if (written > meter.limits.maxChars) meter.buildChars(written); // throws
    out.push(s);
  };
  const walk = (x: Value, depth: number): void => {
    meter.countSteps(1);
    if (x instanceof StringValue) return emit(jsonString(x.value, options.ensureAscii));
    if (x instanceof BooleanValue) return emit(x.value ? 'true' : 'false');
    if (x instanceof IntegerValue) return emit(pythonInt(x.value));
    if (x instanceof FloatValue) return emit(jsonFloat(x.value));
    if (x instanceof NullValue) return emit('null');
    if (depth > 1000) throw new RangeError('json nesting too deep');
    const newline = options.indent === undefined ? '' : '\n' + options.indent.repeat(depth + 1);
    const closing = options.indent === undefined ? '' : '\n' + options.indent.repeat(depth);
    if (x instanceof ArrayValue && !(x instanceof IteratorValue)) {
      const items = x.value as Value[];
      if (items.length === 0) return emit('[]');
      emit('[');
      items.forEach((item, i) => {
        emit(i === 0 ? newline : options.itemSeparator + newline);
        walk(item, depth + 1);
      });
      return emit(closing + ']');
    }
    if (x instanceof ObjectValue && !(x instanceof NamespaceValue)) {
      let entries = [...(x.value as Map<string, Value>)];
      if (entries.length === 0) return emit('{}');
      if (options.sortKeys) entries = entries.sort(([p], [q]) => pyCompare(keyValue(p), keyValue(q), meter) ?? compareCodePoints(p, q));
      emit('{');
      entries.forEach(([key, item], i) => {
        emit(i === 0 ? newline : options.itemSeparator + newline);
        const k = keyValue(key);
        // json.dumps writes int, float, bool and None keys as strings of their JSON.
        const text = k instanceof StringValue ? (k.value as string) : k instanceof NullValue ? 'null' : k instanceof IntegerValue ? pythonInt(k.value) : jsonFloat(k.value);
        emit(jsonString(text, options.ensureAscii) + options.keySeparator);
        walk(item, depth + 1);
      });
      return emit(closing + '}');
    }
    throw new NotSerializable(`Object of type ${pythonTypeName(x)} is not JSON serializable`);
  };
  walk(v, 0);
  const text = out.join('');
  meter.buildChars(text.length);
  return text;
}
