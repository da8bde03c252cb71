// The handler of lost pages (a file truncated while mapped) under what the rest of the process
// does: closes racing faults, SIGBUS listeners coming and going, jobs that outlive a close(). Each
// case killed or hung the process, or returned zeros, before; each runs in a child process.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeGgufFile } from '../../lib/index.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { tempDir } from '../helpers/tmp.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';

const dir = tempDir();
const ROWS = 8192; // 1.2 MB of Q4_K: large enough for pool threads to share
const model = join(dir, 'model.gguf');
const q4k = new Uint8Array(144 * ROWS).map((_, i) => (i * 131 + (i >> 9)) & 255);
for (let b = 0; b < ROWS; b++) q4k.set([0x00, 0x3c, 0x00, 0x38], b * 144); // d = 1, dmin = 0.5: finite, mostly non-zero values
writeGgufFile(model, {
  metadata: { 'general.name': { type: 'STRING', value: 'guard' } },
  tensors: [{ name: 'w', type: 'Q4_K', shape: [256, ROWS], data: q4k }],
});
const LIB = JSON.stringify(DIST_INDEX);

/** Child-script source: copies the model to a fresh file (`name`) and returns its path. */
const COPY = `
  import { copyFileSync } from 'node:fs';
  const fresh = (name) => { const p = ${JSON.stringify(dir)} + '/' + name; copyFileSync(${JSON.stringify(model)}, p); return p; };
`;
/** Child-script source: reads a lost page of a fresh truncated copy; 'zeros FILE_CHANGED' when the guard works. */
const LOST_READ = `
  const lostRead = async (name) => {
    const path = fresh(name);
    const g = openGguf(path);
    const bytes = g.tensor('w').bytes;
    truncateSync(path, 4096);
    const value = bytes[bytes.length - 1];
    let code = 'no error';
    try { g.tensor('w').bytes; } catch (e) { code = e.code; }
    g.close();
    return (value === 0 ? 'zeros ' : 'value ' + value + ' ') + code;
  };
`;

const skip = READ_MODE || WINDOWS;
const title = (name: string) => posixOnly(mmapOnly(name), 'Windows refuses to shrink a mapped file');

describe('the lost-pages guard', () => {
  it.skipIf(skip)(title('a fault racing close() on a pool thread does not disarm the guard: a later lost page still reads as zeros'), () => {
    // Node's pool threads read a view of a truncated file (zlib) while the main thread closes
    // it: a fault can reach the handler after close() replaced the range and freed its slot.
    // Before, the handler then restored the default action for the whole process, and the last
    // read below killed it.
    const r = runChild(`
      import { deflate } from 'node:zlib';
      import { truncateSync } from 'node:fs';
      import { openGguf } from ${LIB};
      ${COPY}
      ${LOST_READ}
      const until = Date.now() + 3000;
      let rounds = 0;
      const path = fresh('raced.gguf');
      while (Date.now() < until && rounds < 400) {
        const { copyFileSync } = await import('node:fs');
        copyFileSync(${JSON.stringify(model)}, path);
        const g = openGguf(path);
        const bytes = g.tensor('w').bytes;
        truncateSync(path, 4096);
        const jobs = [0, 1, 2, 3].map((k) => new Promise((resolve) => deflate(bytes.subarray(k * 65536), { level: 1 }, () => resolve())));
        // Close after a varying head start, so that some closes land while the pool faults.
        await new Promise((resolve) => (rounds % 2 === 0 ? setImmediate(resolve) : resolve()));
        g.close();
        await Promise.all(jobs);
        rounds++;
      }
      console.log(JSON.stringify({ rounds: rounds > 0, last: await lostRead('after.gguf') }));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual({ rounds: true, last: 'zeros FILE_CHANGED' });
  });

  it.skipIf(skip)(title("process.on('SIGBUS') listeners added and removed leave the guard in front; a signal sent with kill still reaches a listener"), () => {
    const r = runChild(`
      import { truncateSync } from 'node:fs';
      import { openGguf } from ${LIB};
      ${COPY}
      ${LOST_READ}
      const results = {};
      // Added then removed: Node restores the default action as the listener goes.
      const listener = () => { results.heard = (results.heard ?? 0) + 1; };
      process.on('SIGBUS', listener);
      process.off('SIGBUS', listener);
      results.afterRemoved = await lostRead('removed.gguf');
      // One that stays: Node's handler ignores the fault's address, and the read used to hang.
      process.on('SIGBUS', listener);
      results.whileListening = await lostRead('listening.gguf');
      // A SIGBUS that is no fault of ours goes on to Node's handler, and so to the listener.
      process.kill(process.pid, 'SIGBUS');
      await new Promise((resolve) => setTimeout(resolve, 100));
      for (let i = 0; i < 100 && results.heard === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      process.off('SIGBUS', listener);
      results.afterAll = await lostRead('after-all.gguf');
      console.log(JSON.stringify(results));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual({
      afterRemoved: 'zeros FILE_CHANGED',
      whileListening: 'zeros FILE_CHANGED',
      heard: 1,
      afterAll: 'zeros FILE_CHANGED',
    });
  });

  it.skipIf(skip)(title('dequantizeAsync and gatherRowsAsync on a file truncated and then closed while they run reject FILE_CHANGED, never resolve with zeros'), () => {
    const r = runChild(`
      import { truncateSync } from 'node:fs';
      import { openGguf } from ${LIB};
      ${COPY}
      const outcome = (p) => p.then((values) => 'resolved, ' + values.filter((v) => v === 0).length + ' zeros', (e) => e.code ?? String(e));
      const results = [];
      for (const [i, run] of [
        (w) => w.dequantizeAsync(undefined, { threads: 2 }),
        (w) => w.gatherRowsAsync(Int32Array.from({ length: ${ROWS} }, (_, r) => ${ROWS} - 1 - r), undefined, { threads: 2 }),
      ].entries()) {
        const path = fresh('job' + i + '.gguf');
        const g = openGguf(path);
        const w = g.tensor('w');
        truncateSync(path, 4096);
        const pending = outcome(run(w));
        g.close();
        results.push(await pending);
      }
      console.log(JSON.stringify(results));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual(['FILE_CHANGED', 'FILE_CHANGED']);
  });
});
