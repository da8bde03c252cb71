import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { liveMappings, openGguf, writeGgufFile } from '../../lib/index.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { tempDir } from '../helpers/tmp.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';

const dir = tempDir();
const file = join(dir, 'life.gguf');
writeGgufFile(file, {
  // A 4-byte key puts the FLOAT32 elements at byte 52: aligned, so the array is a view of the file.
  metadata: { vals: { type: 'ARRAY', arrayType: 'FLOAT32', value: [1, 2, 3, 4] } },
  tensors: [
    { name: 'a', type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) },
    { name: 'b', type: 'F32', shape: [8], data: new Uint8Array(new Float32Array(8).fill(7).buffer) },
  ],
});

const UNDER_ASAN = (process.env.LD_PRELOAD ?? '').includes('libasan');

describe('mapping lifecycle', () => {
  it.skipIf(READ_MODE)(mmapOnly('views kept after close() keep their length and read zeros instead of crashing; close() twice is fine'), () => {
    const r = runChild(`
      import { openGguf, liveMappings, GgufError } from ${JSON.stringify(DIST_INDEX)};
      const g = openGguf(${JSON.stringify(file)});
      const view = g.tensor('a').view();
      const bytes = g.tensor('a').bytes;
      const scores = g.metadata.get('vals');
      const before = [view[0], bytes.length, scores[3], liveMappings()];
      g.close();
      g.close();
      const code = (f) => { try { f(); return 'no error'; } catch (e) { return e instanceof GgufError ? e.code : String(e); } };
      const later = [code(() => g.tensor('b').bytes), code(() => g.tensor('a').view()), code(() => g.metadata.get('vals')), code(() => g.metadata.array('vals').at(0))];
      const after = [view[0], view.length, bytes[15], bytes.length, scores[3], scores.length, liveMappings(), g.closed];
      view.fill(9); // a write after close lands in private zero pages
      console.log(JSON.stringify({ before, after, later, written: view[3] }));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual({
      before: [1, 16, 4, 1],
      after: [0, 4, 0, 16, 0, 4, 0, true],
      later: ['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED'],
      written: 9,
    });
  });

  it.skipIf(READ_MODE)(mmapOnly('an unclosed file is unmapped by GC once it and every view are unreachable, not before'), () => {
    const r = runChild(
      `
      import { openGguf, liveMappings } from ${JSON.stringify(DIST_INDEX)};
      // Finalizers run on later tasks: up to 2 s of turns for a loaded machine (wine, CI).
      const settle = async (done) => { for (let i = 0; i < 100 && !done(); i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); } };
      let view = (() => openGguf(${JSON.stringify(file)}).tensor('b').view())();
      let turns = 0;
      await settle(() => ++turns > 5);
      const whileViewed = [liveMappings(), view[7]];
      view = null;
      await settle(() => liveMappings() === 0);
      console.log(JSON.stringify({ whileViewed, afterGc: liveMappings() }));
    `,
      ['--expose-gc'],
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual({ whileViewed: [1, 7], afterGc: 0 });
  });

  it('10,000 open/close cycles leave memory flat and no mapping behind', () => {
    const r = runChild(
      `
      import { openGguf, liveMappings } from ${JSON.stringify(DIST_INDEX)};
      const cycle = (n) => { let sum = 0; for (let i = 0; i < n; i++) { const g = openGguf(${JSON.stringify(file)}); sum += g.tensor('b').view()[0]; g.close(); } return sum; };
      const settle = async () => { for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((r) => setImmediate(r)); } };
      cycle(1000); await settle();
      const rss0 = process.memoryUsage().rss;
      const sum = cycle(10000); await settle();
      const rss1 = process.memoryUsage().rss;
      console.log(JSON.stringify({ sum, live: liveMappings(), growthMiB: (rss1 - rss0) / 2 ** 20 }));
    `,
      ['--expose-gc'],
    );
    expect(r.status, r.stderr).toBe(0);
    const { sum, live, growthMiB } = r.result as { sum: number; live: number; growthMiB: number };
    expect(sum).toBe(70000);
    expect(live).toBe(0);
    // Under AddressSanitizer, freed memory sits in its quarantine (up to 256 MiB) and shows in RSS.
    if (!UNDER_ASAN) expect(growthMiB).toBeLessThan(16);
  });

  it('worker threads each map the same file, concurrently with the main thread', async () => {
    const { Worker } = await import('node:worker_threads');
    const script = `
      import { parentPort } from 'node:worker_threads';
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const sums = [];
      for (let i = 0; i < 200; i++) {
        const g = openGguf(${JSON.stringify(file)});
        sums.push(Array.from(g.tensor('a').view()).reduce((x, y) => x + y, 0));
        g.close();
      }
      parentPort.postMessage(sums.every((s) => s === 10));
    `;
    const workers = Array.from({ length: 4 }, () => new Worker(new URL(`data:text/javascript,${encodeURIComponent(script)}`)));
    using g = openGguf(file);
    const results = await Promise.all(
      workers.map((w) => new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      })),
    );
    expect(results).toEqual([true, true, true, true]);
    expect(Array.from(g.tensor('b')!.view() as Float32Array)).toEqual(new Array(8).fill(7));
    await Promise.all(workers.map((w) => w.terminate()));
    g.close();
    expect(liveMappings()).toBe(0);
  });

  it.skipIf(READ_MODE)(mmapOnly('a view shares the mapping: bytes equal the file and no copy was made'), () => {
    using g = openGguf(file);
    const t = g.tensor('b')!;
    expect(t.bytes.buffer).toBe(g.tensor('a')!.bytes.buffer);
    expect(t.view().buffer).toBe(t.bytes.buffer);
    expect(Buffer.from(t.bytes).equals(readFileSync(file).subarray(t.fileOffset, t.fileOffset + t.nbytes))).toBe(true);
  });
});
