// The CLI's progress bar: nothing for short work, a bar once work has taken its time, cleared.
import { describe, expect, it } from 'vitest';
import { progressBar } from '../../lib/cli/progress-bar.js';

function fakeTerminal() {
  const written: string[] = [];
  return { written, stream: { write: (s: string) => written.push(s) > 0 } as unknown as NodeJS.WriteStream };
}

describe('progressBar', () => {
  it('draws nothing before afterMs (short work prints nothing, not even the clearing sequence)', () => {
    const t = fakeTerminal();
    const bar = progressBar(t.stream, { afterMs: 60_000 });
    bar.update(5, 10);
    bar.update(10, 10);
    bar.end();
    expect(t.written).toEqual([]);
  });

  it('after it: the share done and MB/s, at most every 100 ms except the last, then the line cleared', () => {
    const t = fakeTerminal();
    const bar = progressBar(t.stream, { afterMs: 0 });
    bar.update(5e6, 10e6);
    bar.update(6e6, 10e6); // within 100 ms of the last: skipped
    bar.update(10e6, 10e6); // the end: always drawn
    bar.end();
    expect(t.written).toHaveLength(3);
    expect(t.written[0]).toMatch(/^\r\[#{15}\.{15}\] 50%  \d+ MB\/s$/);
    expect(t.written[1]).toMatch(/^\r\[#{30}\] 100%/);
    expect(t.written[2]).toBe('\r\x1b[K');
  });

  it('no stream (not a terminal): nothing at all; rate: false leaves out MB/s', () => {
    const none = progressBar(undefined, { afterMs: 0 });
    none.update(1, 2);
    none.end();
    const t = fakeTerminal();
    progressBar(t.stream, { afterMs: 0, rate: false }).update(1, 4);
    expect(t.written).toEqual(['\r[########......................] 25%']);
  });
});
