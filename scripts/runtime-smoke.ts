// The public API on a runtime where vitest does not run (Bun, Deno): run with the runtime itself,
// e.g. `bun dist/scripts/runtime-smoke.js`, `deno run -A dist/scripts/runtime-smoke.js`.
// Real fixtures against their independent JSON, views sharing the mapping, close(), a sparse file
// over 4 GiB, worker threads, open/close cycles, verify(), and dequantization bit for bit with
// ggml's vectors and all F16/BF16 patterns (NaN payloads included) through both kernels. Prints a
// line per check and a closing "N passed, N failed"; exits 1 when anything failed. A check that
// cannot apply on this runtime is reported as skipped, with its reason.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { dequantize, GgufError, liveMappings, nativeDequantInfo, openGguf, writeGgufFile, writeGgufSplit } from '../lib/index.js';
import { wasmPath, wasmUnavailableReason } from '../lib/dequant/wasm.js';

const here = dirname(fileURLToPath(import.meta.url));
const shared = process.env.GGUF_MMAP_SHARED ?? resolve(here, '../../../shared');
const libUrl = pathToFileURL(join(here, '../lib/index.js')).href;
const tmp = mkdtempSync(join(tmpdir(), 'gguf-mmap-smoke-'));
const runtime = (globalThis as { Bun?: unknown }).Bun ? 'bun' : (globalThis as { Deno?: unknown }).Deno ? 'deno' : `node ${process.version}`;
const platform = `${process.platform}-${process.arch}`;
let passed = 0;
let failed = 0;
let skipped = 0;

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return 'no error';
  } catch (e) {
    return e instanceof GgufError ? e.code : String(e);
  }
};

async function check(name: string, fn: () => void | Promise<void>, skipReason?: string): Promise<void> {
  if (skipReason !== undefined) {
    skipped++;
    console.log(`skip  ${name}: ${skipReason}`);
    return;
  }
  try {
    await fn();
    passed++;
    console.log(`ok    ${name}`);
  } catch (error) {
    failed++;
    console.log(`FAIL  ${name}\n      ${(error as Error).stack?.split('\n').slice(0, 4).join('\n      ')}`);
  }
}

const noShared = existsSync(shared) ? undefined : `no ../shared beside the repository (${shared})`;

await check('real fixtures match their independent JSON (metadata types, tensors, tensor sha256)', () => {
  const dir = join(shared, 'fixtures/real');
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.gguf'))) {
    const expected = JSON.parse(readFileSync(join(dir, 'expected', name.replace(/\.gguf$/, '.json')), 'utf8')) as {
      version: number;
      metadata: Record<string, { type: string }>;
      tensors: { name: string; type: string; shape: number[]; sha256: string }[];
    };
    const g = openGguf(join(dir, name));
    try {
      assert(g.version === expected.version, `${name}: version`);
      assert(JSON.stringify([...g.metadata.keys()]) === JSON.stringify(Object.keys(expected.metadata)), `${name}: keys`);
      for (const [key, entry] of Object.entries(expected.metadata)) assert(g.metadata.type(key) === entry.type, `${name}: type of ${key}`);
      assert(g.tensors.length === expected.tensors.length, `${name}: tensor count`);
      for (const t of expected.tensors) {
        const got = g.tensor(t.name);
        assert(got !== undefined && got.type === t.type && JSON.stringify(got.shape) === JSON.stringify(t.shape), `${name}: ${t.name}`);
        assert(sha256(got.bytes) === t.sha256, `${name}: bytes of ${t.name}`);
      }
    } finally {
      g.close();
    }
  }
}, noShared);

const small = join(tmp, 'small.gguf');
writeGgufFile(small, {
  metadata: { 'general.name': { type: 'STRING', value: '\uFEFFsmoke' } },
  tensors: [
    { name: 'a', type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) },
    { name: 'b', type: 'F32', shape: [1024], data: new Uint8Array(new Float32Array(1024).fill(7).buffer) },
  ],
});

