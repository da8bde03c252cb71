/**
 * jinja2's filters and tests where they differ from the engine's (or it has none), as jinja2 3.1
 * and transformers' tojson write them; the names of jinja2's filters (no other name is a filter).
 */
import { Environment } from '@huggingface/jinja';
import { floatOfText, intOfText, roundFloat, roundInt } from './python-numbers.js';
import { htmlEscape, titleCase } from './python-text.js';
import {
  ArrayValue,
  BooleanValue,
  FloatValue,
  FunctionValue,
  IntegerValue,
  isMarkup,
  isNumber,
  isUndefined,
  IteratorValue,
  jsonDumps,
  keyValue,
  type Meter,
  MarkupValue,
  NamespaceValue,
  NotSerializable,
  NullValue,
  numberOf,
  ObjectValue,
  pyCompare,
  pyEquals,
  pyStr,
  pythonTypeName,
  StringValue,
  TupleValue,
  undefinedValue,
  type Value,
} from './values.js';
import { valueNode, type Node } from './nodes.js';
import {
  attributePath,
  type Budget,
  bind,
  contains,
  dictMethod,
  iterate,
  pyReplace,
  pyStrip,
  sortBy,
  sortKey,
  splitArgs,
  splitLines,
  codePointCount,
  percentFormat,
  undefinedFault,
  TemplateFault,
  truthy,
} from './python-ops.js';

/** What a filter may use of the interpreter: the budgets, and applying another filter (`map('upper')`). */
export interface FilterHost extends Budget {
  applyFilter(operand: Value, filter: Node, env: Environment): Value;
}

export const TESTS: Record<string, (v: Value) => boolean> = {
  defined: (v) => !isUndefined(v),
  undefined: (v) => isUndefined(v),
  none: (v) => v instanceof NullValue,
  string: (v) => v instanceof StringValue,
  number: (v) => isNumber(v),
  integer: (v) => v instanceof IntegerValue,
  float: (v) => v instanceof FloatValue,
  boolean: (v) => v instanceof BooleanValue,
  true: (v) => v instanceof BooleanValue && v.value === true,
  false: (v) => v instanceof BooleanValue && v.value === false,
  mapping: (v) => v instanceof ObjectValue && !(v instanceof NamespaceValue),
  iterable: (v) => isUndefined(v) || v instanceof StringValue || v instanceof ArrayValue || (v instanceof ObjectValue && !(v instanceof NamespaceValue)),
  sequence: (v) => isUndefined(v) || v instanceof StringValue || (v instanceof ArrayValue && !(v instanceof IteratorValue)) || (v instanceof ObjectValue && !(v instanceof NamespaceValue)),
  callable: (v) => v instanceof FunctionValue,
  lower: (v) => v instanceof StringValue && (v.value as string).toLowerCase() === v.value && (v.value as string).toUpperCase() !== v.value,
  upper: (v) => v instanceof StringValue && (v.value as string).toUpperCase() === v.value && (v.value as string).toLowerCase() !== v.value,
  odd: (v) => numberOf(v) % 2 !== 0,
  even: (v) => numberOf(v) % 2 === 0,
};

const STRING_FILTERS: Record<string, (s: string) => string> = {
  upper: (s) => s.toUpperCase(),
  lower: (s) => s.toLowerCase(),
  capitalize: (s) => (s === '' ? s : Array.from(s)[0]!.toUpperCase() + Array.from(s).slice(1).join('').toLowerCase()),
};

/** jinja2's built-in filters and transformers' tojson: no other name is a filter. */
export const JINJA2_FILTERS = new Set(
  'abs attr batch capitalize center count d default dictsort e escape filesizeformat first float forceescape format groupby indent int items join last length list lower map max min pprint random reject rejectattr replace reverse round safe select selectattr slice sort string striptags sum title tojson trim truncate unique upper urlencode urlize wordcount wordwrap xmlattr'.split(' '),
);

