// Wrong results and unclear errors found by review, each pinned to what the library promises.
import { closeSync, mkdirSync, openSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { dequantize, dequantizeAsync, encodeGguf, GgufError, openGguf, parseGguf, writeGgufFile } from '../../lib/index.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir();

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return e instanceof GgufError ? e.code : `${(e as Error).constructor.name}: ${(e as Error).message}`;
  }
  return 'no error';
}

const f32Bytes = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

describe('windows, verify and paths', () => {
  it('a row range in a window of its own does not shadow the whole tensor (the cache keys windows by start and length)', () => {
    // 64 KiB windows: a 64 KiB tensor starting just past a grid point gets a window of its own,
    // and so does the range of its first 127 rows.
    const path = join(dir, 'own-windows.gguf');
    const rows = Float32Array.from({ length: 128 * 128 }, (_, i) => i);
    writeGgufFile(path, {
      tensors: [
        { name: 'filler', type: 'F32', shape: [8448], data: new Uint8Array(8448 * 4) },
        { name: 't', type: 'F32', shape: [128, 128], data: new Uint8Array(rows.buffer) },
      ],
    });
    using g = openGguf(path, { maxWindowBytes: 65536 });
    const t = g.tensor('t')!;
    expect(t.dequantizeRows(0, 127)[127 * 128 - 1]).toBe(127 * 128 - 1);
    expect(t.bytes.length).toBe(65536);
    expect(t.view()[128 * 128 - 1]).toBe(128 * 128 - 1);
    expect(t.dequantize()[5]).toBe(5);
  });

  it('verify({ sha256 }) works with small windows', async () => {
    const path = join(dir, 'hashed.gguf');
    writeGgufFile(path, { tensors: [{ name: 't', type: 'F32', shape: [65536], data: new Uint8Array(262144).fill(3) }] });
    const { createHash } = await import('node:crypto');
    const { readFileSync } = await import('node:fs');
    const digest = createHash('sha256').update(readFileSync(path)).digest('hex');
    using g = openGguf(path, { maxWindowBytes: 65536 });
    expect(() => g.verify({ sha256: digest })).not.toThrow();
  });

  it.skipIf(WINDOWS)(posixOnly('verify() checks the file that was opened, not what a relative path names after chdir (child process)', 'Windows refuses to shrink a mapped file (scripts/windows-lost-pages.ts checks lost pages there)'), () => {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    for (const d of [a, b]) {
      mkdirSync(d, { recursive: true });
      writeGgufFile(join(d, 'm.gguf'), { tensors: [{ name: 't', type: 'F32', shape: [4096], data: new Uint8Array(16384).fill(1) }] });
    }
    const r = runChild(`
      import { truncateSync } from 'node:fs';
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      process.chdir(${JSON.stringify(a)});
      const g = openGguf('m.gguf');
      process.chdir(${JSON.stringify(b)});
      truncateSync(${JSON.stringify(join(a, 'm.gguf'))}, 100);
      try { g.verify(); console.log(JSON.stringify('passed')); } catch (e) { console.log(JSON.stringify(e.code)); }
    `);
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toBe('FILE_CHANGED');
  });

  it('paths: a NUL byte is refused as fs refuses it; file: URLs and Buffers open', () => {
    const path = join(dir, 'p.gguf');
    writeGgufFile(path, { tensors: [{ name: 't', type: 'F32', shape: [4], data: f32Bytes([1, 2, 3, 4]) }] });
    expect(() => openGguf(`${path}\0.txt`)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => openGguf(Buffer.from(`${path}\0`))).toThrow(TypeError);
    expect(() => openGguf(42 as unknown as string)).toThrow(TypeError);
    using fromUrl = openGguf(pathToFileURL(path));
    using fromBuffer = openGguf(Buffer.from(path));
    expect([fromUrl.tensor('t')!.view()[3], fromBuffer.tensor('t')!.view()[0]]).toEqual([4, 1]);
  });

  it('GGUF_MMAP_ADDON loads exactly a regular .node file; any other value runs nothing and leaves read mode working (child processes)', () => {
    const file = join(dir, 'ok.gguf');
    writeGgufFile(file, { tensors: [{ name: 't', type: 'F32', shape: [2], data: f32Bytes([1, 2]) }] });
    const script = (value: string) => `
      process.env.GGUF_MMAP_ADDON = ${JSON.stringify(value)};
      const { liveMappings, openGguf } = await import(${JSON.stringify(DIST_INDEX)});
      const read = openGguf(${JSON.stringify(file)}, { mode: 'read' }).tensor('t').f32()[1];
      let mmap;
      try { openGguf(${JSON.stringify(file)}, { mode: 'mmap' }); mmap = 'mapped'; } catch (e) { mmap = e.code + (e.message.includes('GGUF_MMAP_ADDON') ? ' naming GGUF_MMAP_ADDON' : ''); }
      console.log(JSON.stringify({ live: liveMappings(), read, mmap }));
    `;
    const evil = join(dir, 'evil.js');
    writeFileSync(evil, "console.log('ran'); module.exports = {};");
    // A directory named X.node with an index.js, and a missing X.node with X.node.js beside it:
    // require() would run either as JavaScript.
    const asDirectory = join(dir, 'dir.node');
    mkdirSync(asDirectory);
    writeFileSync(join(asDirectory, 'index.js'), "console.log('ran'); module.exports = {};");
    writeFileSync(join(asDirectory, 'package.json'), '{"main":"index.js"}');
    const missing = join(dir, 'missing.node');
    writeFileSync(`${missing}.js`, "console.log('ran'); module.exports = {};");
    // A path through a regular file (ENOTDIR from stat) too.
    for (const value of [evil, 'build/Release/gguf_mmap.node', asDirectory, missing, join(evil, 'x.node')]) {
      const r = runChild(script(value));
      expect(r.stdout, value).not.toContain('ran');
      expect(r.result, `${value}: ${r.stderr}`).toEqual({ live: 0, read: 2, mmap: 'ADDON_UNAVAILABLE naming GGUF_MMAP_ADDON' });
    }
  });
});

