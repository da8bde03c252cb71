import { closeSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { dequantize, liveMappings, openGguf, writeGgufFile, type GgufWriteSpec } from '../../lib/index.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { tempDir } from '../helpers/tmp.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';

const dir = tempDir();

/** A file with a Q4_K tensor (distinct bytes per `tag`) and some metadata. */
function modelSpec(tag: number, rows = 64): GgufWriteSpec {
  return {
    metadata: {
      'general.name': { type: 'STRING', value: `model ${tag}` },
      tokens: { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: 200 }, (_, i) => `t${i}`) },
    },
    tensors: [
      { name: 'w', type: 'Q4_K', shape: [256, rows], data: new Uint8Array(144 * rows).map((_, j) => (j * 7 + tag) & 255) },
      { name: 'norm', type: 'F32', shape: [256], data: new Uint8Array(new Float32Array(256).fill(tag).buffer) },
    ],
  };
}

function expectCode(fn: () => unknown, code: string): void {
  expect(fn).toThrow(expect.objectContaining({ name: 'GgufError', code }));
}

describe('the mapping under change and stress', () => {
  it.skipIf(WINDOWS)(posixOnly('a file replaced by rename keeps serving the old bytes; verify() passes; a new open sees the new file', 'Windows refuses to replace a mapped file'), () => {
    const path = join(dir, 'renamed.gguf');
    writeGgufFile(path, modelSpec(1));
    using old = openGguf(path);
    const before = Buffer.from(old.tensor('w')!.bytes).toString('hex');
    const replacement = join(dir, 'renamed.gguf.tmp');
    writeGgufFile(replacement, modelSpec(2));
    renameSync(replacement, path);
    expect(Buffer.from(old.tensor('w')!.bytes).toString('hex')).toBe(before);
    expect(old.metadata.get('general.name')).toBe('model 1');
    old.verify();
    using fresh = openGguf(path);
    expect(fresh.metadata.get('general.name')).toBe('model 2');
    expect(fresh.tensor('norm')!.view()[0]).toBe(2);
  });

  it.skipIf(READ_MODE || WINDOWS)(posixOnly(mmapOnly('a file truncated while mapped: the lost pages read as zeros, then every access throws FILE_CHANGED (child process)'), 'Windows refuses to shrink a mapped file (scripts/windows-lost-pages.ts checks lost pages there)'), () => {
    const path = join(dir, 'truncated.gguf');
    writeGgufFile(path, modelSpec(3, 4096)); // 590 KB of Q4_K
    const second = join(dir, 'truncated-gathered.gguf');
    writeGgufFile(second, modelSpec(3, 4096));
    const r = runChild(`
      import { truncateSync } from 'node:fs';
      import { openGguf, GgufError } from ${JSON.stringify(DIST_INDEX)};
      const code = async (f) => { try { await f(); return 'no error'; } catch (e) { return e instanceof GgufError ? e.code + ' ' + e.offset : 'other ' + e; } };
      // A batch of rows large enough to be shared with the addon's helper thread: lost pages are
      // read by whichever of the two threads reaches them first.
      const other = openGguf(${JSON.stringify(second)});
      truncateSync(${JSON.stringify(second)}, 8192);
      const gathered = await code(() => other.tensor('w').gatherRows(Int32Array.from({ length: 4096 }, (_, i) => 4095 - i)));
      const g = openGguf(${JSON.stringify(path)});
      const w = g.tensor('w');
      const bytes = w.bytes;
      const head = bytes[0];
      truncateSync(${JSON.stringify(path)}, 8192);
      const verified = await code(() => g.verify());
      // The kernel reads lost pages on a pool thread here: the handler serves every thread.
      const pooled = await code(() => w.dequantizeAsync(undefined, { threads: 2 }));
      let sum = 0;
      for (let i = bytes.length - 1; w.fileOffset + i >= 8192; i -= 4096) sum += bytes[i];
      const later = [await code(() => w.bytes), await code(() => w.view()), await code(() => w.dequantizeRows(0, 1)), await code(() => g.verify())];
      console.log(JSON.stringify({ head, gathered, verified, pooled, sum, later, stillFirst: bytes[0] }));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    const result = r.result as { head: number; gathered: string; verified: string; pooled: string; sum: number; later: string[]; stillFirst: number };
    expect(result.gathered).toMatch(/^FILE_CHANGED/); // zeros read, then the check after the rows
    expect(result.verified).toBe('FILE_CHANGED 8192');
    // The pool read either finished before any page was lost (values) or after (FILE_CHANGED).
    expect(['no error', expect.stringMatching(/^FILE_CHANGED/)]).toContainEqual(result.pooled);
    expect(result.sum).toBe(0); // every byte sampled lies past the cut
    expect(result.later.map((c) => c.split(' ')[0])).toEqual(['FILE_CHANGED', 'FILE_CHANGED', 'FILE_CHANGED', 'FILE_CHANGED']);
    expect(result.stillFirst).toBe(result.head); // pages before the cut keep the file's bytes
  });

  it.skipIf(WINDOWS)(posixOnly('a SIGBUS outside the mappings still reaches the default action (child process)', 'no signals'), () => {
    const path = join(dir, 'chained.gguf');
    writeGgufFile(path, modelSpec(5));
    const r = runChild(`
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const g = openGguf(${JSON.stringify(path)});
      console.log('opened', g.tensor('w').bytes.length);
      process.kill(process.pid, 'SIGBUS');
      setTimeout(() => console.log('survived'), 500);
    `);
    expect(r.stdout).toContain('opened');
    expect(r.stdout).not.toContain('survived');
    expect(r.signal).toBe('SIGBUS');
  });

  it('verify(): modified in place gives FILE_CHANGED; sha256 checks every byte', () => {
    const path = join(dir, 'verified.gguf');
    writeGgufFile(path, modelSpec(4));
    const digest = createHash('sha256').update(readFileSync(path)).digest('hex');
    {
      using g = openGguf(path);
      g.verify({ sha256: digest });
      expectCode(() => g.verify({ sha256: '0'.repeat(64) }), 'CHECKSUM_MISMATCH');
    }
    using g = openGguf(path);
    // The last byte changed in place (same file, not truncated: Windows refuses to shrink it).
    const last = readFileSync(path).at(-1)!;
    const fd = openSync(path, 'r+');
    writeSync(fd, Uint8Array.of(last ^ 1), 0, 1, statSync(path).size - 1);
    closeSync(fd);
    expectCode(() => g.verify(), 'FILE_CHANGED');
  });

  it('close() twice, and every access after close, are defined', async () => {
    const path = join(dir, 'closed.gguf');
    writeGgufFile(path, modelSpec(5));
    const g = openGguf(path);
    const w = g.tensor('w')!;
    g.close();
    g.close();
    expect(g.closed).toBe(true);
    for (const access of [() => w.bytes, () => w.view(), () => w.block(0), () => w.dequantize(), () => w.dequantizeRows(0, 1), () => g.metadata.array('tokens')!.at(0), () => g.metadata.array('tokens')!.toArray(), () => g.verify()]) {
      expectCode(access, 'CLOSED');
    }
    await expect(w.dequantizeAsync()).rejects.toMatchObject({ code: 'CLOSED' });
    // What was decoded at open stays readable.
    expect([g.metadata.get('general.name'), w.name, w.shape]).toEqual(['model 5', 'w', [256, 64]]);
  });

  it('16 worker threads open, read, dequantize and close the same and different files for 16 s: no crash, no mapping or descriptor left', () => {
    const files = [0, 1, 2, 3].map((i) => {
      const path = join(dir, `stress-${i}.gguf`);
      writeGgufFile(path, modelSpec(10 + i, 256));
      return path;
    });
    const want = files.map((_, i) => Array.from(dequantize('Q4_K', modelSpec(10 + i, 256).tensors![0]!.data!).subarray(0, 4)));
    // Each worker: open, read, dequantize (into its own preallocated arrays, so that garbage does
    // not drown the measurement), sometimes async, sometimes closing mid-work or leaving the file
    // to the garbage collector. Run in a child process with --expose-gc, which measures its RSS.
    const worker = `
      import { parentPort, workerData } from 'node:worker_threads';
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const { files, want, seconds, id } = workerData;
      const end = Date.now() + seconds * 1000;
      const out = new Float32Array(256 * 256), row = new Float32Array(256);
      // One async output per file: jobs in flight for the same file write the same values.
      const asyncOut = files.map(() => new Float32Array(256 * 256));
      let opens = 0, mismatches = 0, pending = [];
      while (Date.now() < end) {
        // Half the workers share one file; the others go round all of them.
        const i = id % 2 === 0 ? 0 : opens % files.length;
        const g = openGguf(files[i]);
        opens++;
        const w = g.tensor('w');
        w.dequantizeRows(opens % w.rows, 1, row);
        w.dequantize(out);
        if (out[0] !== want[i][0] || out[3] !== want[i][3] || g.tensor('norm').view()[0] !== 10 + i) mismatches++;
        if (g.metadata.array('tokens').at(199) !== 't199') mismatches++;
        if (opens % 5 === 0) pending.push(w.dequantizeAsync(asyncOut[i]).then((v) => { if (v[0] !== want[i][0]) mismatches++; }));
        if (opens % 7 === 0) { pending.push(w.dequantizeAsync(asyncOut[i]).catch(() => {})); g.close(); continue; } // close mid-work
        if (opens % 3 !== 0) g.close(); // the rest are left to the garbage collector
        if (pending.length > 8) { await Promise.all(pending); pending = []; }
        if (opens % 200 === 0) globalThis.gc();
      }
      await Promise.all(pending);
      parentPort.postMessage({ opens, mismatches });
    `;
    const r = runChild(
      `
      import { Worker } from 'node:worker_threads';
      import { readdirSync } from 'node:fs';
      import { liveMappings } from ${JSON.stringify(DIST_INDEX)};
      const fds = () => (process.platform === 'linux' ? readdirSync('/proc/self/fd').length : 0);
      const fdsBefore = fds();
      const seconds = 16;
      const workers = Array.from({ length: 16 }, (_, id) => new Worker(new URL('data:text/javascript,' + encodeURIComponent(${JSON.stringify(worker)})), { workerData: { files: ${JSON.stringify(files)}, want: ${JSON.stringify(want)}, seconds, id } }));
      const exited = workers.map((w) => new Promise((resolve) => w.once('exit', resolve)));
      const results = await Promise.all(workers.map((w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); })));
      await Promise.all(exited);
      console.log(JSON.stringify({ results, live: liveMappings(), fdsLeft: fds() - fdsBefore }));
    `,
      ['--expose-gc'],
    );
    expect(r.status, r.stderr).toBe(0);
    const { results, live, fdsLeft } = r.result as { results: Array<{ opens: number; mismatches: number }>; live: number; fdsLeft: number };
    for (const w of results) expect(w.mismatches).toBe(0);
    expect(results.reduce((n, w) => n + w.opens, 0)).toBeGreaterThan(16 * 50);
    // Every worker's mappings are gone once it has exited (closed, or collected at its exit).
    expect(live).toBe(0);
    // Nothing of a file is left behind: no descriptor either (some 1,000 opens; Node itself keeps
    // one or two more after its first workers).
    // (Memory is not compared: an RSS window over 16 threads' heaps failed CI on a loaded machine;
    // a leak per open is caught by the 10,000-cycle test in lifecycle.test.ts.)
    expect(fdsLeft).toBeLessThan(8);
  });
});

describe.skipIf(READ_MODE)(mmapOnly('workers terminated in the middle of addon calls'), () => {
  it('30 workers each terminated while calling into the addon in a loop: the process lives on (child process)', () => {
    const path = join(dir, 'terminated.gguf');
    writeGgufFile(path, { tensors: [{ name: 'w', type: 'Q8_0', shape: [64, 64], data: new Uint8Array(34 * 128).map((_, i) => (i % 34 === 1 ? 0x3c : i & 0x7f)) }] });
    // Each call made while the worker's environment is being torn down fails inside Node-API; a
    // C++ exception escaping then would abort the whole process (std::terminate).
    const r = runChild(`
      import { Worker } from 'node:worker_threads';
      import { liveMappings } from ${JSON.stringify(DIST_INDEX)};
      // An ES module, as the parent (--input-type=module) makes eval'd workers.
      const source = \`
        import { parentPort } from 'node:worker_threads';
        import { openGguf } from ${JSON.stringify(DIST_INDEX)};
        const g = openGguf(\${${JSON.stringify(JSON.stringify(path))}});
        const t = g.tensor('w');
        parentPort.postMessage('go');
        for (;;) { t.dequantizeRows(3, 1); t.bytes; g.residency(); g.verify(); }\`;
      for (let i = 0; i < 30; i++) {
        const w = new Worker(source, { eval: true });
        await new Promise((resolve) => w.once('message', resolve));
        await new Promise((resolve) => setTimeout(resolve, 2 + (i % 5)));
        await w.terminate();
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      console.log(JSON.stringify({ survived: 30, live: liveMappings() }));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.result, r.stderr).toEqual({ survived: 30, live: 0 });
  }, 120_000);
});