await check('paths: a non-ASCII folder, a path over 260 characters, a file: URL, a split set found from any part', () => {
  const deep = join(tmp, 'ünïcødé-模型', 'x'.repeat(120), 'y'.repeat(120));
  mkdirSync(deep, { recursive: true });
  const path = join(deep, 'model.gguf');
  assert(path.length > 260, `path of ${path.length} characters`);
  writeFileSync(path, readFileSync(small));
  for (const name of [path, pathToFileURL(path)]) {
    const g = openGguf(name);
    assert(g.mode === 'mmap' && g.tensor('b')!.view()[0] === 7, `${String(name)}: mode ${g.mode}`);
    g.close();
  }
  const parts = writeGgufSplit(join(deep, 'split'), {
    metadata: { 'general.name': { type: 'STRING', value: 'parts' } },
    tensors: ['p', 'q', 'r'].map((name, i) => ({ name, type: 'F32', shape: [4], data: new Uint8Array(new Float32Array(4).fill(i).buffer) })),
  }, { maxTensors: 1 });
  const set = openGguf(parts[1]!);
  assert(set.tensors.length === 3 && set.tensor('r')!.view()[0] === 2, `${set.tensors.length} tensors`);
  assert(set.parts.map((p) => p.path).join('|') === parts.join('|'), `parts ${set.parts.map((p) => p.path).join(', ')}`);
  set.close();
});

await check('views share the mapping and equal the file; strings keep a leading BOM', () => {
  const g = openGguf(small);
  const file = readFileSync(small);
  assert(g.mode === 'mmap', `mode ${g.mode}`);
  assert(g.tensor('a')!.bytes.buffer === g.tensor('b')!.bytes.buffer, 'one ArrayBuffer for both tensors');
  const b = g.tensor('b')!;
  assert(Buffer.from(b.bytes).equals(file.subarray(b.fileOffset, b.fileOffset + b.nbytes)), 'bytes equal the file');
  assert(g.metadata.getString('general.name') === '\uFEFFsmoke', 'BOM kept');
  g.close();
});

await check('close(): views read zeros, access throws CLOSED, a write into a view does not fault', () => {
  const g = openGguf(small);
  const at = g.tensor('a')!.fileOffset;
  const view = g.tensor('a')!.f32();
  view[0] = 9; // copy-on-write
  assert(view[0] === 9, 'write visible in this process');
  g.close();
  assert(view.length === 4 && view[1] === 0, 'zeros after close');
  assert(codeOf(() => g.tensor('a')!.bytes) === 'CLOSED', 'CLOSED');
  assert(readFileSync(small).readFloatLE(at) === 1, 'file unchanged');
});

await check('a sparse file over 4 GiB: a tensor past the 4 GiB mark', () => {
  const big = join(tmp, 'big.gguf');
  writeGgufFile(big, {
    tensors: [
      { name: 'pad', type: 'I8', shape: [4.5 * 2 ** 30] },
      { name: 'tail', type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([5, 6, 7, 8]).buffer) },
    ],
  });
  const g = openGguf(big);
  const tail = g.tensor('tail')!;
  assert(tail.fileOffset > 4 * 2 ** 30, 'past 4 GiB');
  assert(JSON.stringify([...tail.f32()]) === '[5,6,7,8]', 'values');
  g.close();
  rmSync(big);
});

await check('worker threads open the same file at once', async () => {
  const script = join(tmp, 'worker.mjs');
  writeFileSync(script, `import { parentPort } from 'node:worker_threads'; import { openGguf } from ${JSON.stringify(libUrl)};
    const g = openGguf(${JSON.stringify(small)}); parentPort.postMessage(g.tensor('b').f32()[1023]); g.close();`);
  // Each worker closes its file and ends by itself: waited for, so no file is left for the next check.
  const values = await Promise.all(
    [0, 1, 2, 3].map(
      () =>
        new Promise<number>((done, fail) => {
          const w = new Worker(script);
          let value = NaN;
          w.once('message', (v: number) => (value = v));
          w.once('error', fail);
          w.once('exit', () => done(value));
        }),
    ),
  );
  assert(values.every((v) => v === 7), `values ${values.join(',')}`);
});

