/**
 * How Python prints values, for chat templates rendered as jinja2 renders them: `str()` and
 * `repr()` of numbers and strings, `json.dumps` string escapes, markupsafe's HTML escape, and a
 * C-locale `strftime`. Pure functions of plain JS values; the interpreter maps its values onto them.
 */

/** Python's `repr(float)`: the shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16. */
export function pythonFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  // JS gives the same shortest digits as Python's repr; only the layout differs.
  const [mantissa, expText] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const exp = Number(expText);
  const sign = x < 0 ? '-' : '';
  if (exp < -4 || exp >= 16) {
    const frac = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${frac}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  if (digits.length <= exp + 1) return `${sign}${digits}${'0'.repeat(exp + 1 - digits.length)}.0`;
  return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

/** Python's `str(int)` for an integer held in a double (exact up to 2^53). */
export function pythonInt(x: number): string {
  return Number.isSafeInteger(x) ? String(x) : BigInt(x).toString();
}

// What repr() escapes: quotes and backslash, and the characters Python's str.isprintable() refuses
// (categories C, Zl, Zp, and Zs but the space), found by one regex pass (a long text has few).
const REPR_ESCAPED = /['"\\\p{C}\p{Zl}\p{Zp}\xa0\u1680\u2000-\u200a\u202f\u205f\u3000]/gu;

/** Python's `repr(str)`: single quotes unless the text has ' and no ", escapes as CPython writes them. */
export function pythonStringRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(REPR_ESCAPED, (ch) => {
    if (ch === '"' || ch === "'") return ch === quote ? '\\' + ch : ch;
    if (ch === '\\') return '\\\\';
    if (ch === '\n') return '\\n';
    if (ch === '\r') return '\\r';
    if (ch === '\t') return '\\t';
    const cp = ch.codePointAt(0)!;
    return cp <= 0xff ? '\\x' + cp.toString(16).padStart(2, '0') : cp <= 0xffff ? '\\u' + cp.toString(16).padStart(4, '0') : '\\U' + cp.toString(16).padStart(8, '0');
  });
  return quote + body + quote;
}

const JSON_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** Python's `json.dumps(str, ensure_ascii=...)`. */
export function jsonString(s: string, ensureAscii: boolean): string {
  const pattern = ensureAscii ? /["\\\u0000-\u001f\u007f-\uffff]/g : /["\\\u0000-\u001f]/g;
  return '"' + s.replace(pattern, (ch) => JSON_ESCAPES[ch] ?? '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0')) + '"';
}

/** Python's float in JSON: repr, and NaN/Infinity as json.dumps writes them (allow_nan). */
export function jsonFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return pythonFloat(x);
}

// jinja2's _word_beginning_split_re, ([-\s({\[<]+), with Python's whitespace.
const WORD_BEGINNING = /([-\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000({[<]+)/;

/** jinja2's title filter: each piece after a space, dash or opening bracket capitalized (so "they're" is "They're"). */
export function titleCase(s: string): string {
  return s
    .split(WORD_BEGINNING)
    .filter((item) => item !== '')
    .map((item) => {
      const first = String.fromCodePoint(item.codePointAt(0)!);
      return first.toUpperCase() + item.slice(first.length).toLowerCase();
    })
    .join('');
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', "'": '&#39;', '"': '&#34;' };

/** markupsafe's `escape()`. */
export function htmlEscape(s: string): string {
  return s.replace(/[&<>'"]/g, (ch) => HTML_ESCAPES[ch]!);
}

/** Python strings compare by code point; JS by UTF-16 unit (which differs above U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** `datetime.strftime` in the C locale, on the date's local time (as transformers' strftime_now uses datetime.now()). */
export function strftime(date: Date, format: string): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  const dayOfYear = Math.floor((Date.UTC(date.getFullYear(), date.getMonth(), date.getDate()) - Date.UTC(date.getFullYear(), 0, 1)) / 86_400_000) + 1;
  const hour12 = date.getHours() % 12 === 0 ? 12 : date.getHours() % 12;
  const fields: Record<string, () => string> = {
    a: () => DAYS[date.getDay()]!.slice(0, 3),
    A: () => DAYS[date.getDay()]!,
    b: () => MONTHS[date.getMonth()]!.slice(0, 3),
    h: () => MONTHS[date.getMonth()]!.slice(0, 3),
    B: () => MONTHS[date.getMonth()]!,
    d: () => pad(date.getDate()),
    e: () => String(date.getDate()).padStart(2, ' '),
    m: () => pad(date.getMonth() + 1),
    y: () => pad(date.getFullYear() % 100),
    Y: () => String(date.getFullYear()),
    H: () => pad(date.getHours()),
    I: () => pad(hour12),
    M: () => pad(date.getMinutes()),
    S: () => pad(date.getSeconds()),
    f: () => pad(date.getMilliseconds() * 1000, 6),
    p: () => (date.getHours() < 12 ? 'AM' : 'PM'),
    j: () => pad(dayOfYear, 3),
    w: () => String(date.getDay()),
    u: () => String(date.getDay() === 0 ? 7 : date.getDay()),
    D: () => `${pad(date.getMonth() + 1)}/${pad(date.getDate())}/${pad(date.getFullYear() % 100)}`,
    F: () => `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`,
    T: () => `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`,
    R: () => `${pad(date.getHours())}:${pad(date.getMinutes())}`,
    n: () => '\n',
    t: () => '\t',
    '%': () => '%',
  };
  return format.replace(/%(.)/gs, (whole, c: string) => fields[c]?.() ?? whole);
}
