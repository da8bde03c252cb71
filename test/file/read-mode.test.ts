// Where files cannot be mapped (no addon for the platform, not built, or a runtime that refuses
// ArrayBuffers over external memory, as Electron does) the library reads them instead.
import { truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openGguf, writeGgufFile } from '../../lib/index.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir();
const file = join(dir, 'model.gguf');
const q8 = new Uint8Array(34 * 4096).map((_, i) => (i % 34 === 1 ? 0x3c : (i * 13) & 255));
q8.set([0x01, 0x7c], 34 * 7); // block 7's scale: an f16 NaN with a payload
writeGgufFile(file, {
  metadata: { tokens: { type: 'ARRAY', arrayType: 'STRING', value: ['a', '\uFEFF', 'c'] } },
  tensors: [
    { name: 'q', type: 'Q8_0', shape: [32, 4096], data: q8 },
    { name: 'f', type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) },
  ],
});
const NATIVE_DIST = JSON.stringify(pathToFileURL(join(import.meta.dirname, '../../dist/lib/native.js')).href);

describe('read mode', () => {
  it('gives the same metadata, bytes and values as the mapping, as copies', async () => {
    using mapped = openGguf(file);
    using read = openGguf(file, { mode: 'read' });
    expect([read.mode, read.zeroCopy]).toEqual(['read', false]);
    expect(read.metadata.get('tokens')).toEqual(['a', '\uFEFF', 'c']);
    expect(Buffer.from(read.tensor('q')!.bytes).equals(Buffer.from(mapped.tensor('q')!.bytes))).toBe(true);
    expect(read.tensor('f')!.zeroCopyView).toBe(false);
    const want = new Uint32Array(mapped.tensor('q')!.dequantize().buffer);
    const got = new Uint32Array((await read.tensor('q')!.dequantizeAsync()).buffer);
    expect(got.every((bits, i) => bits === want[i])).toBe(true);
    expect(new Uint32Array(read.tensor('q')!.dequantizeRows(7, 1).buffer)[0]).toBe(want[7 * 32]);
    read.verify();
    read.close();
    expect(() => read.tensor('q')!.bytes).toThrow(expect.objectContaining({ code: 'CLOSED' }));
  });

  it('a file truncated under a read-mode file: FILE_CHANGED from the next read and from verify()', () => {
    const path = join(dir, 'truncated.gguf');
    writeGgufFile(path, { tensors: [{ name: 't', type: 'F32', shape: [65536], data: new Uint8Array(262144).fill(1) }] });
    using g = openGguf(path, { mode: 'read' });
    truncateSync(path, 4096);
    expect(() => g.verify()).toThrow(expect.objectContaining({ code: 'FILE_CHANGED', offset: 4096 }));
    expect(() => g.tensor('t')!.bytes).toThrow(expect.objectContaining({ code: 'FILE_CHANGED' }));
  });

  it('without the addon: files are read, parseGguf works, the WebAssembly kernels decode (TypeScript without them), mmap asked for is ADDON_UNAVAILABLE (child process)', () => {
    const r = runChild(`
      process.env.GGUF_MMAP_ADDON = 'off';
      const { openGguf, parseGguf, dequantize, dequantKernelFor, nativeDequantInfo, liveMappings, GgufError } = await import(${JSON.stringify(DIST_INDEX)});
      const { readFileSync } = await import('node:fs');
      const code = (f) => { try { f(); return 'no error'; } catch (e) { return e instanceof GgufError ? e.code + ': ' + e.message : String(e); } };
      const g = openGguf(${JSON.stringify(file)});
      const parsed = parseGguf(readFileSync(${JSON.stringify(file)}));
      console.log(JSON.stringify({
        mode: g.mode,
        tokens: parsed.metadata.get('tokens'),
        value: dequantize('Q8_0', g.tensor('q').bytes)[33],
        same: dequantize('Q8_0', parsed.tensor('q').bytes)[33],
        js: dequantize('Q8_0', g.tensor('q').bytes, undefined, { backend: 'js' })[33],
        kernel: dequantKernelFor('Q8_0'),
        info: nativeDequantInfo(),
        live: liveMappings(),
        mmap: code(() => openGguf(${JSON.stringify(file)}, { mode: 'mmap' })),
        native: code(() => dequantize('Q8_0', g.tensor('q').bytes, undefined, { backend: 'native' })),
      }));
    `);
    expect(r.status, r.stderr).toBe(0);
    const out = r.result as Record<string, unknown>;
    expect(out.mode).toBe('read');
    expect(out.tokens).toEqual(['a', '\uFEFF', 'c']);
    expect(out.value).toBe(out.same);
    expect(out.value).toBe(out.js);
    expect(out.kernel).toBe('wasm');
    expect(out.info).toEqual({ isa: 'none', isas: [], types: [], kernels: {}, wasm: expect.arrayContaining(['Q8_0', 'Q4_K', 'IQ2_XXS', 'F16']) });
    expect(out.live).toBe(0);
    expect(out.mmap).toMatch(/^ADDON_UNAVAILABLE: .*GGUF_MMAP_ADDON is off.*unset GGUF_MMAP_ADDON.*mode: 'read'/);
    expect(out.native).toMatch(/^NO_NATIVE_KERNEL: .*not loaded/);
  });

  it('without the addon, every dequantizing path takes the WebAssembly kernels and gives the TypeScript bits (child process)', () => {
    const r = runChild(`
      process.env.GGUF_MMAP_ADDON = 'off';
      const { openGguf, dequantKernelFor } = await import(${JSON.stringify(DIST_INDEX)});
      const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]) || (Number.isNaN(v) && Number.isNaN(b[i])));
      const bits = (a) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
      const g = openGguf(${JSON.stringify(file)});
      const t = g.tensor('q');
      const js = t.dequantize(undefined, { backend: 'js' });
      const ids = [7, 4095, 0, 7, 1234];
      const rowsJs = t.gatherRows(ids, undefined, { backend: 'js' });
      const progress = [];
      const results = {
        kernel: dequantKernelFor('Q8_0'),
        whole: bits(t.dequantize()).join() === bits(js).join(),
        async: bits(await t.dequantizeAsync(undefined, { onProgress: (done) => progress.push(done) })).join() === bits(js).join(),
        rows: bits(t.dequantizeRows(7, 3)).join() === bits(js.subarray(7 * 32, 10 * 32)).join(),
        gather: bits(t.gatherRows(ids)).join() === bits(rowsJs).join(),
        gatherAsync: bits(await t.gatherRowsAsync(ids)).join() === bits(rowsJs).join(),
        nanKept: bits(t.dequantize())[7 * 32].toString(16), // block 7's NaN scale (payload 1) in its products
        progressed: progress.length > 0,
      };
      g.close();
      console.log(JSON.stringify(results));
    `);
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual({ kernel: 'wasm', whole: true, async: true, rows: true, gather: true, gatherAsync: true, nanKept: '7fc02000', progressed: true });
  });

  it('a runtime that refuses external ArrayBuffers (Electron): read mode by default, native kernels still used (child process)', () => {
    const r = runChild(`
      const { optionalAddon } = await import(${NATIVE_DIST});
      optionalAddon().refuseExternalBuffers(true);
      const { openGguf, GgufError } = await import(${JSON.stringify(DIST_INDEX)});
      const g = openGguf(${JSON.stringify(file)});
      let mmap;
      try { openGguf(${JSON.stringify(file)}, { mode: 'mmap' }); mmap = 'opened'; } catch (e) { mmap = e instanceof GgufError ? e.code : String(e); }
      const t = g.tensor('q');
      const viaJob = await t.dequantizeAsync(undefined, { backend: 'native' }); // the job's output is copied, not handed over
      const direct = t.dequantize(undefined, { backend: 'js' });
      console.log(JSON.stringify({ mode: g.mode, mmap, same: viaJob.every((v, i) => Object.is(v, direct[i])), n: viaJob.length }));
    `);
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual({ mode: 'read', mmap: 'ADDON_UNAVAILABLE', same: true, n: 32 * 4096 });
  });
});

