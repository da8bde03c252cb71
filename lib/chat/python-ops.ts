/**
 * Python's operations on template values, as jinja2 runs them: arguments bound as Python binds
 * them, iteration, `in`, the binary operators, dict and str methods, `%` and str.format, the
 * attribute paths of selectattr/map/sort; and the errors Python raises (TemplateFault). Sizes an
 * operation would build are checked against the render's Budget before it builds them.
 */
import { htmlEscape } from './python-text.js';
import {
  ArrayValue,
  BooleanValue,
  dictKey,
  FloatValue,
  FunctionValue,
  IntegerValue,
  isList,
  isMarkup,
  isNumber,
  isUndefined,
  IteratorValue,
  keyValue,
  KeywordArgumentsValue,
  type Meter,
  MarkupValue,
  NamespaceValue,
  NullValue,
  numberOf,
  ObjectValue,
  pyCompare,
  pyEquals,
  pyRepr,
  pyStr,
  pythonTypeName,
  StringValue,
  TupleValue,
  type UndefinedInfo,
  undefinedValue,
  type Value,
} from './values.js';

/**
 * What an operation reports the strings and lists it builds to, before or as it builds them (the
 * interpreter's budgets: each string and list bounded, and all of them counted in the render's total).
 */
export interface Budget extends Meter {
  buildItems(length: number): void;
}


/** An error as Python would raise it: its type name and message (jinja2's `UndefinedError: ...`). */
export class TemplateFault extends Error {
  constructor(
    readonly pythonType: string,
    message: string,
  ) {
    super(message);
  }
}

/** A budget ran out: the template is stopped. */
export class BudgetExceeded extends Error {}

// Python's str.strip() whitespace (JS's trim differs: it strips U+FEFF, keeps U+001C-U+001F and U+0085).
export const PY_SPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const SPACE = new RegExp(`[${PY_SPACE}]`);
const SPACE_RUN = new RegExp(`[${PY_SPACE}]+`, 'g');
// Scanned, not matched with /\s+$/: a regex anchored at the end backtracks quadratically on a
// long run of spaces followed by text, and a template's input may be megabytes.
const isSpace = (s: string, i: number) => SPACE.test(s[i]!);
const LINE_BREAKS = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

export function undefinedFault(v: Value): TemplateFault {
  const { hint, kind } = v as Value & UndefinedInfo;
  return new TemplateFault(kind ?? 'UndefinedError', hint ?? 'value is undefined');
}

export function pyStrip(s: string, chars: Value | undefined, side: 'both' | 'left' | 'right', meter: Meter): string {
  if (chars === undefined || chars instanceof NullValue) {
    let start = 0;
    let end = s.length;
    if (side !== 'right') while (start < end && isSpace(s, start)) start++;
    if (side !== 'left') while (end > start && isSpace(s, end - 1)) end--;
    return s.slice(start, end);
  }
  const set = new Set(Array.from(pyStr(chars, meter)));
  const cps = Array.from(s);
  let start = 0;
  let end = cps.length;
  if (side !== 'right') while (start < end && set.has(cps[start]!)) start++;
  if (side !== 'left') while (end > start && set.has(cps[end - 1]!)) end--;
  return cps.slice(start, end).join('');
}

/** Splits positional arguments from the trailing keyword arguments the engine passes. */
export function splitArgs(args: Value[]): [Value[], Map<string, Value>] {
  const last = args.at(-1);
  if (last !== undefined && last instanceof KeywordArgumentsValue) return [args.slice(0, -1), last.value as Map<string, Value>];
  return [args, new Map()];
}

/** Binds Python-style parameters (name order = position) to positional and keyword arguments. */
export function bind(fn: string, names: readonly string[], args: Value[]): Array<Value | undefined> {
  const [positional, keywords] = splitArgs(args);
  if (positional.length > names.length) throw new TemplateFault('TypeError', `${fn}() takes at most ${names.length} arguments (${positional.length} given)`);
  const bound: Array<Value | undefined> = names.map((_, i) => positional[i]);
  for (const [key, value] of keywords) {
    const i = names.indexOf(key);
    if (i < 0) throw new TemplateFault('TypeError', `${fn}() got an unexpected keyword argument '${key}'`);
    bound[i] = value;
  }
  return bound;
}

export const truthy = (v: Value | undefined): boolean => v !== undefined && v.__bool__().value;