export type Filter = (self: FilterHost, operand: Value, args: Value[]) => Value;
export const FILTERS: Record<string, Filter> = {
  tojson: (self, operand, args) => {
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    const [ensureAscii, indent, separators, sortKeys] = bind('tojson', ['ensure_ascii', 'indent', 'separators', 'sort_keys'], args);
    let indentText: string | undefined;
    if (indent !== undefined && !(indent instanceof NullValue)) {
      if (!(indent instanceof StringValue)) self.buildChars(numberOf(indent));
      indentText = indent instanceof StringValue ? (indent.value as string) : ' '.repeat(Math.max(0, numberOf(indent)));
    }
    let itemSeparator = indentText === undefined ? ', ' : ',';
    let keySeparator = ': ';
    if (separators !== undefined && !(separators instanceof NullValue)) {
      const pair = iterate(separators, self);
      if (pair.length !== 2) throw new TemplateFault('ValueError', 'separators must be a pair');
      [itemSeparator, keySeparator] = pair.map((x) => pyStr(x, self)) as [string, string];
    }
    try {
      const text = jsonDumps(operand, { ensureAscii: truthy(ensureAscii), indent: indentText, itemSeparator, keySeparator, sortKeys: truthy(sortKeys) }, self);
      return new StringValue(text);
    } catch (error) {
      if (error instanceof NotSerializable) throw new TemplateFault('TypeError', error.message);
      throw error;
    }
  },
  safe: (self, operand) => (isMarkup(operand) ? operand : new MarkupValue(pyStr(operand, self))),
  escape: (self, operand) => (isMarkup(operand) ? operand : new MarkupValue(htmlEscape(pyStr(operand, self)))),
  e: (self, operand, args) => FILTERS.escape!(self, operand, args),
  forceescape: (self, operand) => new MarkupValue(htmlEscape(pyStr(operand, self))),
  string: (self, operand) => (operand instanceof StringValue ? operand : new StringValue(pyStr(operand, self))),
  trim: (self, operand, args) => {
    const out = pyStrip(pyStr(operand, self), bind('trim', ['chars'], args)[0], 'both', self);
    return isMarkup(operand) ? new MarkupValue(out) : new StringValue(out);
  },
  upper: (self, operand) => stringFilter(self, operand, 'upper'),
  lower: (self, operand) => stringFilter(self, operand, 'lower'),
  capitalize: (self, operand) => stringFilter(self, operand, 'capitalize'),
  length: (self, operand) => length(operand),
  count: (self, operand) => length(operand),
  list: (self, operand) => {
    const items = iterate(operand, self);
    self.buildItems(items.length);
    return new ArrayValue([...items]);
  },
  first: (self, operand) => {
    // A string's first character without splitting it all.
    if (operand instanceof StringValue) return (operand.value as string) === '' ? undefinedValue('No first item, sequence was empty.') : new StringValue(String.fromCodePoint((operand.value as string).codePointAt(0)!));
    return iterate(operand, self)[0] ?? undefinedValue('No first item, sequence was empty.');
  },
  last: (self, operand) => {
    if (operand instanceof StringValue) {
      const s = operand.value as string;
      const at = s.length > 1 && /[\udc00-\udfff]/.test(s.at(-1)!) && /[\ud800-\udbff]/.test(s.at(-2)!) ? s.length - 2 : s.length - 1;
      return s === '' ? undefinedValue('No last item, sequence was empty.') : new StringValue(s.slice(at));
    }
    const reversible = isUndefined(operand) || (operand instanceof ArrayValue && !(operand instanceof IteratorValue && operand.pythonType === 'generator')) || (operand instanceof ObjectValue && !(operand instanceof NamespaceValue));
    if (!reversible) throw new TemplateFault('TypeError', `'${pythonTypeName(operand)}' object is not reversible`);
    return iterate(operand, self).at(-1) ?? undefinedValue('No last item, sequence was empty.');
  },
  join: (self, operand, args) => {
    const [separator, attribute] = bind('join', ['d', 'attribute'], args);
    // jinja2: map(make_attrgetter(attribute)) first; a missing attribute is Undefined, printed ''.
    const values = attribute === undefined ? iterate(operand, self) : iterate(operand, self).map((x) => attributePath(x, attribute, self));
    self.countSteps(values.length);
    const items = values.map((x) => pyStr(x, self));
    const sep = separator === undefined ? '' : pyStr(separator, self);
    self.buildChars(items.reduce((n, s) => n + s.length + sep.length, 0));
    return new StringValue(items.join(sep));
  },
  default: (self, operand, args) => {
    const [fallback, boolean] = bind('default', ['default_value', 'boolean'], args);
    const use = isUndefined(operand) || (truthy(boolean) && !truthy(operand));
    return use ? (fallback ?? new StringValue('')) : operand;
  },
  d: (self, operand, args) => FILTERS.default!(self, operand, args),
  items: (self, operand) => {
    if (isUndefined(operand)) return new IteratorValue([], 'generator');
    if (!(operand instanceof ObjectValue) || operand instanceof NamespaceValue) throw new TemplateFault('TypeError', 'Can only get item pairs from a mapping.');
    return new IteratorValue((dictMethod(self, operand, 'items').value as (a: Value[]) => Value)([]).value as Value[], 'generator');
  },
  reverse: (self, operand) => {
    if (operand instanceof StringValue) return new StringValue(Array.from(operand.value as string).reverse().join(''));
    if (operand instanceof IteratorValue && operand.pythonType === 'generator') return new ArrayValue([...(operand.value as Value[])].reverse());
    if (operand instanceof ArrayValue) return new IteratorValue([...(operand.value as Value[])].reverse(), operand instanceof TupleValue ? 'reversed' : 'list_reverseiterator');
    if (operand instanceof ObjectValue && !(operand instanceof NamespaceValue)) return new IteratorValue(iterate(operand, self).reverse(), 'dict_reversekeyiterator');
    throw new TemplateFault('FilterArgumentError', 'argument must be iterable');
  },
  indent: (self, operand, args) => {
    // jinja2 3.1's do_indent, splitlines() quirk included.
    const [width, first, blank] = bind('indent', ['width', 'first', 'blank'], args);
    if (width !== undefined && !(width instanceof StringValue)) self.buildChars(numberOf(width));
    const indention = width === undefined ? '    ' : width instanceof StringValue ? (width.value as string) : ' '.repeat(Math.max(0, numberOf(width)));
    const lines = splitLines(pyStr(operand, self) + '\n');
    let out: string;
    if (truthy(blank)) out = lines.join('\n' + indention);
    else out = (lines.shift() ?? '') + (lines.length > 0 ? '\n' + lines.map((l) => (l ? indention + l : l)).join('\n') : '');
    if (truthy(first)) out = indention + out;
    return new StringValue(out);
  },
};

