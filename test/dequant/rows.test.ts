// Row lookups: gatherRows / gatherRowsAsync / dequantizeRows against the TypeScript kernels (which
// match ggml bit for bit, dequant-reference.test.ts), and dequantize() without `out`.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dequantize, GgufError, ggmlTypeByName, nativeDequantInfo, openGguf, writeGgufFile, type GgufTensor } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';
import { randomBytes } from '../helpers/random.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';

const dir = tempDir();
const ROWS = 40;


function sameBits(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** A file with one ROWS-row tensor of `type`, rows of two blocks, random bytes (NaN and subnormal scales included). */
function tensorOf(type: string): { tensor: GgufTensor; bytes: Uint8Array; rowBytes: number; close(): void } {
  const t = ggmlTypeByName(type)!;
  const rowLength = 2 * t.blockSize;
  const rowBytes = 2 * t.typeSize;
  const bytes = randomBytes(ROWS * rowBytes, t.id * 131 + 7);
  const path = join(dir, `${type}.gguf`);
  writeGgufFile(path, { tensors: [{ name: 'embd', type, shape: [rowLength, ROWS], data: bytes }] });
  const g = openGguf(path);
  return { tensor: g.tensor('embd')!, bytes, rowBytes, close: () => g.close() };
}

/** What the rows `ids` decode to, row by row with the TypeScript kernel. */
function expected(type: string, bytes: Uint8Array, rowBytes: number, ids: ArrayLike<number>): Float32Array {
  const rowLength = (rowBytes / ggmlTypeByName(type)!.typeSize) * ggmlTypeByName(type)!.blockSize;
  const want = new Float32Array(ids.length * rowLength);
  for (let i = 0; i < ids.length; i++) {
    const row = bytes.subarray(ids[i]! * rowBytes, (ids[i]! + 1) * rowBytes);
    want.set(dequantize(type, row, undefined, { backend: 'js' }), i * rowLength);
  }
  return want;
}

const IDS = [3, 0, 39, 3, 17, 22, 22, 1, 38, 5, 11, 29];

describe('gatherRows', () => {
  const types = new Set([...nativeDequantInfo().types, 'Q4_K', 'Q6_K', 'IQ2_XXS', 'F32']);
  for (const type of types) {
    it(`${type}: rows by id (plain array, Int32Array, Uint32Array, repeats) equal the TypeScript kernel's, bit for bit`, () => {
      const { tensor, bytes, rowBytes, close } = tensorOf(type);
      try {
        const want = expected(type, bytes, rowBytes, IDS);
        expect(sameBits(tensor.gatherRows(IDS), want)).toBe(true);
        expect(sameBits(tensor.gatherRows(Int32Array.from(IDS)), want)).toBe(true);
        expect(sameBits(tensor.gatherRows(Uint32Array.from(IDS)), want)).toBe(true);
        expect(sameBits(tensor.gatherRows(IDS, undefined, { backend: 'js' }), want)).toBe(true);
        expect(sameBits(tensor.dequantizeRows(17, 3), expected(type, bytes, rowBytes, [17, 18, 19]))).toBe(true);
      } finally {
        close();
      }
    });
  }

  it('writes into out and returns it; an out too small or an id out of range throws before anything is written', () => {
    const { tensor, bytes, rowBytes, close } = tensorOf('Q4_K');
    try {
      const rowLength = tensor.rowLength;
      const out = new Float32Array(IDS.length * rowLength + 5).fill(7);
      expect(tensor.gatherRows(IDS, out)).toBe(out);
      expect(sameBits(out.subarray(0, IDS.length * rowLength), expected('Q4_K', bytes, rowBytes, IDS))).toBe(true);
      expect(out[IDS.length * rowLength]).toBe(7);

      const untouched = new Float32Array(4 * rowLength).fill(7);
      for (const bad of [[0, 1, ROWS, 2], [0, -1, 2, 3], [1.5, 0, 0, 0], [0, Number.NaN, 0, 0], [0, 0, 0, 2 ** 32]]) {
        expect(() => tensor.gatherRows(bad, untouched)).toThrow(expect.objectContaining({ code: 'ROW_OUT_OF_RANGE' }));
      }
      expect(() => tensor.gatherRows(Int32Array.of(0, -5, 1, 2), untouched)).toThrow(expect.objectContaining({ code: 'ROW_OUT_OF_RANGE' }));
      expect(() => tensor.gatherRows([0, 1, 2, 3], new Float32Array(4 * rowLength - 1))).toThrow(expect.objectContaining({ code: 'OUTPUT_TOO_SMALL' }));
      expect(untouched.every((v) => v === 7)).toBe(true);
      expect(tensor.gatherRows([])).toHaveLength(0);
    } finally {
      close();
    }
  });

  it('after close() it is CLOSED, for the sync and async forms', async () => {
    const { tensor, close } = tensorOf('Q8_0');
    close();
    expect(() => tensor.gatherRows([1])).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    await expect(tensor.gatherRowsAsync([1])).rejects.toMatchObject({ code: 'CLOSED' });
  });

  for (const type of ['Q4_K', 'IQ3_S', 'F16']) {
    it(`${type}: gatherRowsAsync gives the same bits, in one part or several, into out or a new array`, async () => {
      const { tensor, bytes, rowBytes, close } = tensorOf(type);
      try {
        const ids = Array.from({ length: 300 }, (_, i) => (i * 7919) % ROWS);
        const want = expected(type, bytes, rowBytes, ids);
        expect(sameBits(await tensor.gatherRowsAsync(ids), want)).toBe(true);
        expect(sameBits(await tensor.gatherRowsAsync(ids, undefined, { threads: 3 }), want)).toBe(true);
        const out = new Float32Array(want.length);
        expect(await tensor.gatherRowsAsync(Uint32Array.from(ids), out, { threads: 2 })).toBe(out);
        expect(sameBits(out, want)).toBe(true);
        let reported = 0;
        await tensor.gatherRowsAsync(ids, undefined, { backend: 'js', onProgress: (done) => (reported = done) });
        expect(reported).toBe(want.length);
        await expect(tensor.gatherRowsAsync([0, ROWS])).rejects.toBeInstanceOf(GgufError);
      } finally {
        close();
      }
    });
  }
});

describe.skipIf(READ_MODE)(mmapOnly('row lookups on a mapped file read the mapping itself'), () => {
  it('no window over the tensor: a row of a tensor larger than any window decodes, and V8 counts no new ArrayBuffer', () => {
    const rows = 1024;
    const bytes = randomBytes(rows * 2 * 144, 99);
    const path = join(dir, 'big-embedding.gguf');
    writeGgufFile(path, { tensors: [{ name: 'embd', type: 'Q4_K', shape: [512, rows], data: bytes }] });
    using g = openGguf(path, { maxWindowBytes: 65536 }); // the tensor (288 KiB) fits no window
    const embd = g.tensor('embd')!;
    expect(() => embd.bytes).toThrow(expect.objectContaining({ code: 'TENSOR_TOO_LARGE' }));
    const before = process.memoryUsage().external;
    const ids = [1023, 0, 512, 7];
    expect(sameBits(embd.gatherRows(ids), expected('Q4_K', bytes, 288, ids))).toBe(true);
    expect(sameBits(embd.dequantizeRows(1000, 2), expected('Q4_K', bytes, 288, [1000, 1001]))).toBe(true);
    expect(process.memoryUsage().external - before).toBeLessThan(64 * 1024);
  });
});

describe.skipIf(READ_MODE)(mmapOnly('ids the decoding itself could change'), () => {
  it('ids sharing memory with out, or in a SharedArrayBuffer, are read once: no crash, the right rows (child process)', () => {
    const r = runChild(`
      import { openGguf, writeGgufFile } from ${JSON.stringify(DIST_INDEX)};
      const path = ${JSON.stringify(join(dir, 'alias.gguf'))};
      const bytes = new Uint8Array(64 * 288).map((_, i) => (i * 2654435761) >>> 24);
      writeGgufFile(path, { tensors: [{ name: 'embd', type: 'Q4_K', shape: [512, 64], data: bytes }] });
      const g = openGguf(path);
      const embd = g.tensor('embd');
      const want = embd.gatherRows([0, 1, 2, 3, 4, 5, 6, 7], undefined, { backend: 'js' });
      const shared = new ArrayBuffer(8 * 512 * 4);
      const ids = new Int32Array(shared, 0, 8);
      ids.set([0, 1, 2, 3, 4, 5, 6, 7]);
      const out = new Float32Array(shared); // decoding row 0 overwrites ids[1..]
      embd.gatherRows(ids, out);
      const same = (a, b) => Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
      const sab = new Int32Array(new SharedArrayBuffer(32));
      sab.set([7, 6, 5, 4, 3, 2, 1, 0]);
      const fromSab = embd.gatherRows(sab);
      // The addon itself, given aliased ids and out (the library copies ids first; the addon must not rely on it).
      const { addon } = await import(${JSON.stringify(DIST_INDEX.replace('index.js', 'native.js'))});
      const shared2 = new ArrayBuffer(8 * 512 * 4);
      const ids2 = new Int32Array(shared2, 0, 8);
      ids2.set([0, 1, 2, 3, 4, 5, 6, 7]);
      const out2 = new Float32Array(shared2);
      addon().gatherRows(bytes, 12, 288, ids2, 8, out2);
      console.log(JSON.stringify([same(out, want), same(fromSab.subarray(0, 512), want.subarray(7 * 512, 8 * 512)), same(out2, want)]));
    `);
    expect(r.signal).toBeNull();
    expect(r.result).toEqual([true, true, true]);
  });
});

describe('gatherRows of large batches (shared with the addon\'s helper thread)', () => {
  it('equal row-by-row decoding, from the main thread and four workers at once (child process)', () => {
    // 4,096 Q4_K rows of 2,048: a batch of 600 writes 4.9 MB, over the 512 KiB from which the
    // addon splits it in chunks between the calling thread and its helper.
    const path = join(dir, 'large-batches.gguf');
    writeGgufFile(path, { tensors: [{ name: 'embd', type: 'Q4_K', shape: [2048, 4096], data: randomBytes(4096 * 1152, 99) }] });
    const script = (role: string) => `
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      import { createHash } from 'node:crypto';
      const g = openGguf(${JSON.stringify(path)});
      const embd = g.tensor('embd');
      let seed = ${role === 'main' ? 1 : 'Number(process.argv.at(-1))'};
      const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
      const digest = (a) => createHash('sha256').update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest('hex');
      let same = 0;
      for (let round = 0; round < 8; round++) {
        const ids = Int32Array.from({ length: 600 }, () => next() % 4096);
        const rows = new Float32Array(600 * 2048);
        for (let i = 0; i < ids.length; i++) embd.dequantizeRows(ids[i], 1, rows.subarray(i * 2048, (i + 1) * 2048));
        if (digest(embd.gatherRows(ids)) === digest(rows)) same++;
      }
      g.close();
      ${role === 'main' ? '' : "import('node:worker_threads').then(({ parentPort }) => parentPort.postMessage(same));"}
      ${role === 'main' ? 'export { same };' : ''}`;
    const r = runChild(`
      import { Worker } from 'node:worker_threads';
      const workers = [2, 3, 4, 5].map((seed) => new Promise((resolve, reject) => {
        const w = new Worker(${JSON.stringify(script('worker'))}, { eval: true, argv: [String(seed)] });
        w.once('message', resolve);
        w.once('error', reject);
      }));
      const main = await import('data:text/javascript,' + encodeURIComponent(${JSON.stringify(script('main'))}));
      console.log(JSON.stringify({ main: main.same, workers: await Promise.all(workers) }));
    `);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.result).toEqual({ main: 8, workers: [8, 8, 8, 8] });
  });
});