describe('read mode bounds', () => {
  it('a file never closed gives its descriptor back once it is garbage (child process)', () => {
    const r = runChild(
      `
      import { readdirSync } from 'node:fs';
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const fds = () => readdirSync('/proc/self/fd').length;
      const before = fds();
      for (let i = 0; i < 300; i++) openGguf(${JSON.stringify(file)}, { mode: 'read' }).tensor('f').f32();
      const open = fds() - before;
      // Finalizers run on a later task; a loaded machine (wine, CI) needs more turns than an idle one.
      // Polled up to 20 s (it took over 2 s under wine once): a condition, not a duration.
      for (let i = 0; i < 1000 && fds() - before >= 10; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); }
      console.log(JSON.stringify({ open, left: fds() - before }));
    `,
      ['--expose-gc'],
    );
    expect(r.status, r.stderr).toBe(0);
    const { open, left } = r.result as { open: number; left: number };
    expect(open).toBeGreaterThanOrEqual(250);
    expect(left).toBeLessThan(10);
  });

  it('a header longer than read mode reads (256 MiB) is HEADER_TOO_LARGE, not the whole file in memory', () => {
    // One string key of 300 MiB, the rest a hole: cheap on disk, a lot to read.
    const path = join(dir, 'long-header.gguf');
    const length = 300 << 20;
    const head = new Uint8Array(24 + 8 + 1 + 4 + 8);
    const v = new DataView(head.buffer);
    head.set([0x47, 0x47, 0x55, 0x46]);
    v.setUint32(4, 3, true);
    v.setBigUint64(16, 1n, true); // one key, no tensors
    v.setBigUint64(24, 1n, true);
    head[32] = 0x6b; // key "k"
    v.setUint32(33, 8, true); // STRING
    v.setBigUint64(37, BigInt(length), true);
    writeFileSync(path, head);
    truncateSync(path, head.length + length);
    expect(() => openGguf(path, { mode: 'read' })).toThrow(expect.objectContaining({ code: 'HEADER_TOO_LARGE' }));
  });
});