/** jinja2's select/reject/selectattr/rejectattr: a generator of the items a test passes (or fails). */
function selectFilter(withAttribute: boolean, keep: boolean): Filter {
  return (self, operand, args) => {
    const [positional] = splitArgs(args);
    const items = truthy(operand) ? iterate(operand, self) : [];
    const [attribute, testName, ...testArgs] = withAttribute ? positional : [undefined, ...positional];
    const test = testName === undefined ? undefined : testNamed(pyStr(testName, self), self);
    self.countSteps(items.length);
    const out = items.filter((item) => {
      const subject = attribute === undefined ? item : attributePath(item, attribute, self);
      const passed = test === undefined ? truthy(subject) : test(subject, testArgs as Value[]);
      return passed === keep;
    });
    self.buildItems(out.length);
    return new IteratorValue(out, 'generator');
  };
}

/** jinja2's map: `map(attribute=..., default=...)` or `map('filter', args...)`, as a generator. */
const mapFilter: Filter = (self, operand, args) => {
  const [positional, keywords] = splitArgs(args);
  const items = truthy(operand) ? iterate(operand, self) : [];
  let out: Value[];
  if (keywords.has('attribute')) {
    const fallback = keywords.get('default');
    out = items.map((item) => {
      const v = attributePath(item, keywords.get('attribute')!, self);
      return isUndefined(v) && fallback !== undefined ? fallback : v;
    });
    self.countSteps(items.length);
  } else {
    if (positional.length === 0) throw new TemplateFault('FilterArgumentError', 'map requires a filter argument');
    const [filterName, ...rest] = positional;
    const node = { type: 'CallExpression', callee: { type: 'Identifier', value: pyStr(filterName!, self) }, args: rest.map(valueNode) };
    out = items.map((item) => self.applyFilter(item, node, new Environment()));
  }
  return new IteratorValue(out, 'generator');
};