describe('dequantize() without out', () => {
  it('gives the same bits as into a preallocated array, for outputs small and large', () => {
    for (const blocks of [3, 40_000]) {
      const bytes = randomBytes(blocks * 144, blocks);
      const into = dequantize('Q4_K', bytes, new Float32Array(blocks * 256));
      const fresh = dequantize('Q4_K', bytes);
      expect(fresh).toBeInstanceOf(Float32Array);
      expect(sameBits(fresh, into)).toBe(true);
      fresh[0] = 1.5; // the caller's to write
      expect(fresh[0]).toBe(1.5);
    }
  });

  it('the output memory the addon keeps for reuse is never one a live array still uses', () => {
    // Outputs of 8 MiB and more: a freed one is kept for the next; a live one must never be.
    const r = runChild(
      `
      import { dequantize } from ${JSON.stringify(DIST_INDEX)};
      const blocks = (seed) => { const b = new Uint8Array(10_000 * 144); let x = seed; for (let i = 0; i < b.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; b[i] = x; } return b; };
      const a = blocks(1), b = blocks(2);
      const want = (bytes) => dequantize('Q4_K', bytes, new Float32Array(2_560_000));
      const same = (x, y) => Buffer.compare(Buffer.from(x.buffer, x.byteOffset, x.byteLength), Buffer.from(y.buffer, y.byteOffset, y.byteLength)) === 0;
      const settle = async () => { for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); } };
      const results = [];
      let first = dequantize('Q4_K', a);
      const second = dequantize('Q4_K', b);
      results.push(same(first, want(a)), same(second, want(b)));
      first = undefined;
      await settle();
      const third = dequantize('Q4_K', a); // may reuse first's memory
      await settle();
      const fourth = dequantize('Q4_K', b);
      results.push(same(second, want(b)), same(third, want(a)), same(fourth, want(b)));
      console.log(JSON.stringify(results));
      `,
      ['--expose-gc'],
    );
    expect(r.stderr).toBe('');
    expect(r.result).toEqual([true, true, true, true, true]);
  });
});