export function dictMethod(self: Budget, object: Value, name: string): Value {
  const map = object.value as Map<string, Value>;
  return new FunctionValue((args: Value[]) => {
    if (name === 'get') {
      const [key, fallback] = bind('get', ['key', 'default'], args);
      if (key === undefined) throw new TemplateFault('TypeError', 'get expected at least 1 argument, got 0');
      const k = dictKey(key);
      return (k === undefined ? undefined : map.get(k)) ?? fallback ?? new NullValue();
    }
    if (name === 'keys') return new IteratorValue([...map.keys()].map(keyValue), 'dict_keys');
    if (name === 'values') return new IteratorValue([...map.values()], 'dict_values');
    self.buildItems(map.size);
    return new IteratorValue([...map].map(([k, v]) => new TupleValue([keyValue(k), v])), 'dict_items');
  });
}

/** Python's string methods where the engine's differ (whitespace, code points); others are the engine's. */
export function stringMethod(self: Budget, object: Value, name: string): Value | undefined {
  const s = object.value as string;
  const wrap = (out: string) => (isMarkup(object) ? new MarkupValue(out) : new StringValue(out));
  switch (name) {
    case 'strip':
    case 'lstrip':
    case 'rstrip':
      return new FunctionValue((args: Value[]) => wrap(pyStrip(s, bind(name, ['chars'], args)[0], name === 'strip' ? 'both' : name === 'lstrip' ? 'left' : 'right', self)));
    case 'split':
      return new FunctionValue((args: Value[]) => {
        const [sep, maxsplit] = bind('split', ['sep', 'maxsplit'], args);
        const limit = maxsplit === undefined ? -1 : numberOf(maxsplit);
        let parts: string[];
        if (sep === undefined || sep instanceof NullValue) {
          parts = [];
          let start = 0;
          while (start < s.length && isSpace(s, start)) start++;
          while (start < s.length) {
            if (limit >= 0 && parts.length === limit) {
              parts.push(s.slice(start));
              break;
            }
            SPACE_RUN.lastIndex = start;
            const m = SPACE_RUN.exec(s);
            if (m === null) {
              parts.push(s.slice(start));
              break;
            }
            parts.push(s.slice(start, m.index));
            start = m.index + m[0].length;
          }
        } else {
          const separator = pyStr(sep, self);
          if (separator === '') throw new TemplateFault('ValueError', 'empty separator');
          parts = s.split(separator);
          if (limit >= 0 && parts.length > limit + 1) parts = [...parts.slice(0, limit), parts.slice(limit).join(separator)];
        }
        self.buildItems(parts.length);
        return new ArrayValue(parts.map(wrap));
      });
    case 'replace':
      return new FunctionValue((args: Value[]) => {
        const [from, to, count] = bind('replace', ['old', 'new', 'count'], args);
        if (!(from instanceof StringValue) || !(to instanceof StringValue)) throw new TemplateFault('TypeError', 'replace() arguments must be str');
        return wrap(pyReplace(self, s, from!.value as string, to!.value as string, count === undefined ? -1 : numberOf(count)));
      });
    case 'format':
      return new FunctionValue((args: Value[]) => wrap(pythonFormat(self, s, args)));
    case 'find':
    case 'rfind':
    case 'index':
    case 'rindex':
    case 'count':
      return new FunctionValue((args: Value[]) => {
        const [sub] = bind(name, ['sub'], args);
        if (!(sub instanceof StringValue)) throw new TemplateFault('TypeError', `must be str, not ${sub === undefined ? 'nothing' : pythonTypeName(sub)}`);
        const needle = sub!.value as string;
        const cps = (text: string) => Array.from(text).length; // Python counts code points
        if (name === 'count') return new IntegerValue(needle === '' ? cps(s) + 1 : s.split(needle).length - 1);
        const at = name.startsWith('r') ? s.lastIndexOf(needle) : s.indexOf(needle);
        if (at < 0 && name.endsWith('index')) throw new TemplateFault('ValueError', 'substring not found');
        return new IntegerValue(at < 0 ? -1 : cps(s.slice(0, at)));
      });
    case 'splitlines':
      return new FunctionValue(() => new ArrayValue(splitLines(s).map(wrap)));
    default:
      return undefined;
  }
}