export function testNamed(name: string, meter: Meter): (v: Value, args: Value[]) => boolean {
  const simple = TESTS[name];
  if (simple !== undefined) return (v) => simple(v);
  const withArg = TESTS_WITH_ARGUMENT[name];
  if (withArg !== undefined) {
    return (v, args) => {
      if (args[0] === undefined) throw new TemplateFault('TypeError', `test '${name}' needs an argument`);
      return withArg(v, args[0], meter);
    };
  }
  throw new TemplateFault('TemplateRuntimeError', `No test named '${name}'.`);
}

const compareWith = (accept: (sign: number) => boolean) => (a: Value, b: Value, meter: Meter) => {
  const sign = pyCompare(a, b, meter);
  if (sign === undefined) throw new TemplateFault('TypeError', `comparison not supported between instances of '${pythonTypeName(a)}' and '${pythonTypeName(b)}'`);
  return accept(sign);
};
const TESTS_WITH_ARGUMENT: Record<string, (v: Value, arg: Value, meter: Meter) => boolean> = {
  equalto: pyEquals,
  eq: pyEquals,
  '==': pyEquals,
  ne: (a, b, meter) => !pyEquals(a, b, meter),
  '!=': (a, b, meter) => !pyEquals(a, b, meter),
  lt: compareWith((s) => s < 0),
  '<': compareWith((s) => s < 0),
  lessthan: compareWith((s) => s < 0),
  le: compareWith((s) => s <= 0),
  '<=': compareWith((s) => s <= 0),
  gt: compareWith((s) => s > 0),
  '>': compareWith((s) => s > 0),
  greaterthan: compareWith((s) => s > 0),
  ge: compareWith((s) => s >= 0),
  '>=': compareWith((s) => s >= 0),
  in: (a, b, meter) => contains(b, a, meter),
  sameas: (a, b) => a === b || (a instanceof NullValue && b instanceof NullValue) || (a instanceof BooleanValue && b instanceof BooleanValue && a.value === b.value),
  divisibleby: (a, b) => numberOf(a) % numberOf(b) === 0,
};

FILTERS.select = selectFilter(false, true);
FILTERS.reject = selectFilter(false, false);
FILTERS.selectattr = selectFilter(true, true);
FILTERS.rejectattr = selectFilter(true, false);
FILTERS.map = mapFilter;
FILTERS.unique = (self, operand, args) => {
  const [caseSensitive, attribute] = bind('unique', ['case_sensitive', 'attribute'], args);
  const seen = new Set<string>();
  const out: Value[] = [];
  for (const item of iterate(operand, self)) {
    self.countSteps(1);
    const key = attribute === undefined ? item : attributePath(item, attribute, self);
    // Python hashes 1, 1.0 and True alike; lists and dicts are unhashable.
    let hash: string;
    if (key instanceof StringValue) hash = 's' + (truthy(caseSensitive) ? (key.value as string) : (key.value as string).toLowerCase());
    else if (isNumber(key)) hash = 'n' + numberOf(key);
    else if (key instanceof NullValue) hash = 'None';
    else throw new TemplateFault('TypeError', `unhashable type: '${pythonTypeName(key)}'`);
    if (seen.has(hash)) continue;
    seen.add(hash);
    out.push(item);
  }
  self.buildItems(out.length);
  return new IteratorValue(out, 'generator');
};

function stringFilter(self: FilterHost, operand: Value, name: string): Value {
  const out = STRING_FILTERS[name]!(pyStr(operand, self));
  return isMarkup(operand) ? new MarkupValue(out) : new StringValue(out);
}

function length(operand: Value): Value {
  if (operand instanceof IteratorValue && (operand.pythonType === 'generator' || operand.pythonType!.endsWith('iterator'))) {
    throw new TemplateFault('TypeError', `object of type '${operand.pythonType}' has no len()`);
  }
  if (operand instanceof StringValue) return new IntegerValue(codePointCount(operand.value as string));
  if (operand instanceof ArrayValue) return new IntegerValue((operand.value as Value[]).length);
  if (operand instanceof ObjectValue && !(operand instanceof NamespaceValue)) return new IntegerValue((operand.value as Map<string, Value>).size);
  if (isUndefined(operand)) return new IntegerValue(0);
  throw new TemplateFault('TypeError', `object of type '${pythonTypeName(operand)}' has no len()`);
}