// Where views are SharedArrayBuffers (Node 22.23+, 24.22+, 26.12+, Bun), one posted to a worker is
// the same memory, and reads zeros there once the file is closed here.
const sharing = (() => {
  const g = openGguf(small);
  const shared = g.sharedArrayBuffers;
  g.close();
  return shared;
})();
await check('a view posted to a worker is the same memory; after close() here it reads zeros there', async () => {
  const script = join(tmp, 'holder.mjs');
  writeFileSync(script, `import { parentPort } from 'node:worker_threads'; let view;
    parentPort.on('message', (m) => { if (m !== 'read') view = m; parentPort.postMessage([view[0], view[1023]]); });`);
  const g = openGguf(small);
  const view = g.tensor('b')!.f32();
  const w = new Worker(script);
  const ask = (m: unknown) => new Promise<number[]>((done) => { w.once('message', done); w.postMessage(m); });
  const first = await ask(view);
  view[1023] = 9; // this process's copy-on-write page, at the address the worker reads too
  const seen = await ask('read');
  g.close();
  const closed = await ask('read');
  await w.terminate();
  assert(first.join() === '7,7' && seen.join() === '7,9' && closed.join() === '0,0', `first ${first}, after a write ${seen}, after close ${closed}`);
}, sharing ? undefined : 'views are ArrayBuffers here (no node_api_create_external_sharedarraybuffer): a posted view is a copy');

await check('workers that exit without close() let go of their files', async () => {
  const script = join(tmp, 'leaver.mjs');
  writeFileSync(script, `import { parentPort } from 'node:worker_threads'; import { openGguf } from ${JSON.stringify(libUrl)};
    const g = openGguf(${JSON.stringify(small)}); parentPort.postMessage(g.tensor('b').f32()[0]);`);
  const before = liveMappings();
  for (let i = 0; i < 8; i++) {
    await new Promise<void>((done, fail) => {
      const w = new Worker(script);
      w.once('message', () => void w.terminate().then(() => done()));
      w.once('error', fail);
    });
  }
  await new Promise((r) => setTimeout(r, 200));
  assert(liveMappings() === before, `liveMappings ${liveMappings()} after, ${before} before`);
});

await check('workers that look rows up, leave files open or close them with work pending, and exit by themselves let go of every file', async () => {
  const file = join(tmp, 'rows.gguf');
  const blocks = new Uint8Array(34 * 2 * 64).map((_, i) => (i % 34 === 1 ? 0x3c : (i * 37) & 0x7f));
  writeGgufFile(file, { tensors: [{ name: 'w', type: 'Q8_0', shape: [64, 64], data: blocks }] });
  const script = join(tmp, 'busy.mjs');
  // Row readers and Mapping objects still alive when the worker ends (Deno and Bun skip some of
  // their finalizers then): the environment's teardown lets go of them.
  writeFileSync(script, `import { parentPort } from 'node:worker_threads'; import { openGguf } from ${JSON.stringify(libUrl)};
    const kept = []; const pending = [];
    for (let i = 0; i < 300; i++) {
      const g = openGguf(${JSON.stringify(file)}); const w = g.tensor('w');
      w.dequantizeRows(i % 64, 1);
      if (i % 7 === 0) { pending.push(w.dequantizeAsync().catch(() => {})); g.close(); }
      else if (i % 3 === 0) kept.push(w);
      else if (i % 2 === 0) g.close();
    }
    await Promise.all(pending);
    parentPort.postMessage(kept.length);`);
  const before = liveMappings();
  await Promise.all(
    Array.from({ length: 4 }, () => new Promise<void>((done, fail) => {
      const w = new Worker(script);
      w.once('error', fail);
      w.once('exit', () => done());
    })),
  );
  await new Promise((r) => setTimeout(r, 300));
  assert(liveMappings() === before, `liveMappings ${liveMappings()} after the workers exited, ${before} before`);
});