describe('dequantization arguments', () => {
  const q8 = encodeGguf({ tensors: [{ name: 'q', type: 'Q8_0', shape: [32, 2048], data: new Uint8Array(34 * 2048).map((_, i) => (i % 34 === 1 ? 0x3c : i * 7)) }] });

  it('types by id, unknown types and backends say what they are', () => {
    const bytes = parseGguf(q8).tensor('q')!.bytes;
    expect(dequantize(8, bytes)).toEqual(dequantize('Q8_0', bytes));
    expect(() => dequantize(999, bytes)).toThrow(/unknown ggml type id 999/);
    expect(codeOf(() => dequantize('Q8_0', bytes, undefined, { backend: 'bogus' as 'js' }))).toMatch(/^TypeError: .*backend/);
  });

  it('threads: NaN and 0 are RangeErrors; 1e9 is clamped (a few parts, not one per block)', async () => {
    const t = parseGguf(q8).tensor('q')!;
    await expect(t.dequantizeAsync(undefined, { threads: NaN })).rejects.toThrow(RangeError);
    await expect(t.dequantizeAsync(undefined, { threads: 0 })).rejects.toThrow(RangeError);
    let calls = 0;
    const big = new Uint8Array(34 * 65536).map((_, i) => (i % 34 === 1 ? 0x3c : i));
    const values = await dequantizeAsync('Q8_0', big, undefined, { threads: 1e9, onProgress: () => calls++ });
    const want = dequantize('Q8_0', big);
    expect(values.length).toBe(want.length);
    expect(values.every((v, i) => Object.is(v, want[i]))).toBe(true);
    expect(calls).toBeLessThanOrEqual(64);
  });

  it('an onProgress that throws rejects only after every part is done, and out is left untouched', async () => {
    const big = new Uint8Array(34 * 65536).map((_, i) => (i % 34 === 1 ? 0x3c : i));
    const out = new Float32Array(32 * 65536).fill(-1);
    await expect(dequantizeAsync('Q8_0', big, out, { threads: 4, onProgress: () => { throw new Error('progress failed'); } })).rejects.toThrow('progress failed');
    expect(out.every((v) => v === -1)).toBe(true);
  });

  it('SharedArrayBuffer sources and outputs work on the native path, sync and async, and through parseGguf', async () => {
    const shared = new Uint8Array(new SharedArrayBuffer(q8.length));
    shared.set(q8);
    const t = parseGguf(shared).tensor('q')!;
    const want = parseGguf(q8).tensor('q')!.dequantize();
    const out = new Float32Array(new SharedArrayBuffer(want.length * 4));
    expect(t.dequantize(out, { backend: 'native' })).toEqual(want);
    expect(await t.dequantizeAsync(undefined, { backend: 'native' })).toEqual(want);
    out.fill(0);
    expect(await t.dequantizeAsync(out, { backend: 'native' })).toEqual(want);
  });

  // In read mode tensor bytes are copies, the caller's own memory: nothing to close under them.
  it.skipIf(READ_MODE)(mmapOnly('module-level dequantize of a closed file view is CLOSED, also between TypeScript slices'), async () => {
    // F32 has no native kernel (it is a plain conversion): TypeScript slices.
    const path = join(dir, 'f32.gguf');
    writeGgufFile(path, { tensors: [{ name: 'w', type: 'F32', shape: [2_000_000], data: new Uint8Array(8_000_000).fill(0x11) }] });
    const g = openGguf(path);
    const bytes = g.tensor('w')!.bytes; // 8 MB: two 4 MB slices of TypeScript work
    const pending = dequantizeAsync('F32', bytes).then(() => 'resolved', (error: unknown) => (error as { code?: string }).code);
    g.close();
    expect(await pending).toBe('CLOSED');
    expect(codeOf(() => dequantize('F32', bytes))).toBe('CLOSED');
    expect(await dequantizeAsync('F32', bytes).then(() => 'resolved', (error: unknown) => (error as { code?: string }).code)).toBe('CLOSED');
  });
});

