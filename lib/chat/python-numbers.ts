/**
 * Python's number functions that jinja2's filters call, on plain JS values: `round()` (exact, on
 * the double's binary value), `int(str, base)` and `float(str)` as they parse text.
 */

/** A finite double's magnitude as m * 2^e, exactly. */
function exactBinary(x: number): { m: bigint; e: number } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const bits = view.getBigUint64(0);
  const exponent = Number(bits >> 52n);
  const fraction = bits & ((1n << 52n) - 1n);
  return exponent === 0 ? { m: fraction, e: -1074 } : { m: fraction | (1n << 52n), e: exponent - 1075 };
}

/** num / den rounded to an integer, ties to even. */
function divideHalfEven(num: bigint, den: bigint): bigint {
  const q = num / den;
  const twice = 2n * (num % den);
  return twice > den || (twice === den && (q & 1n) === 1n) ? q + 1n : q;
}

/**
 * Python's round(float, p): the exact value of the double rounded to p decimals, ties to even (so
 * 2.675 is 2.67: the double is 2.67499999...), read back as the nearest double.
 */
export function roundFloat(x: number, p: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  if (p > 1100) return x; // a double has at most 1,074 decimals
  if (p < -330) return x < 0 ? -0 : 0; // past the largest double
  const { m, e } = exactBinary(x);
  let num = e >= 0 ? m << BigInt(e) : m;
  let den = e >= 0 ? 1n : 1n << BigInt(-e);
  if (p >= 0) num *= 10n ** BigInt(p);
  else den *= 10n ** BigInt(-p);
  const q = divideHalfEven(num, den);
  const v = Number(p >= 0 ? `${q}e-${p}` : `${q}e${-p}`);
  return x < 0 ? -v : v;
}

/** Python's round(int, p): an int; a negative p rounds to tens, hundreds, ... ties to even. */
export function roundInt(x: number, p: number): number {
  if (p >= 0 || !Number.isSafeInteger(x)) return x;
  if (p < -330) return 0;
  const unit = 10n ** BigInt(-p);
  const q = divideHalfEven(BigInt(Math.abs(x)), unit);
  const v = Number(q * unit);
  return x < 0 ? -v : v;
}

const DIGITS = /^[0-9a-z](?:_?[0-9a-z])*$/i;
const PREFIX: Record<string, number> = { x: 16, o: 8, b: 2 };

/**
 * Python's int(text, base) of an already stripped text, or undefined where Python raises
 * ValueError (a bad digit, a bad base; underscores only between digits, or after a prefix).
 */
export function intOfText(text: string, base: number): number | undefined {
  if (!Number.isInteger(base) || (base !== 0 && (base < 2 || base > 36))) return undefined;
  let s = text;
  const negative = s.startsWith('-');
  if (s.startsWith('-') || s.startsWith('+')) s = s.slice(1);
  let radix = base;
  const prefix = /^0([xob])_?/i.exec(s);
  if (prefix !== null && (base === 0 || base === PREFIX[prefix[1]!.toLowerCase()])) {
    radix = PREFIX[prefix[1]!.toLowerCase()]!;
    s = s.slice(prefix[0].length);
  } else if (base === 0) {
    radix = 10;
    if (/^0/.test(s) && !/^0(?:_?0)*$/.test(s)) return undefined; // int('010', 0)
  }
  if (!DIGITS.test(s)) return undefined;
  let value = 0;
  for (const ch of s) {
    if (ch === '_') continue;
    const d = Number.parseInt(ch, 36);
    if (d >= radix) return undefined;
    value = value * radix + d;
  }
  return negative ? -value : value;
}

const FLOAT = /^[+-]?(?:(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:e[+-]?\d(?:_?\d)*)?|inf|infinity|nan)$/i;

/** Python's float(text) of an already stripped text, or undefined where Python raises ValueError. */
export function floatOfText(text: string): number | undefined {
  if (!FLOAT.test(text)) return undefined;
  const negative = text.startsWith('-');
  const body = text.replace(/^[+-]/, '').toLowerCase();
  if (body === 'nan') return NaN;
  if (body === 'inf' || body === 'infinity') return negative ? -Infinity : Infinity;
  return Number(text.replace(/_/g, ''));
}