await check('2,000 open/close cycles: every file let go', () => {
  const before = liveMappings();
  for (let i = 0; i < 2000; i++) {
    const g = openGguf(small);
    assert(g.tensor('b')!.f32()[0] === 7, 'value');
    g.close();
  }
  assert(liveMappings() === before, `liveMappings ${liveMappings()} after, ${before} before`);
});

// Windows refuses to shrink a mapped file (ERROR_USER_MAPPED_FILE): there the file changes in
// place instead, which other processes may do to it as on POSIX.
const windows = process.platform === 'win32';
await check(`verify(): passes unchanged, FILE_CHANGED after the file is ${windows ? 'rewritten in place (truncation refused while mapped)' : 'truncated'}`, () => {
  const path = join(tmp, 'verify.gguf');
  writeFileSync(path, readFileSync(small));
  const g = openGguf(path);
  try {
    g.verify({ sha256: sha256(readFileSync(path)) });
    if (windows) {
      assert(codeOf(() => truncateSync(path, 100)) !== 'no error', 'a mapped file was truncated');
      const fd = openSync(path, 'r+');
      writeSync(fd, new Uint8Array([0x55]), 0, 1, statSync(path).size - 1);
      closeSync(fd);
    } else {
      truncateSync(path, 100);
    }
    assert(codeOf(() => g.verify()) === 'FILE_CHANGED', 'FILE_CHANGED');
  } finally {
    g.close();
  }
});

// The WebAssembly kernels too, where the module is built (the package ships it): built but not
// loading on this runtime is a failure, not a check left out.
const wasmBuilt = existsSync(wasmPath());
const backends = ['js', 'auto', ...(wasmBuilt ? (['wasm'] as const) : [])] as const;

await check('the WebAssembly kernels load and cover the 28 types', () => {
  const { wasm } = nativeDequantInfo();
  assert(wasm.length === 28, `${wasm.length} types: ${wasmUnavailableReason() ?? ''}`);
}, wasmBuilt ? undefined : `${wasmPath()} not built (npm run build:wasm)`);

// Scales that are NaN (several payloads), infinite, zero or subnormal, where arithmetic decides
// the bits: the addon's and the WebAssembly kernels agree (TypeScript under Bun loses NaN
// payloads; see the README).
await check('NaN, infinite and subnormal scales: the native and WebAssembly kernels give the same bits', () => {
  const specials = [0x7e01, 0xfe02, 0x7c01, 0xfd55, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x0001, 0x83ff, 0x7bff];
  const scales: Record<string, [number, number[]]> = { Q4_0: [18, [0]], Q5_1: [24, [0, 2]], Q8_0: [34, [0]], Q4_K: [144, [0, 2]], Q6_K: [210, [208]], IQ2_XXS: [66, [0]], IQ4_XS: [136, [0]] };
  const bad: string[] = [];
  for (const [name, [size, at]] of Object.entries(scales)) {
    const blocks = new Uint8Array(size * 400);
    for (let i = 0; i < blocks.length; i++) blocks[i] = (i * 2654435761) >>> 24;
    const view = new DataView(blocks.buffer);
    for (let b = 0; b < 400; b++) at.forEach((o, k) => view.setUint16(b * size + o, specials[(b + 3 * k) % specials.length]!, true));
    const native = new Uint32Array(dequantize(name, blocks, undefined, { backend: 'native' }).buffer);
    const wasm = new Uint32Array(dequantize(name, blocks, undefined, { backend: 'wasm' }).buffer);
    const first = native.findIndex((bits, i) => bits !== wasm[i]);
    if (first >= 0) bad.push(`${name}@${first}: wasm ${wasm[first]!.toString(16)} != native ${native[first]!.toString(16)}`);
  }
  assert(bad.length === 0, bad.join('; '));
}, !wasmBuilt ? `${wasmPath()} not built` : nativeDequantInfo().types.length === 0 ? 'no addon' : undefined);