describe('row lookups cost the rows, not what lies between them', () => {
  const rows = 262_144; // 256 MiB of F32 (a hole: nothing written), rows of 1 KiB
  const path = join(dir, 'wide.gguf');
  writeGgufFile(path, { tensors: [{ name: 'embd', type: 'F32', shape: [256, rows] }] });

  it.skipIf(READ_MODE)(mmapOnly('200 lookups far apart leave no window behind once garbage (child process, --expose-gc)'), () => {
    const r = runChild(
      `
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const g = openGguf(${JSON.stringify(path)});
      const t = g.tensor('embd');
      for (let i = 0; i < 200; i++) {
        await t.gatherRowsAsync([i * 97, ${rows} - 1 - i * 89]);
        t.dequantizeRows(((i % 7) + 1) * 32768 - 1, 2); // across a 32 MiB window's end
        t.dequantizeRows((i * 1021) % ${rows - 2}, 2);
      }
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 50));
      globalThis.gc();
      console.log(JSON.stringify({ external: process.memoryUsage().external }));
    `,
      ['--expose-gc'],
    );
    expect(r.stderr).toBe('');
    // Before: every window stayed until close(), 16.7 GiB of them here. Now the grid windows
    // (the tensor's 256 MiB) and the newest own windows (64 MiB, or the last span).
    expect((r.result as { external: number }).external).toBeLessThan(1 << 30);
  });

  it.skipIf(!existsSync('/proc/self/io'))('read mode: gatherRowsAsync of two rows far apart reads about two rows, not the span (bytes read, /proc/self/io)', async () => {
    using g = openGguf(path, { mode: 'read' });
    const t = g.tensor('embd')!;
    const readBytes = () => Number(/rchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
    const before = readBytes();
    const out = await t.gatherRowsAsync([rows - 1, 0, rows - 1]);
    const read = readBytes() - before;
    expect(out).toHaveLength(3 * 256);
    expect(read).toBeLessThan(64 << 10); // the span would be 256 MiB
  });

  it('ids of 2^32 and more are ROW_OUT_OF_RANGE, not row id - 2^32 (a tensor of more rows than that, sparse)', async () => {
    const huge = join(dir, 'many-rows.gguf');
    writeGgufFile(huge, { tensors: [{ name: 'ids', type: 'I8', shape: [1, 2 ** 32 + 8] }] });
    using g = openGguf(huge);
    const t = g.tensor('ids')!;
    expect(t.rows).toBe(2 ** 32 + 8);
    expect(() => t.gatherRows([2 ** 32 + 1])).toThrow(expect.objectContaining({ code: 'ROW_OUT_OF_RANGE' }));
    await expect(t.gatherRowsAsync([5, 2 ** 32])).rejects.toMatchObject({ code: 'ROW_OUT_OF_RANGE' });
    expect(Array.from(t.gatherRows([2 ** 32 - 1]))).toEqual([0]);
  });
});
