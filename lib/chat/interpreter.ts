/**
 * @huggingface/jinja's interpreter with what differs from Python's jinja2 (as transformers runs it)
 * put right: Python's str() and == and operators, jinja2's Undefined, markupsafe's Markup,
 * iterators, transformers' tojson, the sandbox's range limit and refused attributes; and the
 * budgets that stop a template that loops or grows (steps against a deadline, characters).
 *
 * The engine's methods are TypeScript-private, so the overrides are set on our subclass's prototype;
 * each one handles what it must and hands the rest to the engine's own method. To hand over values
 * already evaluated (Python evaluates each operand once), they go in as VALUE nodes that our
 * `evaluate` returns as they are.
 */
import { Environment, Interpreter } from '@huggingface/jinja';
import { htmlEscape } from './python-text.js';
import {
  ArrayValue,
  BooleanValue,
  FloatValue,
  FunctionValue,
  IntegerValue,
  IteratorValue,
  KeywordArgumentsValue,
  MarkupValue,
  NamespaceValue,
  NotSerializable,
  NullValue,
  ObjectValue,
  StringValue,
  TupleValue,
  UndefinedValue,
  dictKey,
  isDict,
  keyValue,
  isList,
  isMarkup,
  isNumber,
  isUndefined,
  jsonDumps,
  numberOf,
  pyCompare,
  pyEquals,
  pyRepr,
  pyStr,
  pythonTypeName,
  undefinedValue,
  type UndefinedInfo,
  type Value,
} from './values.js';

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

export interface RenderLimits {
  /** performance.now() past which the render stops. */
  deadline: number;
  /** Longest string (and rendered output) in characters. */
  maxChars: number;
  /** Longest list. */
  maxItems: number;
}

const VALUE = '__ValueNode';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Node = any;
const valueNode = (value: Value): Node => ({ type: VALUE, value });

/** jinja2's sandbox refuses ranges longer than this (MAX_RANGE). */
const MAX_RANGE = 100_000;
const MAX_CALL_DEPTH = 300;
/** Text a template may write (macros and set blocks included), in multiples of maxChars. */
const WRITE_FACTOR = 4;
/** Underscore attributes every Python object (dict, list, str) has. */
const PYTHON_ATTRIBUTES = new Set(
  '__class__ __contains__ __delattr__ __delitem__ __dir__ __doc__ __eq__ __format__ __ge__ __getattribute__ __getitem__ __gt__ __hash__ __init__ __init_subclass__ __iter__ __le__ __len__ __lt__ __ne__ __new__ __reduce__ __reduce_ex__ __repr__ __setattr__ __setitem__ __sizeof__ __str__ __subclasshook__ __class_getitem__ __ior__ __or__ __ror__ __reversed__'.split(' '),
);
const DICT_METHODS = new Set(['get', 'items', 'keys', 'values']);
const MUTATING: Record<string, ReadonlySet<string>> = {
  dict: new Set(['clear', 'pop', 'popitem', 'setdefault', 'update']),
  list: new Set(['append', 'clear', 'extend', 'insert', 'pop', 'remove', 'reverse', 'sort']),
};
// Python's str.strip() whitespace (JS's trim differs: it strips U+FEFF, keeps U+001C-U+001F and U+0085).
const PY_SPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const LEADING_SPACE = new RegExp(`^[${PY_SPACE}]+`);
const TRAILING_SPACE = new RegExp(`[${PY_SPACE}]+$`);
const LINE_BREAKS = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

function undefinedFault(v: Value): TemplateFault {
  const { hint, kind } = v as Value & UndefinedInfo;
  return new TemplateFault(kind ?? 'UndefinedError', hint ?? 'value is undefined');
}

function pyStrip(s: string, chars: Value | undefined, side: 'both' | 'left' | 'right'): string {
  if (chars === undefined || chars instanceof NullValue) {
    if (side !== 'right') s = s.replace(LEADING_SPACE, '');
    if (side !== 'left') s = s.replace(TRAILING_SPACE, '');
    return s;
  }
  const set = new Set(Array.from(pyStr(chars)));
  const cps = Array.from(s);
  let start = 0;
  let end = cps.length;
  if (side !== 'right') while (start < end && set.has(cps[start]!)) start++;
  if (side !== 'left') while (end > start && set.has(cps[end - 1]!)) end--;
  return cps.slice(start, end).join('');
}

/** Splits positional arguments from the trailing keyword arguments the engine passes. */
function splitArgs(args: Value[]): [Value[], Map<string, Value>] {
  const last = args.at(-1);
  if (last !== undefined && last instanceof KeywordArgumentsValue) return [args.slice(0, -1), last.value as Map<string, Value>];
  return [args, new Map()];
}