FILTERS.sort = (self, operand, args) => {
  const [reverse, caseSensitive, attribute] = bind('sort', ['reverse', 'case_sensitive', 'attribute'], args);
  const items = iterate(operand, self);
  self.buildItems(items.length);
  return new ArrayValue(sortBy(items, (v) => sortKey(v, attribute, truthy(caseSensitive), self), truthy(reverse), self));
};

FILTERS.dictsort = (self, operand, args) => {
  const [caseSensitive, by, reverse] = bind('dictsort', ['case_sensitive', 'by', 'reverse'], args);
  if (!(operand instanceof ObjectValue) || operand instanceof NamespaceValue) throw new TemplateFault('TypeError', 'dictsort needs a mapping');
  const position = by === undefined || pyStr(by, self) === 'key' ? 0 : pyStr(by, self) === 'value' ? 1 : -1;
  if (position < 0) throw new TemplateFault('FilterArgumentError', 'You can only sort by either "key" or "value"');
  const pairs = [...(operand.value as Map<string, Value>)].map(([k, v]) => new TupleValue([keyValue(k), v]));
  self.buildItems(pairs.length);
  return new ArrayValue(sortBy(pairs, (pair) => sortKey((pair.value as Value[])[position]!, undefined, truthy(caseSensitive), self), truthy(reverse), self));
};

function aggregate(name: 'min' | 'max'): Filter {
  return (self, operand, args) => {
    const [caseSensitive, attribute] = bind(name, ['case_sensitive', 'attribute'], args);
    const items = iterate(operand, self);
    if (items.length === 0) return undefinedValue('No aggregated item, sequence was empty.');
    // Python's min() and max(): one pass, the first of equal items.
    const op = name === 'min' ? '<' : '>';
    let best = items[0]!;
    let bestKey = sortKey(best, attribute, truthy(caseSensitive), self);
    for (let i = 1; i < items.length; i++) {
      const key = sortKey(items[i]!, attribute, truthy(caseSensitive), self);
      const sign = pyCompare(key, bestKey, self);
      if (sign === undefined) throw new TemplateFault('TypeError', `'${op}' not supported between instances of '${pythonTypeName(key)}' and '${pythonTypeName(bestKey)}'`);
      if (name === 'min' ? sign < 0 : sign > 0) [best, bestKey] = [items[i]!, key];
    }
    return best;
  };
}
FILTERS.min = aggregate('min');
FILTERS.max = aggregate('max');

FILTERS.round = (self, operand, args) => {
  // jinja2's do_round: the method checked first, then Python's round() (an int stays an int).
  const [precision, method] = bind('round', ['precision', 'method'], args);
  const how = method === undefined ? 'common' : pyStr(method, self);
  if (how !== 'common' && how !== 'ceil' && how !== 'floor') throw new TemplateFault('FilterArgumentError', 'method must be common, ceil or floor');
  if (!isNumber(operand)) throw new TemplateFault('TypeError', `type ${pythonTypeName(operand)} doesn't define __round__ method`);
  if (precision !== undefined && !(precision instanceof IntegerValue || precision instanceof BooleanValue)) {
    throw new TemplateFault('TypeError', `'${pythonTypeName(precision)}' object cannot be interpreted as an integer`);
  }
  const p = precision === undefined ? 0 : numberOf(precision);
  const x = numberOf(operand);
  if (how !== 'common') {
    // math.ceil(value * 10**p) / 10**p: a float.
    const scale = 10 ** p;
    return new FloatValue((how === 'ceil' ? Math.ceil(x * scale) : Math.floor(x * scale)) / scale);
  }
  return operand instanceof FloatValue ? new FloatValue(roundFloat(x, p)) : new IntegerValue(roundInt(x, p));
};