/** Python's str.splitlines(). */
export function splitLines(s: string): string[] {
  const lines = s.split(LINE_BREAKS);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

export function binary(self: Budget, op: string, left: Value, right: Value): Value {
  switch (op) {
    case '==':
      return new BooleanValue(pyEquals(left, right, self));
    case '!=':
      return new BooleanValue(!pyEquals(left, right, self));
    case 'in':
      return new BooleanValue(contains(right, left, self));
    case 'not in':
      return new BooleanValue(!contains(right, left, self));
    case '~': {
      const out = pyStr(left, self) + pyStr(right, self);
      self.buildChars(out.length);
      return new StringValue(out);
    }
  }
  if (isUndefined(left)) throw undefinedFault(left);
  if (isUndefined(right)) throw undefinedFault(right);
  const unsupported = () => new TemplateFault('TypeError', `unsupported operand type(s) for ${op}: '${pythonTypeName(left)}' and '${pythonTypeName(right)}'`);
  if (op === '<' || op === '>' || op === '<=' || op === '>=') {
    const sign = pyCompare(left, right, self);
    if (sign === undefined) throw new TemplateFault('TypeError', `'${op}' not supported between instances of '${pythonTypeName(left)}' and '${pythonTypeName(right)}'`);
    return new BooleanValue(op === '<' ? sign < 0 : op === '>' ? sign > 0 : op === '<=' ? sign <= 0 : sign >= 0);
  }
  const numeric = isNumber(left) && isNumber(right);
  const isFloat = left instanceof FloatValue || right instanceof FloatValue;
  const num = (x: number) => (isFloat ? new FloatValue(x) : new IntegerValue(x));
  if (numeric) {
    const a = numberOf(left);
    const b = numberOf(right);
    switch (op) {
      case '+':
        return num(a + b);
      case '-':
        return num(a - b);
      case '*':
        return num(a * b);
      case '/':
        if (b === 0) throw new TemplateFault('ZeroDivisionError', 'division by zero');
        return new FloatValue(a / b);
      case '//':
        if (b === 0) throw new TemplateFault('ZeroDivisionError', isFloat ? 'float floor division by zero' : 'integer division or modulo by zero');
        return num(Math.floor(a / b));
      case '%': {
        if (b === 0) throw new TemplateFault('ZeroDivisionError', isFloat ? 'float modulo' : 'integer modulo by zero');
        const r = a % b;
        return num(r !== 0 && r < 0 !== b < 0 ? r + b : r);
      }
      case '**': {
        if (a === 0 && b < 0) throw new TemplateFault('ZeroDivisionError', '0.0 cannot be raised to a negative power');
        // A negative exponent gives a float, as in Python.
        return isFloat || b < 0 ? new FloatValue(a ** b) : new IntegerValue(a ** b);
      }
    }
  }
  if (op === '+') {
    if (left instanceof StringValue && right instanceof StringValue) {
      // markupsafe: Markup + str escapes the str, and str + Markup too (Markup.__radd__).
      const markup = isMarkup(left) || isMarkup(right);
      const text = (v: Value) => (markup && !isMarkup(v) ? htmlEscape(v.value as string) : (v.value as string));
      const out = text(left) + text(right);
      self.buildChars(out.length);
      return markup ? new MarkupValue(out) : new StringValue(out);
    }
    if (left instanceof StringValue) throw new TemplateFault('TypeError', `can only concatenate str (not "${pythonTypeName(right)}") to str`);
    if ((isList(left) && isList(right)) || (left instanceof TupleValue && right instanceof TupleValue)) {
      const items = [...(left.value as Value[]), ...(right.value as Value[])];
      self.buildItems(items.length);
      return left instanceof TupleValue ? new TupleValue(items) : new ArrayValue(items);
    }
    if (isList(left)) throw new TemplateFault('TypeError', `can only concatenate list (not "${pythonTypeName(right)}") to list`);
    throw unsupported();
  }
  if (op === '*') {
    const [seq, count] = isNumber(right) && !(right instanceof FloatValue) ? [left, right] : isNumber(left) && !(left instanceof FloatValue) ? [right, left] : [undefined, undefined];
    if (seq !== undefined && count !== undefined) {
      const n = Math.max(0, numberOf(count));
      if (seq instanceof StringValue) {
        self.buildChars((seq.value as string).length * n);
        const out = (seq.value as string).repeat(n);
        return isMarkup(seq) ? new MarkupValue(out) : new StringValue(out);
      }
      if (isList(seq) || seq instanceof TupleValue) {
        const items = seq.value as Value[];
        self.buildItems(items.length * n);
        const out = Array.from({ length: items.length * n }, (_, i) => items[i % items.length]!);
        return seq instanceof TupleValue ? new TupleValue(out) : new ArrayValue(out);
      }
    }
    throw new TemplateFault('TypeError', `can't multiply sequence by non-int of type '${pythonTypeName(right)}'`);
  }
  if (op === '%' && left instanceof StringValue) return new StringValue(percentFormat(self, left.value as string, right));
  throw unsupported();
}

/** Python's `in`. */
export function contains(container: Value, item: Value, meter: Meter): boolean {
  if (isUndefined(container)) return false; // iterating jinja2's Undefined yields nothing
  if (container instanceof StringValue) {
    if (!(item instanceof StringValue)) throw new TemplateFault('TypeError', `'in <string>' requires string as left operand, not ${pythonTypeName(item)}`);
    return (container.value as string).includes(item.value as string);
  }
  if (container instanceof ObjectValue && !(container instanceof NamespaceValue)) {
    const key = dictKey(item);
    return key !== undefined && (container.value as Map<string, Value>).has(key);
  }
  if (container instanceof ArrayValue) {
    meter.countSteps((container.value as Value[]).length);
    return (container.value as Value[]).some((x) => x === item || pyEquals(x, item, meter));
  }
  throw new TemplateFault('TypeError', `argument of type '${pythonTypeName(container)}' is not iterable`);
}

/**
 * Python's printf-style `str % args`, for %s, %r, %d, %i and %% (with `%(key)s` from a dict). Widths,
 * precisions and the other conversions (`%5s`, `%.2f`, `%x`) raise here rather than print other text.
 */
export function percentFormat(self: Budget, format: string, args: Value): string {
  const mapping = args instanceof ObjectValue && !(args instanceof NamespaceValue) ? (args.value as Map<string, Value>) : undefined;
  const list = args instanceof TupleValue ? (args.value as Value[]) : [args];
  let next = 0;
  const out = format.replace(/%(?:\(([^)]*)\))?([-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d*))?)([a-zA-Z%]?)/g, (whole, key: string | undefined, spec: string, c: string) => {
    if (c === '') throw new TemplateFault('ValueError', 'incomplete format');
    if (!'sridouxXeEfFgGca%'.includes(c)) throw new TemplateFault('ValueError', `unsupported format character '${c}' (0x${c.charCodeAt(0).toString(16)})`);
    if (spec !== '' || !'srdi%'.includes(c)) throw new TemplateFault('TemplateRuntimeError', `the format '${whole}' is not supported here (only %s, %r, %d, %i and %%)`);
    if (c === '%') return '%';
    let v: Value | undefined;
    if (key !== undefined) {
      if (mapping === undefined) throw new TemplateFault('TypeError', 'format requires a mapping');
      v = mapping.get(key);
      if (v === undefined) throw new TemplateFault('KeyError', `'${key}'`);
    } else v = list[next++];
    if (v === undefined) throw new TemplateFault('TypeError', 'not enough arguments for format string');
    if (c === 's') return pyStr(v, self);
    if (c === 'r') return pyRepr(v, self);
    if (!isNumber(v)) throw new TemplateFault('TypeError', `%${c} format: a real number is required, not ${pythonTypeName(v)}`);
    return String(Math.trunc(numberOf(v)) + 0);
  });
  // A dict given is taken whole, or by key: Python does not count what is left of it.
  if (next < list.length && mapping === undefined) throw new TemplateFault('TypeError', 'not all arguments converted during string formatting');
  self.buildChars(out.length);
  return out;
}

