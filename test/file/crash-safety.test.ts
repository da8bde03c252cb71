// What other code in the process can do to the views and the work in flight. Each case crashed
// the process before (SIGSEGV, heap corruption, abort), so each runs in a child process.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { writeGgufFile } from '../../lib/index.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { tempDir } from '../helpers/tmp.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';

const dir = tempDir();
const model = join(dir, 'model.gguf');
// 4M Q4_K elements (2.3 MB): large enough to be split across pool threads.
const ROWS = 16384;
const q4k = new Uint8Array(144 * ROWS).map((_, i) => (i * 131 + (i >> 9)) & 255);
for (let b = 0; b < ROWS; b++) q4k.set([0x00, 0x3c, 0x00, 0x38], b * 144); // d = 1, dmin = 0.5: finite values
writeGgufFile(model, {
  metadata: { 'general.name': { type: 'STRING', value: 'crash' } },
  tensors: [
    { name: 'w', type: 'Q4_K', shape: [256, ROWS], data: q4k },
    { name: 'f', type: 'F32', shape: [1024], data: new Uint8Array(new Float32Array(1024).fill(3).buffer) },
  ],
});
const M = JSON.stringify(model);
// The model's path inside a template literal of the child's own (a worker's source): escaped
// twice, so that a Windows path's backslashes survive both.
const NESTED_M = '${' + JSON.stringify(M) + '}';
const LIB = JSON.stringify(DIST_INDEX);

function expectClean(r: ReturnType<typeof runChild>): void {
  expect(r.signal, r.stderr).toBeNull();
  expect(r.status, r.stderr).toBe(0);
}

describe('nothing another part of the process does can crash it', () => {
  it('an out transferred while dequantizeAsync runs is never written: the promise rejects, the process lives', () => {
    const r = runChild(
      `
      import { openGguf, dequantize, dequantizeAsync, GgufError } from ${LIB};
      const g = openGguf(${M});
      const w = g.tensor('w');
      const want = w.dequantize();
      const results = [];
      for (let i = 0; i < 20; i++) {
        const out = new Float32Array(w.nelements);
        const pending = w.dequantizeAsync(out, { threads: 2 });
        const moved = structuredClone(out.buffer, { transfer: [out.buffer] });
        globalThis.gc();
        results.push(await pending.then(() => 'resolved', (e) => e instanceof GgufError ? e.code : String(e)));
        // A source of the caller's own memory, transferred away: the job works on its own copy.
        const src = new Uint8Array(w.bytes);
        const fromCopy = dequantizeAsync('Q4_K', src, undefined, { threads: 2 });
        postMessageTransfer(src.buffer);
        globalThis.gc();
        const values = await fromCopy;
        if (values.length !== want.length || values.some((v, j) => !Object.is(v, want[j]))) results.push('mismatch');
      }
      function postMessageTransfer(buffer) { const { port1 } = new MessageChannel(); port1.postMessage(buffer, [buffer]); port1.close(); }
      console.log(JSON.stringify([...new Set(results)]));
    `,
      ['--expose-gc'],
    );
    expectClean(r);
    expect(r.result).toEqual(['OUTPUT_TOO_SMALL']);
  });

  it('worker threads that end (terminate(), process.exit()) with native work in flight do not take the process down', () => {
    const r = runChild(`
      import { Worker } from 'node:worker_threads';
      const body = (exitHow) => \`
        import { openGguf } from ${LIB};
        const g = openGguf(${NESTED_M});
        const w = g.tensor('w');
        for (let i = 0; i < 8; i++) w.dequantizeAsync(undefined, { threads: 4 });
        \${exitHow}
      \`;
      const run = (exitHow, terminateAfterMs) => new Promise((resolve) => {
        const worker = new Worker(new URL('data:text/javascript,' + encodeURIComponent(body(exitHow))));
        worker.on('error', (e) => resolve('error ' + e.message));
        worker.on('exit', (code) => resolve('exit'));
        if (terminateAfterMs !== undefined) setTimeout(() => worker.terminate(), terminateAfterMs);
      });
      const outcomes = [];
      for (let i = 0; i < 6; i++) {
        outcomes.push(await run('setTimeout(() => {}, 10000);', i * 3));
        outcomes.push(await run('process.exit(0);'));
        outcomes.push(await run('setImmediate(() => process.exit(3));'));
      }
      console.log(JSON.stringify([...new Set(outcomes)]));
    `);
    expectClean(r);
    expect(r.result).toEqual(['exit']);
  });

  it.skipIf(READ_MODE)(mmapOnly('a write into a view changes this process memory only: no fault, the file and other mappings unchanged'), () => {
    const before = readFileSync(model);
    const r = runChild(`
      import { openGguf, dequantize } from ${LIB};
      const g = openGguf(${M});
      const f = g.tensor('f').view();
      f[0] = 42;
      f.fill(7, 1, 10);
      g.tensor('w').bytes.fill(0);
      const again = openGguf(${M});
      // A view passed as out: the kernel writes into the mapping's private pages.
      dequantize('F32', new Uint8Array(again.tensor('f').bytes), f);
      console.log(JSON.stringify({ written: [f[0], f[5]], other: again.tensor('f').view()[0], rewritten: g.tensor('f').view()[0] }));
    `);
    expectClean(r);
    expect(r.result).toEqual({ written: [3, 3], other: 3, rewritten: 3 });
    expect(readFileSync(model).equals(before)).toBe(true);
  });

  it("close() while Node's own async APIs read a view (zlib, fs, crypto): no fault, and they finish", () => {
    const r = runChild(
      `
      import { deflate, inflateSync } from 'node:zlib';
      import { openSync, write, closeSync } from 'node:fs';
      import { randomFill } from 'node:crypto';
      import { openGguf } from ${LIB};
      const sink = openSync(${JSON.stringify(join(dir, 'sink.bin'))}, 'w');
      const done = [];
      for (let i = 0; i < 30; i++) {
        const g = openGguf(${M});
        const bytes = g.tensor('w').bytes;
        const jobs = [
          new Promise((resolve, reject) => deflate(bytes, (e, z) => (e ? reject(e) : resolve(inflateSync(z).length)))),
          // Windows cannot swap a view for zeros in one step: a WriteFile reading the view right then
          // fails or writes less (README: Platforms), so only the user-mode readers there.
          ...(${WINDOWS} ? [] : [new Promise((resolve, reject) => write(sink, bytes, (e, n) => (e ? reject(e) : resolve(n))))]),
          new Promise((resolve, reject) => randomFill(g.tensor('f').view(), (e) => (e ? reject(e) : resolve('filled')))),
        ];
        g.close();
        globalThis.gc();
        done.push(...(await Promise.all(jobs)));
      }
      closeSync(sink);
      console.log(JSON.stringify([...new Set(done)]));
    `,
      ['--expose-gc'],
    );
    expectClean(r);
    expect(r.result).toEqual([144 * ROWS, 'filled']);
  });
});