describe('reading exactly what ggml reads', () => {
  it('a leading U+FEFF is kept in keys, values, arrays and tensor names', () => {
    const bom = '\uFEFF';
    const g = parseGguf(
      encodeGguf({
        metadata: { [`${bom}key`]: { type: 'STRING', value: bom }, tokens: { type: 'ARRAY', arrayType: 'STRING', value: ['a', bom, `${bom}b`] } },
        tensors: [{ name: `${bom}t`, type: 'F32', shape: [1], data: f32Bytes([1]) }],
      }),
    );
    expect(g.metadata.get(`${bom}key`)).toBe(bom);
    expect(g.metadata.get('tokens')).toEqual(['a', bom, `${bom}b`]);
    expect(g.metadata.array('tokens')!.at(1)).toBe(bom);
    expect(g.tensors[0]!.name).toBe(`${bom}t`);
    expect(g.tensor(`${bom}t`)).toBeDefined();
  });

  it('ne[0] = 2^53 + 1 is not a multiple of 32, though it rounds to one', () => {
    const bytes = encodeGguf({ tensors: [{ name: 't', type: 'Q4_0', shape: [32], data: new Uint8Array(18) }] });
    const view = new DataView(bytes.buffer);
    const dimAt = 24 + 8 + 1 + 4; // tensor count 1, no keys: name length, 't', n_dims
    expect(view.getBigInt64(dimAt, true)).toBe(32n);
    view.setBigInt64(dimAt, 2n ** 53n + 1n, true);
    expect(codeOf(() => parseGguf(bytes))).toBe('BAD_SHAPE');
  });

  it('the writer refuses tensor names the reader rejects', () => {
    expect(() => encodeGguf({ tensors: [{ name: '', type: 'F32', shape: [1] }] })).toThrow(RangeError);
    expect(() => encodeGguf({ tensors: [{ name: 'x'.repeat(64), type: 'F32', shape: [1] }] })).toThrow(RangeError);
    expect(() => encodeGguf({ tensors: [{ name: 'a', type: 'F32', shape: [1] }, { name: 'a', type: 'F32', shape: [1] }] })).toThrow(RangeError);
  });
});

describe('bounded time and memory for any header', () => {
  it('counts over the limits are LIMIT_EXCEEDED at the count, before anything is read', () => {
    const bytes = encodeGguf({
      metadata: { a: { type: 'UINT8', value: 1 }, b: { type: 'UINT8', value: 2 } },
      tensors: [{ name: 'x', type: 'F32', shape: [1] }, { name: 'y', type: 'F32', shape: [1] }],
    });
    const fail = (limits: object) => {
      try {
        parseGguf(bytes, { limits });
      } catch (e) {
        return [(e as GgufError).code, (e as GgufError).offset];
      }
      return 'opened';
    };
    expect(fail({ maxTensors: 1 })).toEqual(['LIMIT_EXCEEDED', 8]);
    expect(fail({ maxKeys: 1 })).toEqual(['LIMIT_EXCEEDED', 16]);
    expect(fail({ maxTensors: 2, maxKeys: 2 })).toBe('opened');
  });

  it('200,000 tensor infos open with under 64 bytes of JS heap each, and tensors are made on demand (child process)', () => {
    const path = join(dir, 'many.gguf');
    const n = 200_000;
    writeGgufFile(path, { tensors: Array.from({ length: n }, (_, i) => ({ name: `t${i}`, type: 'I8', shape: [1] })) });
    const r = runChild(
      `
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const heap = () => { globalThis.gc(); return process.memoryUsage().heapUsed; };
      const before = heap();
      const g = openGguf(${JSON.stringify(path)});
      const perTensor = (heap() - before) / ${n};
      console.log(JSON.stringify({ perTensor, count: g.tensorCount, last: g.tensor('t${n - 1}').offset, all: g.tensors.length }));
    `,
      ['--expose-gc'],
    );
    expect(r.status, r.stderr).toBe(0);
    const { perTensor, count, last, all } = r.result as { perTensor: number; count: number; last: number; all: number };
    expect([count, all, last]).toEqual([n, n, (n - 1) * 32]);
    expect(perTensor).toBeLessThan(64);
  });

  it('an array longer than a JS array can be is LIMIT_EXCEEDED from get(); at() and values() still read it', () => {
    // A BOOL array of 134,217,726 elements: the header by hand, the zero elements left sparse.
    const length = 134_217_726n;
    const key = new TextEncoder().encode('big');
    const header = new Uint8Array(24 + 8 + key.length + 4 + 4 + 8);
    const v = new DataView(header.buffer);
    header.set([0x47, 0x47, 0x55, 0x46]);
    v.setUint32(4, 3, true);
    v.setBigUint64(8, 0n, true);
    v.setBigUint64(16, 1n, true);
    v.setBigUint64(24, BigInt(key.length), true);
    header.set(key, 32);
    v.setUint32(32 + key.length, 9, true); // ARRAY
    v.setUint32(36 + key.length, 7, true); // of BOOL
    v.setBigUint64(40 + key.length, length, true);
    const path = join(dir, 'big-array.gguf');
    const fd = openSync(path, 'w');
    writeSync(fd, header);
    closeSync(fd);
    truncateSync(path, header.length + Number(length));
    using g = openGguf(path);
    expect(codeOf(() => g.metadata.get('big'))).toBe('LIMIT_EXCEEDED');
    expect(g.metadata.array('big')!.at(-1)).toBe(false);
    const it = g.metadata.array('big')!.values();
    expect([it.next().value, it.next().value]).toEqual([false, false]);
  });
});