/** jinja2's do_int: int(str, base), else int(float(str)) ('3.7' is 3), else the default; None, lists: the default. */
FILTERS.int = (self, operand, args) => {
  const [fallback, base] = bind('int', ['default', 'base'], args);
  if (isUndefined(operand)) throw undefinedFault(operand);
  let n: number | undefined;
  if (operand instanceof StringValue) {
    const text = pyStrip(operand.value as string, undefined, 'both', self);
    const radix = base === undefined ? 10 : base instanceof IntegerValue || base instanceof BooleanValue ? numberOf(base) : NaN;
    n = intOfText(text, radix);
    if (n === undefined) {
      const f = floatOfText(text);
      n = f === undefined || !Number.isFinite(f) ? undefined : Math.trunc(f);
    }
  } else if (isNumber(operand) && Number.isFinite(numberOf(operand))) n = Math.trunc(numberOf(operand));
  return n === undefined ? (fallback ?? new IntegerValue(0)) : new IntegerValue(n + 0); // + 0: no -0
};

/** jinja2's do_float: float(value), else the default. */
FILTERS.float = (self, operand, args) => {
  const [fallback] = bind('float', ['default'], args);
  if (isUndefined(operand)) throw undefinedFault(operand);
  const f = operand instanceof StringValue ? floatOfText(pyStrip(operand.value as string, undefined, 'both', self)) : isNumber(operand) ? numberOf(operand) : undefined;
  return f === undefined ? (fallback ?? new FloatValue(0)) : new FloatValue(f);
};

FILTERS.abs = (_, operand) => {
  if (operand instanceof FloatValue) return new FloatValue(Math.abs(operand.value as number));
  if (isNumber(operand)) return new IntegerValue(Math.abs(numberOf(operand)));
  throw new TemplateFault('TypeError', `bad operand type for abs(): '${pythonTypeName(operand)}'`);
};

FILTERS.title = (self, operand) => new StringValue(titleCase(pyStr(operand, self)));

/** jinja2's do_format: `value % args`, or `value % kwargs`. */
FILTERS.format = (self, operand, args) => {
  const [positional, keywords] = splitArgs(args);
  if (positional.length > 0 && keywords.size > 0) throw new TemplateFault('FilterArgumentError', "can't handle positional and keyword arguments at the same time");
  const values = keywords.size > 0 ? new ObjectValue(new Map(keywords)) : new TupleValue(positional);
  return new StringValue(percentFormat(self, pyStr(operand, self), values));
};

/** jinja2's filters not done here: an error that says so, rather than another text. */
for (const name of ['attr', 'filesizeformat', 'pprint', 'random', 'slice', 'striptags', 'urlencode', 'urlize', 'wordwrap', 'xmlattr']) {
  FILTERS[name] = () => {
    throw new TemplateFault('TemplateRuntimeError', `the filter '${name}' is not supported here (see docs/api.md, Chat templates)`);
  };
}

FILTERS.sum = (self, operand, args) => {
  const [attribute, start] = bind('sum', ['attribute', 'start'], args);
  let total: Value = start ?? new IntegerValue(0);
  for (const item of iterate(operand, self)) {
    self.countSteps(1);
    const v = attribute === undefined || attribute instanceof NullValue ? item : attributePath(item, attribute, self);
    if (!isNumber(total) || !isNumber(v)) throw new TemplateFault('TypeError', `unsupported operand type(s) for +: '${pythonTypeName(total)}' and '${pythonTypeName(v)}'`);
    const value = numberOf(total) + numberOf(v);
    total = total instanceof FloatValue || v instanceof FloatValue ? new FloatValue(value) : new IntegerValue(value);
  }
  return total;
};

FILTERS.center = (self, operand, args) => {
  const [width] = bind('center', ['width'], args);
  const s = pyStr(operand, self);
  const w = width === undefined ? 80 : numberOf(width);
  self.buildChars(w);
  const n = Array.from(s).length;
  if (w <= n) return new StringValue(s);
  // CPython's str.center: the extra space goes left when the margin and the width are both odd.
  const marg = w - n;
  const left = Math.floor(marg / 2) + (marg & w & 1);
  return new StringValue(' '.repeat(left) + s + ' '.repeat(marg - left));
};