describe('processes reading one file share one copy of its pages', () => {
  it.skipIf(READ_MODE || WINDOWS)(posixOnly(mmapOnly('three processes that read every byte each account for about a third of it (Pss)'), 'no /proc/self/smaps'), async () => {
    const { spawn } = await import('node:child_process');
    const barrier = join(dir, 'barrier');
    const script = `
      import { appendFileSync, readFileSync, statSync } from 'node:fs';
      import { openGguf } from ${LIB};
      const g = openGguf(${M});
      let sum = 0;
      const bytes = g.tensor('w').bytes;
      for (let i = 0; i < bytes.length; i += 4096) sum += bytes[i];
      appendFileSync(${JSON.stringify(barrier)}, 'x');
      while (statSync(${JSON.stringify(barrier)}).size < 3) await new Promise((r) => setTimeout(r, 20));
      // The mapping's own entry in smaps: Rss is what this process sees, Pss its share.
      const smaps = readFileSync('/proc/self/smaps', 'utf8').split('\\n');
      const at = smaps.findIndex((line) => line.endsWith(${M}));
      const field = (name) => Number(smaps.slice(at, at + 30).find((l) => l.startsWith(name + ':')).split(/\\s+/)[1]);
      console.log(JSON.stringify({ rss: field('Rss'), pss: field('Pss'), sum }));
      // Stay mapped until every process has read its smaps.
      appendFileSync(${JSON.stringify(barrier)}, 'y');
      while (statSync(${JSON.stringify(barrier)}).size < 6) await new Promise((r) => setTimeout(r, 20));
    `;
    const outputs = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<string>((resolve) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', script]);
            let out = '';
            child.stdout.on('data', (d: Buffer) => (out += d));
            child.on('close', () => resolve(out.trim()));
          }),
      ),
    );
    for (const out of outputs) {
      const { rss, pss } = JSON.parse(out.split('\n').pop()!) as { rss: number; pss: number };
      expect(rss).toBeGreaterThan(2000); // KiB: the tensor's 2.3 MB were read
      // Shared three ways: PSS about a third of RSS (0.34 measured); a private copy would make them equal.
      expect(pss).toBeLessThan(rss * 0.75);
    }
  });
});
