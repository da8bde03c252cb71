// Views over SharedArrayBuffers: where the runtime can make them over the mapping
// (node_api_create_external_sharedarraybuffer), a view posted to a worker is the same memory, not
// a copy, and it outlives the main thread's close() as zeros.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openGguf, writeGgufFile } from '../../lib/index.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir();

/**
 * Where Node has the function (its release notes: 22.23, 24.22, 26.12 and later lines), told
 * from the version alone, so that the addon's own detection is what is tested.
 */
function nodeHasExternalSharedArrayBuffers(): boolean {
  if ((globalThis as { Bun?: unknown }).Bun !== undefined || (globalThis as { Deno?: unknown }).Deno !== undefined) return false;
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  return (major === 22 && minor >= 23) || (major === 24 && minor >= 22) || (major === 26 && minor >= 12) || major > 26;
}
const SHARED = nodeHasExternalSharedArrayBuffers();
const noSharing = SHARED ? undefined : `Node ${process.versions.node} has no node_api_create_external_sharedarraybuffer`;

function model(name: string, floats: number): string {
  const path = join(dir, name);
  const values = new Float32Array(floats).map((_, i) => (i % 1000) + 1);
  writeGgufFile(path, { tensors: [{ name: 'w', type: 'F32', shape: [floats], data: new Uint8Array(values.buffer) }] });
  return path;
}