/** Binds Python-style parameters (name order = position) to positional and keyword arguments. */
function bind(fn: string, names: readonly string[], args: Value[]): Array<Value | undefined> {
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

const truthy = (v: Value | undefined): boolean => v !== undefined && v.__bool__().value;

export class ChatInterpreter extends Interpreter {
  private steps = 0;
  private depth = 0;
  private written = 0;

  constructor(
    env: Environment,
    readonly limits: RenderLimits,
  ) {
    super(env);
  }

  /** Throws when the deadline has passed; called every 1024 evaluations and per loop iteration. */
  checkTime(): void {
    if (performance.now() > this.limits.deadline) throw new BudgetExceeded('the template ran past its time limit');
  }

  /** Adds work done outside `evaluate` (loop iterations) and checks the deadline every 1024 steps. */
  countSteps(n: number): void {
    const before = this.steps;
    this.steps += n;
    if (this.steps >>> 10 !== before >>> 10) this.checkTime();
  }

  /**
   * Counts text written by `{{ }}` and template text, wherever it goes (a loop's output is joined
   * only when the loop ends): more than WRITE_FACTOR times maxChars stops the template.
   */
  countWritten(length: number): void {
    this.written += length;
    if (this.written > WRITE_FACTOR * this.limits.maxChars) throw new BudgetExceeded(`the template wrote more than ${WRITE_FACTOR * this.limits.maxChars} characters`);
  }

  checkChars(length: number): void {
    if (length > this.limits.maxChars) throw new BudgetExceeded(`the template built a string of more than ${this.limits.maxChars} characters`);
  }

  checkItems(length: number): void {
    if (length > this.limits.maxItems) throw new BudgetExceeded(`the template built a list of more than ${this.limits.maxItems} items`);
  }

  str(v: Value): Value {
    return new StringValue(pyStr(v));
  }
}

// The engine's methods we replace, called on the base prototype for what we hand back.
interface Hooks {
  evaluate(node: Node, env: Environment): Value;
  renderBlock(statements: Node[], env: Environment): string;
  evaluateBinaryExpression(node: Node, env: Environment): Value;
  evaluateUnaryExpression(node: Node, env: Environment): Value;
  evaluateMemberExpression(node: Node, env: Environment): Value;
  evaluateIdentifier(node: Node, env: Environment): Value;
  evaluateCallExpression(node: Node, env: Environment): Value;
  evaluateCallArguments(args: Node[], env: Environment): Value[];
  evaluateTestExpression(node: Node, env: Environment): Value;
  applyFilter(operand: Value, filter: Node, env: Environment): Value;
  renderFor(node: Node, env: Environment): string;
  renderIf(node: Node, env: Environment): string;
  executeSet(node: Node, env: Environment): void;
}
type Self = ChatInterpreter & Hooks;
const base = Interpreter.prototype as unknown as Hooks;
const ours = ChatInterpreter.prototype as unknown as Hooks;

ours.evaluate = function (this: Self, node, env) {
  if (node?.type === VALUE) return node.value as Value;
  if (node?.type === 'ObjectLiteral') return objectLiteral(this, node, env);
  this.countSteps(1);
  const result = base.evaluate.call(this, node, env);
  if (result instanceof StringValue) this.checkChars((result.value as string).length);
  else if (result instanceof ArrayValue) this.checkItems((result.value as Value[]).length);
  return result;
};

ours.renderBlock = function (this: Self, statements, env) {
  let out = '';
  for (const statement of statements) {
    switch (statement.type) {
      case 'StringLiteral':
        out += statement.value as string;
        this.countWritten((statement.value as string).length);
        break;
      case 'If':
        out += this.renderIf(statement, env);
        break;
      case 'For':
        out += this.renderFor(statement, env);
        break;
      case 'Set':
        this.executeSet(statement, env);
        break;
      case 'Comment':
        break;
      case 'Macro':
        this.evaluate(statement, env);
        break;
      default: {
        const text = pyStr(this.evaluate(statement, env)); // {{ none }} prints None, as Python's str()
        this.countWritten(text.length);
        out += text;
      }
    }
    this.checkChars(out.length);
  }
  return out;
};

ours.evaluateIdentifier = function (this: Self, node, env) {
  const value = base.evaluateIdentifier.call(this, node, env);
  // An undefined value passed on (a macro's argument) keeps the reason it was undefined, as in jinja2.
  if (isUndefined(value) && (value as Value & UndefinedInfo).hint === undefined) return undefinedValue(`'${node.value as string}' is undefined`);
  return value;
};

ours.evaluateMemberExpression = function (this: Self, expr, env) {
  const object = this.evaluate(expr.object, env);
  if (isUndefined(object)) throw undefinedFault(object);
  const computed = expr.computed === true;
  if (computed && expr.property.type === 'SliceExpression') return base.evaluateMemberExpression.call(this, { ...expr, object: valueNode(object) }, env);
  const property = computed ? this.evaluate(expr.property, env) : expr.property.type === 'IntegerLiteral' ? new IntegerValue(expr.property.value) : new StringValue(expr.property.value);
  const type = pythonTypeName(object);
  if (property instanceof StringValue) {
    const name = property.value as string;
    // The sandbox refuses Python's own underscore attributes; a dict's item of that name is data
    // (jinja2 looks `[name]` up as an item first, and `.name` as an item when no attribute has it).
    const item = isDict(object) && (object.value as Map<string, Value>).has(name);
    if (name.startsWith('_') && !(item && (computed || !PYTHON_ATTRIBUTES.has(name)))) {
      return undefinedValue(`access to attribute '${name}' of '${type}' object is unsafe.`, 'SecurityError');
    }
    if (MUTATING[type]?.has(name)) return undefinedValue(`access to attribute '${name}' of '${type}' object is unsafe.`, 'SecurityError');
    // jinja2 looks `.name` up as an attribute first (a dict's methods), `[name]` as an item first.
    if (isDict(object) && !(object instanceof NamespaceValue) && DICT_METHODS.has(name) && (!computed || !(object.value as Map<string, Value>).has(name))) {
      return dictMethod(this, object, name);
    }
    if (object instanceof StringValue) {
      const method = stringMethod(this, object, name);
      if (method !== undefined) return method;
    }
    // The engine's `.length` of strings and lists is no Python attribute.
    if (name === 'length' && (object instanceof StringValue || object instanceof ArrayValue)) return undefinedValue(`'${type} object' has no attribute 'length'`);
    if (name === 'cycle' && 'iteration' in object && 'createEntries' in object) {
      const index = (object as unknown as { iteration: number }).iteration;
      return new FunctionValue((args: Value[]) => {
        const [items] = splitArgs(args);
        if (items.length === 0) throw new TemplateFault('TypeError', 'no items for cycling given');
        return items[index % items.length]!;
      });
    }
  }
  let result: Value;
  if (!(object instanceof ObjectValue || object instanceof ArrayValue || object instanceof StringValue)) {
    result = property instanceof StringValue ? base.evaluateMemberExpression.call(this, { ...expr, computed: true, object: valueNode(object), property: valueNode(property) }, env) : new UndefinedValue();
  } else if (isDict(object) && !(property instanceof StringValue)) {
    const key = dictKey(property);
    result = (key === undefined ? undefined : (object.value as Map<string, Value>).get(key)) ?? new UndefinedValue();
  } else if (!(property instanceof StringValue) && !isNumber(property)) {
    result = new UndefinedValue(); // jinja2's getitem: a key that cannot be looked up is undefined
  } else if (isNumber(property) && (object instanceof ArrayValue || object instanceof StringValue)) {
    const i = numberOf(property);
    const items = object instanceof StringValue ? Array.from(object.value as string) : (object.value as Value[]);
    const item = Number.isInteger(i) ? items.at(i) : undefined;
    result = item === undefined ? new UndefinedValue() : typeof item === 'string' ? new StringValue(item) : item;
  } else {
    result = base.evaluateMemberExpression.call(this, { ...expr, computed: true, object: valueNode(object), property: valueNode(property) }, env);
  }
  if (!isUndefined(result)) return result;
  // jinja2's object_type_repr: None is 'None', other values '<type> object'.
  const owner = object instanceof NullValue ? 'None' : `${type} object`;
  if (!(property instanceof StringValue)) return undefinedValue(`${owner} has no element ${pyRepr(property)}`);
  return undefinedValue(`'${owner}' has no attribute '${property.value as string}'`);
};

/** A dict literal; its keys may be numbers, booleans or None as in Python (the engine takes strings only). */
function objectLiteral(self: Self, node: Node, env: Environment): Value {
  const map = new Map<string, Value>();
  for (const [keyNode, valueNodeOf] of node.value as Map<Node, Node>) {
    const key = self.evaluate(keyNode, env);
    const k = dictKey(key);
    if (k === undefined) throw new TemplateFault('TypeError', `unhashable type: '${pythonTypeName(key)}'`);
    map.set(k, self.evaluate(valueNodeOf, env));
  }
  return new ObjectValue(map);
}

function dictMethod(self: Self, object: Value, name: string): Value {
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
    self.checkItems(map.size);
    return new IteratorValue([...map].map(([k, v]) => new TupleValue([keyValue(k), v])), 'dict_items');
  });
}