await check(`dequantization bit for bit with ggml's vectors, NaN payloads included (${backends.join(', ')})`, () => {
  const dir = join(shared, 'reference/dequant');
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { types: { name: string; files: { blocks: { file: string }; f32: { file: string } } }[] };
  const bad: string[] = [];
  for (const entry of manifest.types) {
    const blocks = new Uint8Array(readFileSync(join(dir, entry.files.blocks.file)));
    const want = new Uint32Array(new Uint8Array(readFileSync(join(dir, entry.files.f32.file))).buffer);
    for (const backend of backends) {
      // Twice: a JIT that canonicalises NaNs shows after warm-up, not on the first call.
      for (let round = 0; round < 2; round++) {
        const got = new Uint32Array(dequantize(entry.name.toUpperCase(), blocks, undefined, { backend }).buffer);
        const first = want.findIndex((bits, i) => bits !== got[i]);
        if (first >= 0) bad.push(`${entry.name}/${backend}@${first}: ${got[first]!.toString(16)} != ${want[first]!.toString(16)}`);
      }
    }
  }
  assert(bad.length === 0, [...new Set(bad)].slice(0, 6).join('; '));
}, noShared);

await check(`all 65,536 F16 and BF16 patterns convert as ggml's (NaN payloads and quiet bits too; ${backends.join(', ')})`, () => {
  const patterns = new Uint8Array(Uint16Array.from({ length: 65536 }, (_, i) => i).buffer);
  const bad: string[] = [];
  for (const [name, file] of [['F16', 'all-f16.f32.bin'], ['BF16', 'all-bf16.f32.bin']] as const) {
    const want = new Uint32Array(new Uint8Array(readFileSync(join(shared, 'reference/fp16', file))).buffer);
    for (const backend of backends) {
      const got = new Uint32Array(dequantize(name, patterns, undefined, { backend }).buffer);
      const first = want.findIndex((bits, i) => bits !== got[i]);
      if (first >= 0) bad.push(`${name}/${backend}@${first.toString(16)}: ${got[first]!.toString(16)} != ${want[first]!.toString(16)}`);
    }
  }
  assert(bad.length === 0, bad.join('; '));
}, noShared);

await check('row lookups (gatherRows, dequantizeRows) from the mapping equal the TypeScript kernel, and a large dequantize() without out', () => {
  const rows = 64;
  const bytes = new Uint8Array(rows * 2 * 144);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24;
  const path = join(tmp, 'rows.gguf');
  writeGgufFile(path, { tensors: [{ name: 'embd', type: 'Q4_K', shape: [512, rows], data: bytes }] });
  const g = openGguf(path);
  try {
    const embd = g.tensor('embd')!;
    const ids = [63, 0, 17, 17, 40];
    const got = new Uint32Array(embd.gatherRows(Int32Array.from(ids)).buffer);
    const want = new Uint32Array(embd.gatherRows(ids, undefined, { backend: 'js' }).buffer);
    assert(got.length === want.length && got.every((b, i) => b === want[i]), 'gatherRows differs from the TypeScript kernel');
    const row = new Uint32Array(embd.dequantizeRows(17, 1).buffer);
    assert(row.every((b, i) => b === want[2 * 512 + i]), 'dequantizeRows differs');
    let threw = false;
    try {
      embd.gatherRows([0, rows]);
    } catch (error) {
      threw = error instanceof GgufError && error.code === 'ROW_OUT_OF_RANGE';
    }
    assert(threw, 'an id past the rows is not ROW_OUT_OF_RANGE');
  } finally {
    g.close();
  }
  const big = new Uint8Array(20_000 * 144).map((_, i) => (i * 40503) >>> 8);
  const fresh = new Uint32Array(dequantize('Q4_K', big).buffer);
  const into = new Uint32Array(dequantize('Q4_K', big, new Float32Array(20_000 * 256)).buffer);
  assert(fresh.every((b, i) => b === into[i]), 'dequantize() without out differs');
});

rmSync(tmp, { recursive: true, force: true });
console.log(`runtime ${runtime} (${platform}): ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed === 0 ? 0 : 1);
