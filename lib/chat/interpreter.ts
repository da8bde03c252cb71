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
import {
  ArrayValue,
  BooleanValue,
  BreakControl,
  ContinueControl,
  dictKey,
  FunctionValue,
  IntegerValue,
  isDict,
  isNumber,
  isUndefined,
  NamespaceValue,
  NullValue,
  numberOf,
  ObjectValue,
  pyRepr,
  pyStr,
  pythonTypeName,
  StringValue,
  type UndefinedInfo,
  UndefinedValue,
  undefinedValue,
  type Value,
} from './values.js';
import { type Node, VALUE, valueNode } from './nodes.js';
import {
  binary,
  BudgetExceeded,
  dictMethod,
  iterate,
  splitArgs,
  stringMethod,
  TemplateFault,
  truthy,
  undefinedFault,
} from './python-ops.js';
import { FILTERS, JINJA2_FILTERS, testNamed } from './filters.js';

export interface RenderLimits {
  /** performance.now() past which the render stops. */
  deadline: number;
  /** Longest string (and rendered output) in characters. */
  maxChars: number;
  /** Longest list. */
  maxItems: number;
}

const MAX_CALL_DEPTH = 300;
/** What a render may build in all (strings and lists, garbage included), in multiples of maxChars. */
export const BUILD_FACTOR = 8;
/** A list item counts as this many characters in that total (a value object is tens of bytes). */
const ITEM_CHARS = 16;
/** A loop's body and its else block, as renderFor hands them to the engine's loop (renderIteration). */
const ITERATION = '__Iteration';
const LOOP_ELSE = '__LoopElse';
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

export class ChatInterpreter extends Interpreter {
  private steps = 0;
  private depth = 0;
  private written = 0;
  private built = 0;

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

  /** Bounds one string (a value the template holds, or its output). */
  checkChars(length: number): void {
    if (length > this.limits.maxChars) throw new BudgetExceeded(`the template built a string of more than ${this.limits.maxChars} characters`);
  }

  /** Bounds one list. */
  checkItems(length: number): void {
    if (length > this.limits.maxItems) throw new BudgetExceeded(`the template built a list of more than ${this.limits.maxItems} items`);
  }

  /** A string built (or about to be): bounded, and counted in what the render builds in all. */
  buildChars(length: number): void {
    this.checkChars(length);
    this.countBuilt(length);
  }

  /** A list built (or about to be): bounded, and counted in what the render builds in all. */
  buildItems(length: number): void {
    this.checkItems(length);
    this.countBuilt(length * ITEM_CHARS);
  }

  /**
   * What the render builds in all, garbage included: each string and list is bounded, but a
   * template may build many (`([a] * 1000)|map('upper')` over a 30-million-character `a`), and a
   * render has the process's heap to itself. More than BUILD_FACTOR times maxChars stops it.
   */
  countBuilt(chars: number): void {
    this.built += chars;
    if (this.built > BUILD_FACTOR * this.limits.maxChars) throw new BudgetExceeded(`the template built more than ${BUILD_FACTOR * this.limits.maxChars} characters (and list items) in all`);
  }

  /** A value a filter or call returned: a string or list is counted as built. */
  countResult(v: Value): void {
    if (v instanceof StringValue) this.countBuilt((v.value as string).length);
    else if (v instanceof ArrayValue) this.countBuilt((v.value as Value[]).length * ITEM_CHARS);
  }

  str(v: Value): Value {
    return new StringValue(pyStr(v, this));
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
  try {
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
        case ITERATION:
          out += renderIteration(this, statement.body, statement.state, env);
          break;
        case LOOP_ELSE:
          out += statement.state.carried;
          statement.state.carried = '';
          out += this.renderBlock(statement.body, env);
          break;
        case 'Macro':
          this.evaluate(statement, env);
          break;
        default: {
          const text = pyStr(this.evaluate(statement, env), this); // {{ none }} prints None, as Python's str()
          this.countWritten(text.length);
          out += text;
        }
      }
      this.checkChars(out.length);
    }
  } catch (error) {
    // What was written before a `{% break %}` or `{% continue %}` goes up with it to the iteration.
    if (error instanceof BreakControl || error instanceof ContinueControl) (error as LoopControl).written = out + ((error as LoopControl).written ?? '');
    throw error;
  }
  return out;
};

type LoopControl = Error & { written?: string };

/** What a loop's iterations hand on: text written before a `{% break %}` or `{% continue %}`. */
interface LoopState {
  carried: string;
}

/**
 * One iteration of a loop's body, in a scope of its own (jinja2's: a `{% set %}` in the body is gone
 * at the next iteration). The engine's loop drops what an iteration wrote before a `{% break %}`
 * or `{% continue %}` (jinja2 keeps it) and handles the control itself (which decides, as in
 * jinja2, whether `{% else %}` runs): the text is carried to what comes next in the loop's output,
 * the next iteration, the else block or the loop's end (renderFor).
 */
