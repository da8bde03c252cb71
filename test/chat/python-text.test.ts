// Python's repr() of floats and strings, recorded from CPython 3 (`repr(x)`), against ours.
import { describe, expect, it } from 'vitest';
import { pythonFloat, pythonStringRepr, strftime } from '../../lib/chat/python-text.js';

const FLOATS: Array<[number, string]> = [
  [0.30000000000000004, '0.30000000000000004'],
  [1e16, '1e+16'],
  [1000000000000000.5, '1000000000000000.5'],
  [1.2345678901234568e17, '1.2345678901234568e+17'],
  [1e-5, '1e-05'],
  [0.0001, '0.0001'],
  [-0, '-0.0'],
  [2.5, '2.5'],
  [1e22, '1e+22'],
  [5e-324, '5e-324'],
  [1.7976931348623157e308, '1.7976931348623157e+308'],
  [100, '100.0'],
  [3e-10, '3e-10'],
  [12345.678, '12345.678'],
];

const STRINGS: Array<[string, string]> = [
  ['a', "'a'"],
  ["it's", `"it's"`],
  ['say "hi"', `'say "hi"'`],
  [`both ' "`, `'both \\' "'`],
  ['tab\tnl\n', "'tab\\tnl\\n'"],
  ['\x00\x7f', "'\\x00\\x7f'"],
  ['é😀', "'é😀'"],
  ['\u200b', "'\\u200b'"],
  ['\xa0', "'\\xa0'"],
  ['back\\slash', "'back\\\\slash'"],
];

describe('Python text', () => {
  it.each(FLOATS)('repr(%s) is %s', (x, text) => expect(pythonFloat(x)).toBe(text));
  it.each(STRINGS)('repr(%j) is %s', (s, text) => expect(pythonStringRepr(s)).toBe(text));

  it('strftime in the C locale (datetime(2024, 7, 26, 9, 5, 3).strftime)', () => {
    const day = new Date(2024, 6, 26, 9, 5, 3);
    // Recorded: datetime(2024,7,26,9,5,3).strftime('%Y-%m-%d %A %a %B %b %d %H:%M:%S %I %p %j %y %e %%')
    expect(strftime(day, '%Y-%m-%d %A %a %B %b %d %H:%M:%S %I %p %j %y %e %%')).toBe('2024-07-26 Friday Fri July Jul 26 09:05:03 09 AM 208 24 26 %');
  });
});