/**
 * The items a for loop, `list` or a filter walks, as Python iterates the value. A string's
 * characters and a dict's keys are made here (Python makes them one at a time): they are counted
 * as a list built, so that a loop over a 30-million-character string stops instead of filling
 * memory.
 */
export function iterate(v: Value, budget: Budget, what = 'object'): Value[] {
  if (isUndefined(v)) return [];
  if (v instanceof StringValue) {
    const s = v.value as string;
    budget.buildItems(s.length > 1024 ? codePointCount(s) : s.length);
    return Array.from(s, (c) => new StringValue(c));
  }
  if (v instanceof ArrayValue) return v.value as Value[];
  if (v instanceof ObjectValue && !(v instanceof NamespaceValue)) {
    budget.buildItems((v.value as Map<string, Value>).size);
    return [...(v.value as Map<string, Value>).keys()].map(keyValue);
  }
  throw new TemplateFault('TypeError', `'${pythonTypeName(v)}' ${what} is not iterable`);
}

/** Python's len() of a str: its code points, counted without building them. */
export function codePointCount(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** jinja2's attribute lookup for selectattr/map/sort: dotted, integers index lists. */
export function attributePath(item: Value, attribute: Value, meter: Meter): Value {
  const parts = isNumber(attribute) ? [numberOf(attribute)] : pyStr(attribute, meter).split('.');
  let v = item;
  for (const part of parts) {
    if (v instanceof ObjectValue) v = (v.value as Map<string, Value>).get(String(part)) ?? undefinedValue(`'dict object' has no attribute '${part}'`);
    else if (v instanceof ArrayValue && /^-?\d+$/.test(String(part))) v = (v.value as Value[]).at(Number(part)) ?? undefinedValue(`list object has no element ${part}`);
    else if (isUndefined(v)) return v; // make_attrgetter's getitem on Undefined gives Undefined
    else return undefinedValue(`'${pythonTypeName(v)} object' has no attribute '${part}'`);
  }
  return v;
}

/** jinja2's sort key: the attribute's value, lower-cased when not case-sensitive. */
export function sortKey(item: Value, attribute: Value | undefined, caseSensitive: boolean, meter: Meter): Value {
  const v = attribute === undefined || attribute instanceof NullValue ? item : attributePath(item, attribute, meter);
  return !caseSensitive && v instanceof StringValue ? new StringValue((v.value as string).toLowerCase()) : v;
}

export function sortBy(items: Value[], key: (v: Value) => Value, reverse: boolean, meter: Meter): Value[] {
  meter.countSteps(items.length);
  const keyed = items.map((item) => ({ item, key: key(item) }));
  keyed.sort((a, b) => {
    const sign = pyCompare(a.key, b.key, meter);
    if (sign === undefined) throw new TemplateFault('TypeError', `'<' not supported between instances of '${pythonTypeName(a.key)}' and '${pythonTypeName(b.key)}'`);
    return reverse ? -sign : sign;
  });
  return keyed.map((k) => k.item);
}

/**
 * Python's str.format for `{}`, `{0}`, `{name}` (with `!s`/`!r`), `{{` and `}}`. No attribute or
 * index lookups inside fields (the sandbox's way out in Python) and no format specs but ''.
 */
export function pythonFormat(self: Budget, format: string, args: Value[]): string {
  const [positional, keywords] = splitArgs(args);
  let auto = 0;
  let manual = false;
  const out = format.replace(/\{\{|\}\}|\{([^{}]*)\}|[{}]/g, (whole, field: string | undefined) => {
    if (whole === '{{') return '{';
    if (whole === '}}') return '}';
    if (field === undefined) throw new TemplateFault('ValueError', `Single '${whole}' encountered in format string`);
    const m = /^([A-Za-z_][A-Za-z0-9_]*|\d*)(?:!([rs]))?(?::(.*))?$/s.exec(field);
    if (m === null || (m[3] !== undefined && m[3] !== '')) throw new TemplateFault('ValueError', `unsupported format field '{${field}}'`);
    const [, name, conversion] = m;
    // string.Formatter (which the sandbox formats with) says this for either switch.
    if (name === '' ? manual : /^\d+$/.test(name!) && auto > 0) throw new TemplateFault('ValueError', 'cannot switch from manual field specification to automatic field numbering');
    if (/^\d+$/.test(name!)) manual = true;
    const v = name === '' ? positional[auto++] : /^\d+$/.test(name!) ? positional[Number(name)] : keywords.get(name!);
    if (v === undefined) throw new TemplateFault(name !== '' && !/^\d+$/.test(name!) ? 'KeyError' : 'IndexError', name !== '' && !/^\d+$/.test(name!) ? `'${name}'` : 'Replacement index out of range for positional args tuple');
    return conversion === 'r' ? pyRepr(v, self) : pyStr(v, self);
  });
  self.buildChars(out.length);
  return out;
}

/** Python's str.replace, its size checked before it is built ('' inserts between every character). */
export function pyReplace(self: Budget, s: string, from: string, to: string, count: number): string {
  if (from === '') {
    const chars = Array.from(s);
    const k = count < 0 ? chars.length + 1 : Math.min(count, chars.length + 1);
    self.buildChars(s.length + k * to.length);
    let out = '';
    for (let i = 0; i < chars.length; i++) out += (i < k ? to : '') + chars[i];
    return k > chars.length ? out + to : out;
  }
  const parts = s.split(from);
  const occurrences = parts.length - 1;
  const k = count < 0 ? occurrences : Math.min(count, occurrences);
  self.buildChars(s.length + k * (to.length - from.length));
  return parts.slice(0, k + 1).join(to) + (k < occurrences ? from + parts.slice(k + 1).join(from) : '');
}