describe.skipIf(READ_MODE)(mmapOnly('views over SharedArrayBuffers'), () => {
  it('are what a runtime with node_api_create_external_sharedarraybuffer gets; { sharedArrayBuffers: false } gives ArrayBuffers', () => {
    const path = model('kinds.gguf', 4096);
    using shared = openGguf(path);
    expect(shared.sharedArrayBuffers).toBe(SHARED);
    expect(shared.tensor('w')!.view().buffer instanceof SharedArrayBuffer).toBe(SHARED);
    using plain = openGguf(path, { sharedArrayBuffers: false });
    expect(plain.sharedArrayBuffers).toBe(false);
    expect(plain.tensor('w')!.view().buffer instanceof ArrayBuffer).toBe(true);
    // Whatever the kind, the same bytes; and text, hashing and Buffer work on both.
    expect(Buffer.from(shared.tensor('w')!.bytes).equals(Buffer.from(plain.tensor('w')!.bytes))).toBe(true);
    expect(new TextDecoder('utf-8', { ignoreBOM: true }).decode(shared.tensor('w')!.bytes.subarray(0, 8)).length).toBeGreaterThan(0);
    expect(shared.tensor('w')!.sha256()).toBe(plain.tensor('w')!.sha256());
  });

  it("docs/api.md's list holds for views of a SharedArrayBuffer: createHash, zlib, fs, Buffer, TextDecoder and Blob take them; a Response needs a copy", async () => {
    const { createHash } = await import('node:crypto');
    const { deflateSync, inflateSync } = await import('node:zlib');
    const { closeSync, openSync, readFileSync, writeSync } = await import('node:fs');
    const path = model('apis.gguf', 4096);
    using g = openGguf(path);
    // The file's own view where this runtime makes SharedArrayBuffers; else one of a plain
    // SharedArrayBuffer, which these APIs treat alike (the claim is about the buffer's kind).
    const own = g.tensor('w')!.bytes;
    const view = own.buffer instanceof SharedArrayBuffer ? own : new Uint8Array(new SharedArrayBuffer(own.byteLength));
    if (view !== own) view.set(own);
    const want = Buffer.from(own);
    expect(createHash('sha256').update(view).digest('hex')).toBe(createHash('sha256').update(want).digest('hex'));
    expect(inflateSync(deflateSync(view)).equals(want)).toBe(true);
    const written = join(dir, 'written.bin');
    const fd = openSync(written, 'w');
    writeSync(fd, view);
    closeSync(fd);
    expect(readFileSync(written).equals(want)).toBe(true);
    expect(Buffer.from(view.buffer, view.byteOffset, view.byteLength).equals(want)).toBe(true);
    const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
    expect(utf8.decode(view)).toBe(utf8.decode(want));
    expect(Buffer.from(await new Blob([view]).arrayBuffer()).equals(want)).toBe(true);
    // A Response refuses the view (Node 20, 22) or sends its bytes as decimal text (Node 24, 26):
    // never the bytes. What the docs say to do instead, a copy or a Blob, sends them.
    const direct = await Promise.resolve()
      .then(() => new Response(view as unknown as ConstructorParameters<typeof Response>[0]).arrayBuffer())
      .then((b) => Buffer.from(b), () => undefined);
    expect(direct?.equals(want) ?? false).toBe(false);
    expect(Buffer.from(await new Response(view.slice()).arrayBuffer()).equals(want)).toBe(true);
    expect(Buffer.from(await new Response(new Blob([view])).arrayBuffer()).equals(want)).toBe(true);
  });

  it.skipIf(noSharing !== undefined)(`a view posted to a worker is the same memory; after the main thread's close() the worker reads zeros (child process)${noSharing ? ` [skipped: ${noSharing}]` : ''}`, () => {
    const path = model('posted.gguf', 1 << 16);
    const r = runChild(`
      import { Worker } from 'node:worker_threads';
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const g = openGguf(${JSON.stringify(path)});
      const view = g.tensor('w').view();
      const worker = new Worker(\`
        import { parentPort } from 'node:worker_threads';
        let view;
        parentPort.on('message', (m) => {
          if (m.view) { view = m.view; parentPort.postMessage({ first: view[0], last: view[view.length - 1] }); }
          else parentPort.postMessage({ first: view[0], last: view[view.length - 1], written: view[1] });
        });\`, { eval: true });
      const ask = (m) => new Promise((resolve) => { worker.once('message', resolve); worker.postMessage(m); });
      const before = await ask({ view });
      view[1] = 12345; // copy-on-write: this process's page; the worker's view is the same address
      const shared = await ask({});
      g.close();
      const closed = await ask({});
      await worker.terminate();
      console.log(JSON.stringify({ before, shared, closed, here: view[0] }));
    `);
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toEqual({
      before: { first: 1, last: ((65535 % 1000) + 1) },
      shared: { first: 1, last: ((65535 % 1000) + 1), written: 12345 },
      closed: { first: 0, last: 0, written: 0 },
      here: 0,
    });
  });

  it.skipIf(noSharing !== undefined)(`a 64 MiB tensor's view given to a worker adds no copy to RSS (median of four, under 16 MiB); an ArrayBuffer view is copied (child process)${noSharing ? ` [skipped: ${noSharing}]` : ''}`, () => {
    const path = model('pages.gguf', 16 << 20);
    const r = runChild(`
      import { Worker } from 'node:worker_threads';
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const rssMiB = () => process.memoryUsage().rss / 2 ** 20;
      // Each worker sums every value of what it is given, touching every page, and keeps it.
      const source = \`
        import { parentPort } from 'node:worker_threads';
        parentPort.on('message', (view) => {
          globalThis.kept = view; // held until the worker ends, as a service's worker would
          let s = 0;
          for (let i = 0; i < view.length; i += 1024) s += view[i];
          parentPort.postMessage(s);
        });\`;
      const ask = (w, m) => new Promise((resolve) => { w.once('message', resolve); w.postMessage(m); });
      async function growth(options) {
        const g = openGguf(${JSON.stringify(path)}, options);
        const view = g.tensor('w').view();
        let s = 0;
        for (let i = 0; i < view.length; i += 1024) s += view[i]; // resident here first
        // One worker at a time, each warmed up first (its handler run on a small array), so that
        // a growth is the view's own; the median of four, in MiB.
        const growths = [];
        const workers = [];
        for (let n = 0; n < 4; n++) {
          const w = new Worker(source, { eval: true });
          workers.push(w);
          await new Promise((resolve) => w.once('online', resolve));
          await ask(w, new Float32Array(1 << 14));
          const before = rssMiB();
          const sum = await ask(w, view);
          growths.push(rssMiB() - before);
          if (sum !== s) throw new Error('a worker read other values');
        }
        await Promise.all(workers.map((w) => w.terminate()));
        g.close();
        return growths.sort((a, b) => a - b)[1];
      }
      console.log(JSON.stringify({ shared: await growth({}), copied: await growth({ sharedArrayBuffers: false }) }));
    `);
    expect(r.status, r.stderr).toBe(0);
    const { shared, copied } = r.result as { shared: number; copied: number };
    // Under 1 MiB measured; a copy would be the 64 MiB. The bound leaves room for a loaded
    // machine's GC and allocator noise, and still tells the two apart.
    expect(shared, JSON.stringify(r.result)).toBeLessThan(16); // MiB
    expect(copied).toBeGreaterThan(32); // a copy of the 64 MiB (freed again soon after, as V8 sees fit)
  });
});