function renderIteration(self: Self, body: Node[], state: LoopState, env: Environment): string {
  const carried = state.carried;
  state.carried = '';
  try {
    return carried + self.renderBlock(body, new Environment(env));
  } catch (error) {
    if (error instanceof BreakControl || error instanceof ContinueControl) state.carried = carried + ((error as LoopControl).written ?? '');
    throw error;
  }
}

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
  if (computed && expr.property.type === 'SliceExpression') {
    const slice = base.evaluateMemberExpression.call(this, { ...expr, object: valueNode(object) }, env);
    this.countResult(slice);
    return slice;
  }
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
    const fields = (object as Value & { fields?: string[] }).fields;
    if (fields?.includes(name)) return (object.value as Value[])[fields.indexOf(name)]!;
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
    const item = !Number.isInteger(i) ? undefined : object instanceof StringValue ? codePointAt(object.value as string, i) : (object.value as Value[]).at(i);
    result = item === undefined ? new UndefinedValue() : typeof item === 'string' ? new StringValue(item) : item;
  } else {
    result = base.evaluateMemberExpression.call(this, { ...expr, computed: true, object: valueNode(object), property: valueNode(property) }, env);
  }
  if (!isUndefined(result)) return result;
  // jinja2's object_type_repr: None is 'None', other values '<type> object'.
  const owner = object instanceof NullValue ? 'None' : `${type} object`;
  if (!(property instanceof StringValue)) return undefinedValue(`${owner} has no element ${pyRepr(property, this)}`);
  return undefinedValue(`'${owner}' has no attribute '${property.value as string}'`);
};

/** Python's s[i]: the i-th code point (from the end when negative), found without splitting the whole string. */
function codePointAt(s: string, i: number): string | undefined {
  if (i >= 0) {
    for (let at = 0, n = 0; at < s.length; n++) {
      const c = String.fromCodePoint(s.codePointAt(at)!);
      if (n === i) return c;
      at += c.length;
    }
    return undefined;
  }
  for (let end = s.length, n = -1; end > 0; n--) {
    const low = s.charCodeAt(end - 1);
    const high = end > 1 ? s.charCodeAt(end - 2) : 0;
    const width = low >= 0xdc00 && low < 0xe000 && high >= 0xd800 && high < 0xdc00 ? 2 : 1;
    if (n === i) return s.slice(end - width, end);
    end -= width;
  }
  return undefined;
}

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

ours.evaluateCallExpression = function (this: Self, expr, env) {
  const callee = this.evaluate(expr.callee, env);
  if (isUndefined(callee)) throw undefinedFault(callee);
  if (!(callee instanceof FunctionValue)) throw new TemplateFault('TypeError', `'${pythonTypeName(callee)}' object is not callable`);
  // Bounded well before the JS stack (Python stops near 1000 frames, a few per macro call).
  const self = this as unknown as { depth: number };
  if (++self.depth > MAX_CALL_DEPTH) throw new TemplateFault('RecursionError', 'maximum recursion depth exceeded');
  try {
    // A call's result (a string method's, a macro's, range()'s) is a value built.
    const result = base.evaluateCallExpression.call(this, { ...expr, callee: valueNode(callee) }, env);
    this.countResult(result);
    return result;
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

ours.renderFor = function (this: Self, node, env) {
  const select = node.iterable.type === 'SelectExpression';
  const iterableNode = select ? node.iterable.lhs : node.iterable;
  const items = iterate(this.evaluate(iterableNode, new Environment(env)), this);
  // An iteration may evaluate nothing (an empty body): count the items, so nested loops meet the deadline.
  this.countSteps(items.length);
  // The engine unpacks `for a, b in ...` only from lists (not tuples): hand it plain lists.
  const unpack = node.loopvar.type === 'TupleLiteral';
  const plain = new ArrayValue(unpack ? items.map((x) => (x instanceof ArrayValue ? new ArrayValue(x.value) : x)) : items);
  const iterable = select ? { ...node.iterable, lhs: valueNode(plain) } : valueNode(plain);
  const state: LoopState = { carried: '' };
  const body = [{ type: ITERATION, body: node.body, state }];
  const defaultBlock = [{ type: LOOP_ELSE, body: node.defaultBlock, state }];
  return base.renderFor.call(this, { ...node, iterable, body, defaultBlock }, env) + state.carried;
};

ours.evaluateTestExpression = function (this: Self, node, env) {
  const operand = this.evaluate(node.operand, env);
  const name = node.test.value as string;
  const result = testNamed(name, this)(operand, []);
  return new BooleanValue(node.negate ? !result : result);
};

ours.applyFilter = function (this: Self, operand, filterNode, env) {
  const name = (filterNode.type === 'Identifier' ? filterNode.value : filterNode.callee?.value) as string;
  const args = filterNode.type === 'CallExpression' ? this.evaluateCallArguments(filterNode.args, env) : [];
  if (name === '__test__' || name === '__test_not__') {
    // `x is test arg`, rewritten so by token-rewrites.ts.
    const [testName, ...testArgs] = args;
    const result = testNamed(pyStr(testName!, this), this)(operand, testArgs);
    return new BooleanValue(name === '__test__' ? result : !result);
  }
  if (!JINJA2_FILTERS.has(name)) throw new TemplateFault('TemplateRuntimeError', `No filter named '${name}' found.`);
  // A filter's result is counted as built: `map('upper')` over a list calls this for each item.
  // Every jinja2 filter is ours (filters.ts): the engine's own print other text (`[object Map]`).
  this.countSteps(1);
  const result = FILTERS[name]!(this, operand, args);
  this.countResult(result);
  return result;
};