/** Python's string methods where the engine's differ (whitespace, code points); others are the engine's. */
function stringMethod(self: Self, object: Value, name: string): Value | undefined {
  const s = object.value as string;
  const wrap = (out: string) => (isMarkup(object) ? new MarkupValue(out) : new StringValue(out));
  switch (name) {
    case 'strip':
    case 'lstrip':
    case 'rstrip':
      return new FunctionValue((args: Value[]) => wrap(pyStrip(s, bind(name, ['chars'], args)[0], name === 'strip' ? 'both' : name === 'lstrip' ? 'left' : 'right')));
    case 'split':
      return new FunctionValue((args: Value[]) => {
        const [sep, maxsplit] = bind('split', ['sep', 'maxsplit'], args);
        const limit = maxsplit === undefined ? -1 : numberOf(maxsplit);
        let parts: string[];
        if (sep === undefined || sep instanceof NullValue) {
          parts = [];
          let rest = pyStrip(s, undefined, 'left');
          while (rest !== '') {
            if (limit >= 0 && parts.length === limit) {
              parts.push(rest);
              break;
            }
            const m = new RegExp(`[${PY_SPACE}]+`).exec(rest);
            if (m === null) {
              parts.push(rest);
              break;
            }
            parts.push(rest.slice(0, m.index));
            rest = rest.slice(m.index + m[0].length);
          }
        } else {
          const separator = pyStr(sep);
          if (separator === '') throw new TemplateFault('ValueError', 'empty separator');
          parts = s.split(separator);
          if (limit >= 0 && parts.length > limit + 1) parts = [...parts.slice(0, limit), parts.slice(limit).join(separator)];
        }
        self.checkItems(parts.length);
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
function splitLines(s: string): string[] {
  const lines = s.split(LINE_BREAKS);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

ours.evaluateCallExpression = function (this: Self, expr, env) {
  const callee = this.evaluate(expr.callee, env);
  if (isUndefined(callee)) throw undefinedFault(callee);
  if (!(callee instanceof FunctionValue)) throw new TemplateFault('TypeError', `'${pythonTypeName(callee)}' object is not callable`);
  // Bounded well before the JS stack (Python stops near 1000 frames, a few per macro call).
  const self = this as unknown as { depth: number };
  if (++self.depth > MAX_CALL_DEPTH) throw new TemplateFault('RecursionError', 'maximum recursion depth exceeded');
  try {
    return base.evaluateCallExpression.call(this, { ...expr, callee: valueNode(callee) }, env);
  } finally {
    self.depth--;
  }
};

ours.evaluateUnaryExpression = function (this: Self, node, env) {
  if (node.operator.value === 'not') return new BooleanValue(!truthy(this.evaluate(node.argument, env)));
  const argument = this.evaluate(node.argument, env);
  if (isUndefined(argument)) throw undefinedFault(argument);
  if (!isNumber(argument)) throw new TemplateFault('TypeError', `bad operand type for unary ${node.operator.value as string}: '${pythonTypeName(argument)}'`);
  return base.evaluateUnaryExpression.call(this, { ...node, argument: valueNode(argument) }, env);
};

ours.evaluateBinaryExpression = function (this: Self, node, env) {
  const op = node.operator.value as string;
  if (op === 'and' || op === 'or') return base.evaluateBinaryExpression.call(this, node, env);
  const left = this.evaluate(node.left, env);
  const right = this.evaluate(node.right, env);
  return binary(this, op, left, right);
};

function binary(self: Self, op: string, left: Value, right: Value): Value {
  switch (op) {
    case '==':
      return new BooleanValue(pyEquals(left, right));
    case '!=':
      return new BooleanValue(!pyEquals(left, right));
    case 'in':
      return new BooleanValue(contains(right, left));
    case 'not in':
      return new BooleanValue(!contains(right, left));
    case '~': {
      const out = pyStr(left) + pyStr(right);
      self.checkChars(out.length);
      return new StringValue(out);
    }
  }
  if (isUndefined(left)) throw undefinedFault(left);
  if (isUndefined(right)) throw undefinedFault(right);
  const unsupported = () => new TemplateFault('TypeError', `unsupported operand type(s) for ${op}: '${pythonTypeName(left)}' and '${pythonTypeName(right)}'`);
  if (op === '<' || op === '>' || op === '<=' || op === '>=') {
    const sign = pyCompare(left, right);
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
      case '**':
        return base.evaluateBinaryExpression.call(self, { operator: { value: op }, left: valueNode(left), right: valueNode(right) }, new Environment());
    }
  }
  if (op === '+') {
    if (left instanceof StringValue && right instanceof StringValue) {
      // markupsafe: Markup + str escapes the str, and str + Markup too (Markup.__radd__).
      const markup = isMarkup(left) || isMarkup(right);
      const text = (v: Value) => (markup && !isMarkup(v) ? htmlEscape(v.value as string) : (v.value as string));
      const out = text(left) + text(right);
      self.checkChars(out.length);
      return markup ? new MarkupValue(out) : new StringValue(out);
    }
    if (left instanceof StringValue) throw new TemplateFault('TypeError', `can only concatenate str (not "${pythonTypeName(right)}") to str`);
    if ((isList(left) && isList(right)) || (left instanceof TupleValue && right instanceof TupleValue)) {
      const items = [...(left.value as Value[]), ...(right.value as Value[])];
      self.checkItems(items.length);
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
        self.checkChars((seq.value as string).length * n);
        const out = (seq.value as string).repeat(n);
        return isMarkup(seq) ? new MarkupValue(out) : new StringValue(out);
      }
      if (isList(seq) || seq instanceof TupleValue) {
        const items = seq.value as Value[];
        self.checkItems(items.length * n);
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
function contains(container: Value, item: Value): boolean {
  if (isUndefined(container)) return false; // iterating jinja2's Undefined yields nothing
  if (container instanceof StringValue) {
    if (!(item instanceof StringValue)) throw new TemplateFault('TypeError', `'in <string>' requires string as left operand, not ${pythonTypeName(item)}`);
    return (container.value as string).includes(item.value as string);
  }
  if (container instanceof ObjectValue && !(container instanceof NamespaceValue)) {
    const key = dictKey(item);
    return key !== undefined && (container.value as Map<string, Value>).has(key);
  }
  if (container instanceof ArrayValue) return (container.value as Value[]).some((x) => pyEquals(x, item));
  throw new TemplateFault('TypeError', `argument of type '${pythonTypeName(container)}' is not iterable`);
}

/** Python's printf-style `str % args`, for %s, %r, %d, %i and %%. */
function percentFormat(self: Self, format: string, args: Value): string {
  const list = args instanceof TupleValue ? (args.value as Value[]) : [args];
  let next = 0;
  const out = format.replace(/%([srdi%])/g, (_, c: string) => {
    if (c === '%') return '%';
    const v = list[next++];
    if (v === undefined) throw new TemplateFault('TypeError', 'not enough arguments for format string');
    if (c === 's') return pyStr(v);
    if (c === 'r') return v instanceof StringValue ? `'${v.value as string}'` : pyStr(v);
    if (!isNumber(v)) throw new TemplateFault('TypeError', `%${c} format: a real number is required, not ${pythonTypeName(v)}`);
    return String(Math.trunc(numberOf(v)));
  });
  if (next < list.length) throw new TemplateFault('TypeError', 'not all arguments converted during string formatting');
  self.checkChars(out.length);
  return out;
}

/** The items a for loop, `list` or a filter walks, as Python iterates the value. */
function iterate(v: Value, what = 'object'): Value[] {
  if (isUndefined(v)) return [];
  if (v instanceof StringValue) return Array.from(v.value as string, (c) => new StringValue(c));
  if (v instanceof ArrayValue) return v.value as Value[];
  if (v instanceof ObjectValue && !(v instanceof NamespaceValue)) return [...(v.value as Map<string, Value>).keys()].map(keyValue);
  throw new TemplateFault('TypeError', `'${pythonTypeName(v)}' ${what} is not iterable`);
}

ours.renderFor = function (this: Self, node, env) {
  const select = node.iterable.type === 'SelectExpression';
  const iterableNode = select ? node.iterable.lhs : node.iterable;
  const items = iterate(this.evaluate(iterableNode, new Environment(env)));
  // An iteration may evaluate nothing (an empty body): count the items, so nested loops meet the deadline.
  this.countSteps(items.length);
  // The engine unpacks `for a, b in ...` only from lists (not tuples): hand it plain lists.
  const unpack = node.loopvar.type === 'TupleLiteral';
  const plain = new ArrayValue(unpack ? items.map((x) => (x instanceof ArrayValue ? new ArrayValue(x.value) : x)) : items);
  const iterable = select ? { ...node.iterable, lhs: valueNode(plain) } : valueNode(plain);
  return base.renderFor.call(this, { ...node, iterable }, env);
};

ours.evaluateTestExpression = function (this: Self, node, env) {
  const operand = this.evaluate(node.operand, env);
  const name = node.test.value as string;
  const result = testNamed(name)(operand, []);
  return new BooleanValue(node.negate ? !result : result);
};

const TESTS: Record<string, (v: Value) => boolean> = {
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

ours.applyFilter = function (this: Self, operand, filterNode, env) {
  const name = (filterNode.type === 'Identifier' ? filterNode.value : filterNode.callee?.value) as string;
  const args = filterNode.type === 'CallExpression' ? this.evaluateCallArguments(filterNode.args, env) : [];
  if (!JINJA2_FILTERS.has(name)) throw new TemplateFault('TemplateRuntimeError', `No filter named '${name}' found.`);
  const own = FILTERS[name];
  if (own !== undefined) {
    const result = own(this, operand, args);
    if (result !== undefined) return result;
  }
  if (isUndefined(operand) || operand instanceof NullValue) throw new TemplateFault('TypeError', `filter '${name}' on ${pythonTypeName(operand)}`);
  const input = operand instanceof IteratorValue ? new ArrayValue(operand.value) : operand;
  const node = filterNode.type === 'CallExpression' ? { ...filterNode, args: args.map((a) => (a instanceof KeywordArgumentsValue ? kwargsNodes(a) : [valueNode(a)])).flat() } : filterNode;
  return base.applyFilter.call(this, input, node, env);
};

function kwargsNodes(kwargs: Value): Node[] {
  return [...(kwargs.value as Map<string, Value>)].map(([key, value]) => ({ type: 'KeywordArgumentExpression', key: { type: 'Identifier', value: key }, value: valueNode(value) }));
}

const STRING_FILTERS: Record<string, (s: string) => string> = {
  upper: (s) => s.toUpperCase(),
  lower: (s) => s.toLowerCase(),
  capitalize: (s) => (s === '' ? s : Array.from(s)[0]!.toUpperCase() + Array.from(s).slice(1).join('').toLowerCase()),
};

/** jinja2's built-in filters and transformers' tojson: no other name is a filter. */
const JINJA2_FILTERS = new Set(
  'abs attr batch capitalize center count d default dictsort e escape filesizeformat first float forceescape format groupby indent int items join last length list lower map max min pprint random reject rejectattr replace reverse round safe select selectattr slice sort string striptags sum title tojson trim truncate unique upper urlencode urlize wordcount wordwrap xmlattr'.split(' '),
);

type Filter = (self: Self, operand: Value, args: Value[]) => Value | undefined;
const FILTERS: Record<string, Filter> = {
  tojson: (self, operand, args) => {
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    const [ensureAscii, indent, separators, sortKeys] = bind('tojson', ['ensure_ascii', 'indent', 'separators', 'sort_keys'], args);
    let indentText: string | undefined;
    if (indent !== undefined && !(indent instanceof NullValue)) {
      if (!(indent instanceof StringValue)) self.checkChars(numberOf(indent));
      indentText = indent instanceof StringValue ? (indent.value as string) : ' '.repeat(Math.max(0, numberOf(indent)));
    }
    let itemSeparator = indentText === undefined ? ', ' : ',';
    let keySeparator = ': ';
    if (separators !== undefined && !(separators instanceof NullValue)) {
      const pair = iterate(separators);
      if (pair.length !== 2) throw new TemplateFault('ValueError', 'separators must be a pair');
      [itemSeparator, keySeparator] = pair.map(pyStr) as [string, string];
    }
    try {
      const text = jsonDumps(operand, { ensureAscii: truthy(ensureAscii), indent: indentText, itemSeparator, keySeparator, sortKeys: truthy(sortKeys) }, self.limits.maxChars);
      return new StringValue(text);
    } catch (error) {
      if (error instanceof NotSerializable) throw new TemplateFault('TypeError', error.message);
      if (error instanceof RangeError) self.checkChars(Infinity);
      throw error;
    }
  },
  safe: (_, operand) => (isMarkup(operand) ? operand : new MarkupValue(pyStr(operand))),
  escape: (_, operand) => (isMarkup(operand) ? operand : new MarkupValue(htmlEscape(pyStr(operand)))),
  e: (self, operand, args) => FILTERS.escape!(self, operand, args),
  forceescape: (_, operand) => new MarkupValue(htmlEscape(pyStr(operand))),
  string: (_, operand) => (operand instanceof StringValue ? operand : new StringValue(pyStr(operand))),
  trim: (_, operand, args) => {
    const out = pyStrip(pyStr(operand), bind('trim', ['chars'], args)[0], 'both');
    return isMarkup(operand) ? new MarkupValue(out) : new StringValue(out);
  },
  upper: (_, operand) => stringFilter(operand, 'upper'),
  lower: (_, operand) => stringFilter(operand, 'lower'),
  capitalize: (_, operand) => stringFilter(operand, 'capitalize'),
  length: (_, operand) => length(operand),
  count: (_, operand) => length(operand),
  list: (self, operand) => {
    const items = iterate(operand);
    self.checkItems(items.length);
    return new ArrayValue([...items]);
  },
  first: (_, operand) => {
    if (operand instanceof ObjectValue || operand instanceof ArrayValue || operand instanceof StringValue || isUndefined(operand)) {
      return iterate(operand)[0] ?? undefinedValue('No first item, sequence was empty.');
    }
    return undefined;
  },
  last: (_, operand) => {
    if (operand instanceof IteratorValue && operand.pythonType === 'generator') throw new TemplateFault('TypeError', "'generator' object is not reversible");
    if (operand instanceof ArrayValue || operand instanceof StringValue || isUndefined(operand)) return iterate(operand).at(-1) ?? undefinedValue('No last item, sequence was empty.');
    return undefined;
  },
  join: (self, operand, args) => {
    const [separator, attribute] = bind('join', ['d', 'attribute'], args);
    if (attribute !== undefined) return undefined;
    const items = iterate(operand).map(pyStr);
    const sep = separator === undefined ? '' : pyStr(separator);
    self.checkChars(items.reduce((n, s) => n + s.length + sep.length, 0));
    return new StringValue(items.join(sep));
  },
  default: (_, operand, args) => {
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
  reverse: (_, operand) => {
    if (operand instanceof StringValue) return new StringValue(Array.from(operand.value as string).reverse().join(''));
    if (operand instanceof IteratorValue && operand.pythonType === 'generator') return new ArrayValue([...(operand.value as Value[])].reverse());
    if (operand instanceof ArrayValue) return new IteratorValue([...(operand.value as Value[])].reverse(), operand instanceof TupleValue ? 'reversed' : 'list_reverseiterator');
    return undefined;
  },
  indent: (self, operand, args) => {
    // jinja2 3.1's do_indent, splitlines() quirk included.
    const [width, first, blank] = bind('indent', ['width', 'first', 'blank'], args);
    if (width !== undefined && !(width instanceof StringValue)) self.checkChars(numberOf(width));
    const indention = width === undefined ? '    ' : width instanceof StringValue ? (width.value as string) : ' '.repeat(Math.max(0, numberOf(width)));
    const lines = splitLines(pyStr(operand) + '\n');
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
    const items = truthy(operand) ? iterate(operand) : [];
    const [attribute, testName, ...testArgs] = withAttribute ? positional : [undefined, ...positional];
    const test = testName === undefined ? undefined : testNamed(pyStr(testName));
    const out = items.filter((item) => {
      const subject = attribute === undefined ? item : attributePath(item, attribute);
      const passed = test === undefined ? truthy(subject) : test(subject, testArgs as Value[]);
      return passed === keep;
    });
    self.checkItems(out.length);
    return new IteratorValue(out, 'generator');
  };
}

/** jinja2's map: `map(attribute=..., default=...)` or `map('filter', args...)`, as a generator. */
const mapFilter: Filter = (self, operand, args) => {
  const [positional, keywords] = splitArgs(args);
  const items = truthy(operand) ? iterate(operand) : [];
  let out: Value[];
  if (keywords.has('attribute')) {
    const fallback = keywords.get('default');
    out = items.map((item) => {
      const v = attributePath(item, keywords.get('attribute')!);
      return isUndefined(v) && fallback !== undefined ? fallback : v;
    });
  } else {
    if (positional.length === 0) throw new TemplateFault('FilterArgumentError', 'map requires a filter argument');
    const [filterName, ...rest] = positional;
    const node = { type: 'CallExpression', callee: { type: 'Identifier', value: pyStr(filterName!) }, args: rest.map(valueNode) };
    out = items.map((item) => self.applyFilter(item, node, new Environment()));
  }
  return new IteratorValue(out, 'generator');
};

/** jinja2's attribute lookup for selectattr/map/sort: dotted, integers index lists. */
function attributePath(item: Value, attribute: Value): Value {
  const parts = isNumber(attribute) ? [numberOf(attribute)] : pyStr(attribute).split('.');
  let v = item;
  for (const part of parts) {
    if (v instanceof ObjectValue) v = (v.value as Map<string, Value>).get(String(part)) ?? undefinedValue(`'dict object' has no attribute '${part}'`);
    else if (v instanceof ArrayValue && /^-?\d+$/.test(String(part))) v = (v.value as Value[]).at(Number(part)) ?? undefinedValue(`list object has no element ${part}`);
    else if (isUndefined(v)) return v; // make_attrgetter's getitem on Undefined gives Undefined
    else return undefinedValue(`'${pythonTypeName(v)} object' has no attribute '${part}'`);
  }
  return v;
}

function testNamed(name: string): (v: Value, args: Value[]) => boolean {
  const simple = TESTS[name];
  if (simple !== undefined) return (v) => simple(v);
  const withArg = TESTS_WITH_ARGUMENT[name];
  if (withArg !== undefined) {
    return (v, args) => {
      if (args[0] === undefined) throw new TemplateFault('TypeError', `test '${name}' needs an argument`);
      return withArg(v, args[0]);
    };
  }
  throw new TemplateFault('TemplateRuntimeError', `No test named '${name}'.`);
}

const compareWith = (accept: (sign: number) => boolean) => (a: Value, b: Value) => {
  const sign = pyCompare(a, b);
  if (sign === undefined) throw new TemplateFault('TypeError', `comparison not supported between instances of '${pythonTypeName(a)}' and '${pythonTypeName(b)}'`);
  return accept(sign);
};
const TESTS_WITH_ARGUMENT: Record<string, (v: Value, arg: Value) => boolean> = {
  equalto: pyEquals,
  eq: pyEquals,
  '==': pyEquals,
  ne: (a, b) => !pyEquals(a, b),
  '!=': (a, b) => !pyEquals(a, b),
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
  in: (a, b) => contains(b, a),
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
  for (const item of iterate(operand)) {
    const key = attribute === undefined ? item : attributePath(item, attribute);
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
  self.checkItems(out.length);
  return new IteratorValue(out, 'generator');
};

function stringFilter(operand: Value, name: string): Value {
  const out = STRING_FILTERS[name]!(pyStr(operand));
  return isMarkup(operand) ? new MarkupValue(out) : new StringValue(out);
}

function length(operand: Value): Value {
  if (operand instanceof IteratorValue && (operand.pythonType === 'generator' || operand.pythonType!.endsWith('iterator'))) {
    throw new TemplateFault('TypeError', `object of type '${operand.pythonType}' has no len()`);
  }
  if (operand instanceof StringValue) return new IntegerValue(Array.from(operand.value as string).length);
  if (operand instanceof ArrayValue) return new IntegerValue((operand.value as Value[]).length);
  if (operand instanceof ObjectValue && !(operand instanceof NamespaceValue)) return new IntegerValue((operand.value as Map<string, Value>).size);
  if (isUndefined(operand)) return new IntegerValue(0);
  throw new TemplateFault('TypeError', `object of type '${pythonTypeName(operand)}' has no len()`);
}

export { valueNode };

/** jinja2's sort key: the attribute's value, lower-cased when not case-sensitive. */
function sortKey(item: Value, attribute: Value | undefined, caseSensitive: boolean): Value {
  const v = attribute === undefined || attribute instanceof NullValue ? item : attributePath(item, attribute);
  return !caseSensitive && v instanceof StringValue ? new StringValue((v.value as string).toLowerCase()) : v;
}

function sortBy(items: Value[], key: (v: Value) => Value, reverse: boolean): Value[] {
  const keyed = items.map((item) => ({ item, key: key(item) }));
  keyed.sort((a, b) => {
    const sign = pyCompare(a.key, b.key);
    if (sign === undefined) throw new TemplateFault('TypeError', `'<' not supported between instances of '${pythonTypeName(a.key)}' and '${pythonTypeName(b.key)}'`);
    return reverse ? -sign : sign;
  });
  return keyed.map((k) => k.item);
}

FILTERS.sort = (self, operand, args) => {
  const [reverse, caseSensitive, attribute] = bind('sort', ['reverse', 'case_sensitive', 'attribute'], args);
  const items = iterate(operand);
  self.checkItems(items.length);
  return new ArrayValue(sortBy(items, (v) => sortKey(v, attribute, truthy(caseSensitive)), truthy(reverse)));
};

FILTERS.dictsort = (self, operand, args) => {
  const [caseSensitive, by, reverse] = bind('dictsort', ['case_sensitive', 'by', 'reverse'], args);
  if (!(operand instanceof ObjectValue) || operand instanceof NamespaceValue) throw new TemplateFault('TypeError', 'dictsort needs a mapping');
  const position = by === undefined || pyStr(by) === 'key' ? 0 : pyStr(by) === 'value' ? 1 : -1;
  if (position < 0) throw new TemplateFault('FilterArgumentError', 'You can only sort by either "key" or "value"');
  const pairs = [...(operand.value as Map<string, Value>)].map(([k, v]) => new TupleValue([keyValue(k), v]));
  self.checkItems(pairs.length);
  return new ArrayValue(sortBy(pairs, (pair) => sortKey((pair.value as Value[])[position]!, undefined, truthy(caseSensitive)), truthy(reverse)));
};

function aggregate(name: 'min' | 'max'): Filter {
  return (_, operand, args) => {
    const [caseSensitive, attribute] = bind(name, ['case_sensitive', 'attribute'], args);
    const items = iterate(operand);
    if (items.length === 0) return undefinedValue('No aggregated item, sequence was empty.');
    const sorted = sortBy(items, (v) => sortKey(v, attribute, truthy(caseSensitive)), false);
    return name === 'min' ? sorted[0]! : sorted.at(-1)!;
  };
}
FILTERS.min = aggregate('min');
FILTERS.max = aggregate('max');

/**
 * Python's str.format for `{}`, `{0}`, `{name}` (with `!s`/`!r`), `{{` and `}}`. No attribute or
 * index lookups inside fields (the sandbox's way out in Python) and no format specs but ''.
 */
function pythonFormat(self: Self, format: string, args: Value[]): string {
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
    return conversion === 'r' ? pyRepr(v) : pyStr(v);
  });
  self.checkChars(out.length);
  return out;
}

FILTERS.round = (_, operand, args) => {
  const [precision, method] = bind('round', ['precision', 'method'], args);
  if (!isNumber(operand)) return undefined;
  const p = precision === undefined ? 0 : numberOf(precision);
  const how = method === undefined ? 'common' : pyStr(method);
  const x = numberOf(operand);
  const scale = 10 ** p;
  if (how === 'ceil') return new FloatValue(Math.ceil(x * scale) / scale);
  if (how === 'floor') return new FloatValue(Math.floor(x * scale) / scale);
  if (how !== 'common') throw new TemplateFault('FilterArgumentError', 'method must be common, ceil or floor');
  return new FloatValue(roundHalfEven(x, p));
};

/** Python's round(x, p): the nearest value, ties to even (on the decimal digits of x's repr). */
function roundHalfEven(x: number, p: number): number {
  const scaled = x * 10 ** p;
  const floor = Math.floor(scaled);
  const diff = scaled - floor;
  const r = diff > 0.5 ? floor + 1 : diff < 0.5 ? floor : floor % 2 === 0 ? floor : floor + 1;
  return r / 10 ** p;
}

FILTERS.sum = (_, operand, args) => {
  const [attribute, start] = bind('sum', ['attribute', 'start'], args);
  let total: Value = start ?? new IntegerValue(0);
  for (const item of iterate(operand)) {
    const v = attribute === undefined || attribute instanceof NullValue ? item : attributePath(item, attribute);
    if (!isNumber(total) || !isNumber(v)) throw new TemplateFault('TypeError', `unsupported operand type(s) for +: '${pythonTypeName(total)}' and '${pythonTypeName(v)}'`);
    const value = numberOf(total) + numberOf(v);
    total = total instanceof FloatValue || v instanceof FloatValue ? new FloatValue(value) : new IntegerValue(value);
  }
  return total;
};

FILTERS.center = (self, operand, args) => {
  const [width] = bind('center', ['width'], args);
  const s = pyStr(operand);
  const w = width === undefined ? 80 : numberOf(width);
  self.checkChars(w);
  const n = Array.from(s).length;
  if (w <= n) return new StringValue(s);
  // CPython's str.center: the extra space goes left when the margin and the width are both odd.
  const marg = w - n;
  const left = Math.floor(marg / 2) + (marg & w & 1);
  return new StringValue(' '.repeat(left) + s + ' '.repeat(marg - left));
};

FILTERS.wordcount = (_, operand) => new IntegerValue((pyStr(operand).match(/\w+/gu) ?? []).length);

FILTERS.batch = (self, operand, args) => {
  const [size, fill] = bind('batch', ['linecount', 'fill_with'], args);
  const n = size === undefined ? 0 : numberOf(size);
  if (!(n >= 1)) throw new TemplateFault('ValueError', 'batch size must be at least 1');
  const items = iterate(operand);
  const out: Value[] = [];
  for (let i = 0; i < items.length; i += n) {
    const row = items.slice(i, i + n);
    if (fill !== undefined && fill !== null && !(fill instanceof NullValue)) while (row.length < n) row.push(fill);
    out.push(new ArrayValue(row));
  }
  self.checkItems(out.length);
  return new IteratorValue(out, 'generator');
};

FILTERS.truncate = (_, operand, args) => {
  // jinja2's do_truncate(s, length=255, killwords=False, end='...', leeway=5).
  const [length, killwords, end, leeway] = bind('truncate', ['length', 'killwords', 'end', 'leeway'], args);
  const s = pyStr(operand);
  const cps = Array.from(s);
  const max = length === undefined ? 255 : numberOf(length);
  const tail = end === undefined ? '...' : pyStr(end);
  const slack = leeway === undefined ? 5 : numberOf(leeway);
  if (max < tail.length) throw new TemplateFault('AssertionError', `expected length >= ${tail.length}, got ${max}`);
  if (slack < 0) throw new TemplateFault('AssertionError', `expected leeway >= 0, got ${slack}`);
  if (cps.length <= max + slack) return new StringValue(s);
  const cut = cps.slice(0, max - tail.length).join('');
  if (truthy(killwords)) return new StringValue(cut + tail);
  const space = cut.lastIndexOf(' ');
  return new StringValue((space < 0 ? cut : cut.slice(0, space)) + tail);
};

/** Python's str.replace, its size checked before it is built ('' inserts between every character). */
function pyReplace(self: Self, s: string, from: string, to: string, count: number): string {
  if (from === '') {
    const chars = Array.from(s);
    const k = count < 0 ? chars.length + 1 : Math.min(count, chars.length + 1);
    self.checkChars(s.length + k * to.length);
    let out = '';
    for (let i = 0; i < chars.length; i++) out += (i < k ? to : '') + chars[i];
    return k > chars.length ? out + to : out;
  }
  const parts = s.split(from);
  const occurrences = parts.length - 1;
  const k = count < 0 ? occurrences : Math.min(count, occurrences);
  self.checkChars(s.length + k * (to.length - from.length));
  return parts.slice(0, k + 1).join(to) + (k < occurrences ? from + parts.slice(k + 1).join(from) : '');
}

FILTERS.replace = (self, operand, args) => {
  const [from, to, count] = bind('replace', ['old', 'new', 'count'], args);
  if (from === undefined || to === undefined) throw new TemplateFault('TypeError', 'replace needs old and new');
  const out = pyReplace(self, pyStr(operand), pyStr(from), pyStr(to), count === undefined || count instanceof NullValue ? -1 : numberOf(count));
  return isMarkup(operand) ? new MarkupValue(out) : new StringValue(out);
};