FILTERS.wordcount = (self, operand) => new IntegerValue((pyStr(operand, self).match(/\w+/gu) ?? []).length);

FILTERS.batch = (self, operand, args) => {
  const [size, fill] = bind('batch', ['linecount', 'fill_with'], args);
  const n = size === undefined ? 0 : numberOf(size);
  if (!(n >= 1)) throw new TemplateFault('ValueError', 'batch size must be at least 1');
  const items = iterate(operand, self);
  const out: Value[] = [];
  for (let i = 0; i < items.length; i += n) {
    const row = items.slice(i, i + n);
    if (fill !== undefined && fill !== null && !(fill instanceof NullValue)) while (row.length < n) row.push(fill);
    out.push(new ArrayValue(row));
  }
  self.buildItems(out.length);
  return new IteratorValue(out, 'generator');
};

FILTERS.truncate = (self, operand, args) => {
  // jinja2's do_truncate(s, length=255, killwords=False, end='...', leeway=5).
  const [length, killwords, end, leeway] = bind('truncate', ['length', 'killwords', 'end', 'leeway'], args);
  const s = pyStr(operand, self);
  const cps = Array.from(s);
  const max = length === undefined ? 255 : numberOf(length);
  const tail = end === undefined ? '...' : pyStr(end, self);
  const slack = leeway === undefined ? 5 : numberOf(leeway);
  if (max < tail.length) throw new TemplateFault('AssertionError', `expected length >= ${tail.length}, got ${max}`);
  if (slack < 0) throw new TemplateFault('AssertionError', `expected leeway >= 0, got ${slack}`);
  if (cps.length <= max + slack) return new StringValue(s);
  const cut = cps.slice(0, max - tail.length).join('');
  if (truthy(killwords)) return new StringValue(cut + tail);
  const space = cut.lastIndexOf(' ');
  return new StringValue((space < 0 ? cut : cut.slice(0, space)) + tail);
};

FILTERS.replace = (self, operand, args) => {
  const [from, to, count] = bind('replace', ['old', 'new', 'count'], args);
  if (from === undefined || to === undefined) throw new TemplateFault('TypeError', 'replace needs old and new');
  const out = pyReplace(self, pyStr(operand, self), pyStr(from, self), pyStr(to, self), count === undefined || count instanceof NullValue ? -1 : numberOf(count));
  return isMarkup(operand) ? new MarkupValue(out) : new StringValue(out);
};


/**
 * jinja2's groupby(attribute, default=None, case_sensitive=False): (grouper, items) tuples, sorted
 * by the key; case-insensitive grouping shows each group's first value.
 */
FILTERS.groupby = (self, operand, args) => {
  const [attribute, fallback, caseSensitive] = bind('groupby', ['attribute', 'default', 'case_sensitive'], args);
  if (attribute === undefined) throw new TemplateFault('TypeError', "groupby() missing 1 required positional argument: 'attribute'");
  const valueOf = (item: Value) => {
    const v = attributePath(item, attribute, self);
    return isUndefined(v) && fallback !== undefined ? fallback : v;
  };
  const keyOf = (item: Value) => {
    const v = valueOf(item);
    return !truthy(caseSensitive) && v instanceof StringValue ? new StringValue((v.value as string).toLowerCase()) : v;
  };
  const sorted = sortBy(iterate(operand, self), keyOf, false, self);
  const groups: Value[] = [];
  let current: { key: Value; items: Value[] } | undefined;
  for (const item of sorted) {
    const key = keyOf(item);
    if (current !== undefined && pyEquals(current.key, key, self)) current.items.push(item);
    else {
      if (current !== undefined) groups.push(groupTuple(valueOf(current.items[0]!), current.items));
      current = { key, items: [item] };
    }
  }
  if (current !== undefined) groups.push(groupTuple(valueOf(current.items[0]!), current.items));
  self.buildItems(groups.length);
  return new ArrayValue(groups);
};

/** A (grouper, list) pair, whose fields are also `.grouper` and `.list` (a namedtuple). */
function groupTuple(grouper: Value, items: Value[]): Value {
  const tuple = new TupleValue([grouper, new ArrayValue(items)]);
  return Object.assign(tuple, { fields: ['grouper', 'list'] });
}
