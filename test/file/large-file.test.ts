import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GgufError, openGguf, parseGguf, writeGgufFile, type GgufWriteTensor } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';

const GiB = 2 ** 30;
const f32 = (n: number, at: (i: number) => number) => new Uint8Array(Float32Array.from({ length: n }, (_, i) => at(i)).buffer);

describe('files larger than one ArrayBuffer', () => {
  const dir = tempDir();

  it('a sparse 6+ GiB file opens and reads the right values across and past the 4 GiB mark', () => {
    const path = join(dir, 'big.gguf');
    // Sequential layout: head, a hole up to just before 4 GiB, a tensor across the mark, a second
    // hole, then a tail tensor beyond 6 GiB. Holes cost no disk.
    const across = 1 << 20; // 4 MiB of F32
    const tensors: GgufWriteTensor[] = [
      { name: 'head', type: 'F32', shape: [1024], data: f32(1024, (i) => i) },
      { name: 'hole1', type: 'I8', shape: [4 * GiB - 2 * 2 ** 20 - 8192] },
      { name: 'across', type: 'F32', shape: [across], data: f32(across, (i) => i * 0.5) },
      { name: 'hole2', type: 'I8', shape: [2 * GiB] },
      { name: 'tail', type: 'F32', shape: [4096], data: f32(4096, (i) => -i) },
    ];
    const layout = writeGgufFile(path, { metadata: { 'general.name': { type: 'STRING', value: 'big' } }, tensors });
    expect(layout.fileSize).toBeGreaterThan(6 * GiB);

    using g = openGguf(path);
    expect(g.fileSize).toBe(layout.fileSize);
    const a = g.tensor('across')!;
    expect(a.fileOffset).toBeLessThan(4 * GiB);
    expect(a.fileOffset + a.nbytes).toBeGreaterThan(4 * GiB);
    const values = a.view() as Float32Array;
    expect(a.zeroCopyView).toBe(!READ_MODE);
    expect([values[0], values[12345], values[across - 1]]).toEqual([0, 6172.5, (across - 1) * 0.5]);

    const tail = g.tensor('tail')!;
    expect(tail.fileOffset).toBeGreaterThan(6 * GiB);
    expect(Array.from((tail.view() as Float32Array).subarray(4090))).toEqual([-4090, -4091, -4092, -4093, -4094, -4095]);
    expect((g.tensor('head')!.view() as Float32Array)[1023]).toBe(1023);

    // hole1 is just under 4 GiB, so on Node 20 (4 GiB max) it fits a window; hole2 is 2 GiB.
    expect(g.tensor('hole2')!.bytes[123456789]).toBe(0);
    expect(g.tensor('hole1')!.bytes.length).toBe(g.tensor('hole1')!.nbytes);
  });

  it.skipIf(READ_MODE)(mmapOnly('a tensor larger than one window gets TENSOR_TOO_LARGE from bytes, not a crash'), () => {
    // Windows are capped at buffer.constants.MAX_LENGTH (4 GiB on Node 20, far more from Node 22)
    // or maxWindowBytes: the cap given here makes the case the same on every Node.
    const path = join(dir, 'huge.gguf');
    const window = 64 << 20;
    writeGgufFile(path, { tensors: [{ name: 'x', type: 'I8', shape: [window + 4096] }, { name: 'y', type: 'F32', shape: [8], data: f32(8, (i) => i) }] });
    using g = openGguf(path, { maxWindowBytes: window });
    let error: unknown;
    try {
      void g.tensor('x')!.bytes;
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GgufError);
    expect(error).toMatchObject({ code: 'TENSOR_TOO_LARGE', offset: g.tensor('x')!.fileOffset });
    expect((g.tensor('y')!.view() as Float32Array)[7]).toBe(7);
  });

  it.skipIf(READ_MODE)(mmapOnly('small windows (maxWindowBytes) give the same bytes as reading the file, for every tensor placement'), () => {
    const path = join(dir, 'windows.gguf');
    const sizes = [7, 1000, 3000, 4096, 5000, 8191, 9000, 12000, 16000, 100, 15000, 1];
    const tensors = sizes.map((n, i) => ({ name: `t${i}`, type: 'F32', shape: [n], data: f32(n, (j) => i * 100000 + j) }));
    const layout = writeGgufFile(path, { alignment: 64, tensors });
    const whole = parseGguf(readFileSync(path));
    const window = 64 * 1024;
    using g = openGguf(path, { maxWindowBytes: window });
    expect(layout.fileSize).toBeGreaterThan(window * 2);
    for (const t of g.tensors) {
      expect(Buffer.from(t.bytes).equals(Buffer.from(whole.tensor(t.name)!.bytes)), t.name).toBe(true);
      expect(t.view()[0], t.name).toBe(Number(t.name.slice(1)) * 100000);
      expect(t.bytes.buffer.byteLength).toBeLessThanOrEqual(window);
    }
    // Tensors within the first window share it; a grid of half-window steps serves the rest.
    expect(g.tensor('t0')!.bytes.buffer).toBe(g.tensor('t1')!.bytes.buffer);
    expect(new Set(g.tensors.map((t) => t.bytes.buffer)).size).toBeLessThan(g.tensors.length);
    const tooBig = writeGgufFile(join(dir, 'toobig.gguf'), { tensors: [{ name: 'w', type: 'F32', shape: [20000] }] });
    using big = openGguf(join(dir, 'toobig.gguf'), { maxWindowBytes: 64 * 1024 });
    expect(big.fileSize).toBe(tooBig.fileSize);
    expect(() => big.tensor('w')!.bytes).toThrow(expect.objectContaining({ code: 'TENSOR_TOO_LARGE' }));
  });

  it.skipIf(READ_MODE)(mmapOnly('windows are small: reading a few tensors of a 6 GiB file counts tens of megabytes of ArrayBuffers with V8, not the file'), () => {
    // V8 schedules garbage collections by the bytes of new ArrayBuffers (process.memoryUsage().external);
    // windows spanning whole files made the first reads of a model stall on full mark-compacts.
    const path = join(dir, 'windows-small.gguf');
    const big = 40 << 20;
    writeGgufFile(path, {
      tensors: [
        { name: 'a', type: 'F32', shape: [1024], data: f32(1024, (i) => i) },
        { name: 'h1', type: 'I8', shape: [3 * GiB] },
        { name: 'b', type: 'F32', shape: [1024], data: f32(1024, (i) => -i) },
        { name: 'h2', type: 'I8', shape: [3 * GiB] },
        { name: 'big', type: 'I8', shape: [big] },
        { name: 'c', type: 'F32', shape: [1024], data: f32(1024, (i) => 2 * i) },
      ],
    });
    const before = process.memoryUsage().external;
    using g = openGguf(path);
    expect([g.tensor('a')!.view()[5], g.tensor('b')!.view()[5], g.tensor('c')!.view()[5]]).toEqual([5, -5, 10]);
    expect(process.memoryUsage().external - before).toBeLessThan(112 << 20); // the 4 MiB header and three 32 MiB windows
    for (const name of ['a', 'b', 'c']) expect(g.tensor(name)!.bytes.buffer.byteLength).toBeLessThanOrEqual(32 << 20);
    // A tensor across a window's end gets a window of exactly its bytes.
    const whole = g.tensor('big')!.bytes;
    expect([whole.buffer.byteLength, whole.byteOffset]).toEqual([big, 0]);
  });

  it.skipIf(READ_MODE)(mmapOnly('a header longer than one window is HEADER_TOO_LARGE'), () => {
    const path = join(dir, 'longheader.gguf');
    writeGgufFile(path, {
      metadata: { tokens: { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: 20000 }, (_, i) => `token${i}`) } },
      tensors: [{ name: 'w', type: 'F32', shape: [100000] }],
    });
    expect(() => openGguf(path, { maxWindowBytes: 64 * 1024 })).toThrow(expect.objectContaining({ code: 'HEADER_TOO_LARGE' }));
  });
});

describe('the header window', () => {
  it('grows to read a header longer than its first few MiB', () => {
    const dir = tempDir();
    const path = join(dir, 'longheader.gguf');
    const tokens = Array.from({ length: 400_000 }, (_, i) => `token-number-${i}`); // ~9 MiB of header
    writeGgufFile(path, {
      metadata: { tokens: { type: 'ARRAY', arrayType: 'STRING', value: tokens } },
      tensors: [{ name: 'w', type: 'F32', shape: [4], data: f32(4, (i) => i + 1) }],
    });
    using g = openGguf(path);
    expect(g.dataOffset).toBeGreaterThan(8 << 20);
    expect(g.metadata.array('tokens')!.at(-1)).toBe('token-number-399999');
    expect(Array.from(g.tensor('w')!.view() as Float32Array)).toEqual([1, 2, 3, 4]);
  });
});