describe('typed accessors', () => {
  const g = parseGguf(
    encodeGguf({
      metadata: {
        n: { type: 'UINT32', value: 22 },
        big: { type: 'UINT64', value: 2n ** 60n },
        s: { type: 'STRING', value: 'llama' },
        b: { type: 'BOOL', value: true },
        tokens: { type: 'ARRAY', arrayType: 'STRING', value: ['a', 'b'] },
      },
      tensors: [
        { name: 'f', type: 'F32', shape: [2], data: f32Bytes([1.5, 2]) },
        { name: 'q', type: 'Q4_K', shape: [256], data: new Uint8Array(144).fill(0x3c) },
      ],
    }),
  );

  it('metadata getters return the type they name, and say what a key holds instead', () => {
    expect([g.metadata.getNumber('n'), g.metadata.getBigInt('big'), g.metadata.getString('s'), g.metadata.getBoolean('b')]).toEqual([22, 2n ** 60n, 'llama', true]);
    expect(g.metadata.getStrings('tokens')).toEqual(['a', 'b']);
    expect(g.metadata.getNumber('absent')).toBeUndefined();
    expect(() => g.metadata.getNumber('s')).toThrow(/'s' is STRING, not a number/);
    expect(() => g.metadata.getNumber('big')).toThrow(RangeError);
    expect(() => g.metadata.getStrings('n')).toThrow(TypeError);
  });

  it('typed views and blocks are typed by tensor type, a TypeError or UNSUPPORTED_BLOCK_TYPE otherwise', () => {
    expect([...g.tensor('f')!.f32()]).toEqual([1.5, 2]);
    expect(() => g.tensor('f')!.f16()).toThrow(/is F32, not F16/);
    expect(g.tensor('q')!.blockQ4K(0).dmin).toBe(1.05859375); // f16 0x3c3c
    expect(codeOf(() => g.tensor('q')!.blockQ6K(0))).toBe('UNSUPPORTED_BLOCK_TYPE');
  });
});

describe('tensor.sha256()', () => {
  it('hashes in slices: a tensor larger than one window hashes as its bytes do (where bytes is TENSOR_TOO_LARGE)', async () => {
    const { createHash } = await import('node:crypto');
    const data = new Uint8Array(1 << 20).map((_, i) => (i * 2654435761) >>> 24);
    const path = join(dir, 'hash.gguf');
    writeGgufFile(path, { tensors: [{ name: 'small', type: 'I8', shape: [3], data: Uint8Array.of(1, 2, 3) }, { name: 'big', type: 'I8', shape: [data.length], data }] });
    const want = createHash('sha256').update(data).digest('hex');
    using g = openGguf(path, READ_MODE ? {} : { maxWindowBytes: 65536 });
    if (!READ_MODE) expect(() => g.tensor('big')!.bytes).toThrow(expect.objectContaining({ code: 'TENSOR_TOO_LARGE' }));
    expect(g.tensor('big')!.sha256()).toBe(want);
    expect(g.tensor('small')!.sha256()).toBe(createHash('sha256').update(Uint8Array.of(1, 2, 3)).digest('hex'));
    expect(parseGguf(encodeGguf({ tensors: [{ name: 'big', type: 'I8', shape: [data.length], data }] })).tensor('big')!.sha256()).toBe(want);
  });
});
