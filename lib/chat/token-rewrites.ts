/**
 * What jinja2 reads and the engine's parser does not, rewritten in the engine's token stream:
 *
 * - Tests with an argument (`x is divisibleby 3`, `x is sameas none`, `x is divisibleby(3)`):
 *   into a filter call, `x |__test__('divisibleby', 3)` (`__test_not__` for `is not`), that
 *   applies the test (interpreter.ts). A filter binds to the same operand a test does, tighter
 *   than `and`, `or`, `not` and comparisons. Tests without an argument are left to the parser.
 * - Number literals with an exponent (`1e-5`, `1.5e10`: floats in jinja2), which the lexer cuts
 *   into a number and a name (a number followed by a name is otherwise a syntax error).
 */
interface Token {
  value: string;
  type: string;
}

// What ends a test without an argument (jinja2 stops at else/or/and; a template never means the others as one).
const NOT_AN_ARGUMENT = new Set(['else', 'or', 'and', 'not', 'in', 'is', 'if', 'for', 'recursive']);
const OPENING: Record<string, string> = { OpenParen: 'CloseParen', OpenSquareBracket: 'CloseSquareBracket', OpenCurlyBracket: 'CloseCurlyBracket' };

/** The index after the bracketed group opening at `i`, or -1 when it does not close. */
function groupEnd(tokens: readonly Token[], i: number): number {
  const open = tokens[i]!.type;
  const close = OPENING[open]!;
  let depth = 0;
  for (let k = i; k < tokens.length; k++) {
    if (tokens[k]!.type === open) depth++;
    else if (tokens[k]!.type === close && --depth === 0) return k + 1;
  }
  return -1;
}

/** The index after a primary expression and its postfixes (`.name`, `[...]`, `(...)`) at `i`, or -1. */
function argumentEnd(tokens: readonly Token[], i: number): number {
  const first = tokens[i];
  if (first === undefined) return -1;
  let k: number;
  if (first.type === 'StringLiteral' || first.type === 'NumericLiteral') k = i + 1;
  else if (first.type === 'Identifier' && !NOT_AN_ARGUMENT.has(first.value)) k = i + 1;
  else if (first.type === 'OpenSquareBracket' || first.type === 'OpenCurlyBracket') k = groupEnd(tokens, i);
  else return -1;
  while (k > 0 && k < tokens.length) {
    const t = tokens[k]!;
    if (t.type === 'Dot' && tokens[k + 1]?.type === 'Identifier') k += 2;
    else if (t.type === 'OpenSquareBracket' || t.type === 'OpenParen') k = groupEnd(tokens, k);
    else break;
  }
  return k;
}

/** The engine's tokens with exponent literals joined and tests with an argument made filters. */
export function rewriteTokens(tokens: Token[]): Token[] {
  return rewriteTestArguments(joinExponents(tokens));
}

function joinExponents(tokens: Token[]): Token[] {
  if (!tokens.some((t, i) => t.type === 'NumericLiteral' && tokens[i + 1]?.type === 'Identifier')) return tokens;
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const next = tokens[i + 1];
    if (t.type === 'NumericLiteral' && next?.type === 'Identifier' && /^[eE]\d*$/.test(next.value)) {
      // `1e5` is one name after the number; `1e-5` a name `e`, a sign and a number.
      let exponent = next.value.slice(1);
      let used = 2;
      if (exponent === '') {
        const sign = tokens[i + 2];
        const digits = tokens[i + 3];
        if (sign?.type !== 'AdditiveBinaryOperator' || (sign.value !== '+' && sign.value !== '-') || digits?.type !== 'NumericLiteral' || !/^\d+$/.test(digits.value)) {
          out.push(t);
          continue;
        }
        exponent = sign.value + digits.value;
        used = 4;
      }
      // The parser makes a float of a literal with a '.', as jinja2 makes one of any exponent.
      out.push({ value: `${t.value}${t.value.includes('.') ? '' : '.0'}e${exponent}`, type: 'NumericLiteral' });
      i += used - 1;
      continue;
    }
    out.push(t);
  }
  return out;
}

function rewriteTestArguments(tokens: Token[]): Token[] {
  if (!tokens.some((t) => t.type === 'Identifier' && t.value === 'is')) return tokens;
  const out: Token[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (!(t.type === 'Identifier' && t.value === 'is')) {
      out.push(t);
      continue;
    }
    const negate = tokens[i + 1]?.type === 'Identifier' && tokens[i + 1]!.value === 'not';
    const nameAt = i + (negate ? 2 : 1);
    const name = tokens[nameAt];
    const next = tokens[nameAt + 1];
    if (name?.type !== 'Identifier' || next === undefined) {
      out.push(t);
      continue;
    }
    let args: Token[];
    let end: number;
    if (next.type === 'OpenParen') {
      end = groupEnd(tokens, nameAt + 1);
      args = end < 0 ? [] : tokens.slice(nameAt + 2, end - 1);
    } else {
      end = argumentEnd(tokens, nameAt + 1);
      args = end < 0 ? [] : tokens.slice(nameAt + 1, end);
    }
    if (end < 0 || (next.type !== 'OpenParen' && args.length === 0)) {
      out.push(t);
      continue;
    }
    out.push(
      { value: '|', type: 'Pipe' },
      { value: negate ? '__test_not__' : '__test__', type: 'Identifier' },
      { value: '(', type: 'OpenParen' },
      { value: name.value, type: 'StringLiteral' },
      ...(args.length > 0 ? [{ value: ',', type: 'Comma' }, ...args] : []),
      { value: ')', type: 'CloseParen' },
    );
    i = end - 1;
  }
  return out;
}
