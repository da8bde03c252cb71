// Remote reads against the Hub imitation on 127.0.0.1: credentials in URLs, a split set whose
// part fails, an empty file, and timeoutMs as idleness (issue 27, items 6, 8, 14, 16).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeGguf, GgufError, openGguf, openGgufRemote, parseGguf, pullModel, writeGgufSplit, type GgufWriteSpec } from '../../lib/index.js';
import type { HubServer } from '../../scripts/hub-imitation.js';
import { useHubImitation } from '../helpers/hub.js';
import { tempDir } from '../helpers/tmp.js';

const imitation = useHubImitation();
let hub: HubServer;
beforeAll(() => {
  hub = imitation.hub;
});
const opts = { backoffMs: 1 };

function spec(tensors: number, bytesEach: number): GgufWriteSpec {
  return {
    metadata: [['general.architecture', { type: 'STRING', value: 'llama' }]],
    tensors: Array.from({ length: tensors }, (_, i) => ({ name: `t${i}`, type: 'I8', shape: [bytesEach], data: new Uint8Array(bytesEach).map((_, j) => (i * 13 + j * 5) & 0xff) })),
  };
}

function serve(repoPath: string, bytes: Uint8Array): string {
  hub.files.set(repoPath, { bytes });
  return `hf:${repoPath}`;
}

/** Polls `condition` every 20 ms up to `limitMs` (generous: a loaded machine is slow, never wrong). */
async function eventually(condition: () => boolean, limitMs = 10_000): Promise<boolean> {
  for (const end = Date.now() + limitMs; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) if (condition()) return true;
  return condition();
}

/** Whether two byte arrays are equal (vitest's toEqual walks them element by element: slow). */
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** A fetch that counts its calls. */
function counting(): { fetch: typeof globalThis.fetch; calls: () => number } {
  let calls = 0;
  return {
    fetch: (input, init) => {
      calls++;
      return globalThis.fetch(input, init);
    },
    calls: () => calls,
  };
}

describe('credentials in a URL (item 6)', () => {
  it('openGgufRemote of http://user:pw@host/...: one clear HTTP_ERROR, no request, no retry, the password nowhere', async () => {
    serve('org/cred/model.gguf', encodeGguf(spec(1, 64)));
    const url = `${hub.endpoint.replace('http://', 'http://alice:s3cret-pw@')}/org/cred/resolve/main/model.gguf`;
    const counter = counting();
    const error = (await openGgufRemote(url, { ...opts, attempts: 4, fetch: counter.fetch }).then(() => new Error('opened'), (e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(GgufError);
    expect(error).toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('user name or password') });
    expect(error.message).not.toMatch(/s3cret|alice/);
    expect(counter.calls()).toBe(0);
    expect(hub.log).toEqual([]);
  });

  it('HF_ENDPOINT with credentials: pullModel and openGgufRemote fail at once without showing them', async () => {
    serve('org/cred2/m-Q4_K_M.gguf', encodeGguf(spec(1, 64)));
    const endpoint = hub.endpoint;
    process.env.HF_ENDPOINT = endpoint.replace('http://', 'http://bob:hunter2@');
    try {
      for (const attempt of [
        (f: typeof fetch) => pullModel('hf:org/cred2/m-Q4_K_M.gguf', { cacheDir: tempDir(), backoffMs: 1, attempts: 4, fetch: f }),
        (f: typeof fetch) => pullModel('hf:org/cred2:Q4_K_M', { cacheDir: tempDir(), backoffMs: 1, attempts: 4, fetch: f }),
        (f: typeof fetch) => openGgufRemote('hf:org/cred2/m-Q4_K_M.gguf', { ...opts, attempts: 4, fetch: f }),
      ]) {
        const counter = counting();
        const error = (await attempt(counter.fetch).then(() => new Error('succeeded'), (e: unknown) => e)) as Error;
        expect(error).toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('user name or password') });
        expect(error.message).not.toMatch(/hunter2|bob/);
        expect(counter.calls()).toBe(0);
      }
    } finally {
      process.env.HF_ENDPOINT = endpoint;
    }
  });
});

describe('a split set by URL whose part fails (item 8)', () => {
  it('SPLIT_PART_MISSING ends the requests for the other parts at once', async () => {
    const paths = writeGgufSplit(join(tempDir(), 's'), spec(5, 64), { maxTensors: 1 });
    expect(paths).toHaveLength(5);
    for (const p of paths) serve(`org/abort/${p.split('/').pop()!}`, new Uint8Array(readFileSync(p)));
    hub.files.delete('org/abort/s-00002-of-00005.gguf');
    // Parts 3-5: the Hub never answers (until the client lets go); part 1 and the 404 of part 2 at once.
    hub.faultFor = (server, path) => (server === 'hub' && /-0000[345]-of-/.test(path) ? 'stall' : undefined);
    await expect(openGgufRemote('hf:org/abort/s-00001-of-00005.gguf', opts)).rejects.toMatchObject({ code: 'SPLIT_PART_MISSING' });
    const stalled = () => hub.log.filter((r) => r.status === 0);
    // Every stalled request was sent (the workers start together) and is let go, well before the 30 s timeoutMs.
    expect(await eventually(() => stalled().length === 3 && stalled().every((r) => r.abandoned))).toBe(true);
  });
});

describe('a split set by hf: URI at one commit (as item 5 for pulls)', () => {
  it("the branch moving after the first part is read: the other parts are read at the first part's commit", async () => {
    const serveSet = (seed: number) => {
      const paths = writeGgufSplit(join(tempDir(), 'c'), { ...spec(2, 64), tensors: spec(2, 64).tensors!.map((t) => ({ ...t, data: t.data!.map((b) => (b + seed) & 0xff) })) }, { maxTensors: 1 });
      paths.forEach((p, i) => serve(`org/moving/c-0000${i + 1}-of-00002.gguf`, new Uint8Array(readFileSync(p))));
    };
    serveSet(0);
    // The Hub's first answer moves the branch: the parts asked for later are of the new commit at main.
    let moved = false;
    const moving: typeof fetch = async (input, init) => {
      const answer = await fetch(input, init);
      if (!moved && String(input).startsWith(hub.endpoint)) {
        moved = true;
        hub.moveBranch('ab'.repeat(20));
        serveSet(1);
      }
      return answer;
    };
    const g = await openGgufRemote('hf:org/moving/c-00001-of-00002.gguf', { ...opts, fetch: moving });
    expect(moved).toBe(true);
    // Part 2's tensor as the first commit has it (the second adds 1 to every byte).
    expect(same(await g.tensor('t1')!.fetchBytes(), spec(2, 64).tensors![1]!.data!)).toBe(true);
  });
});

describe('an empty file over HTTP (item 16)', () => {
  it('is TRUNCATED at byte 0, as the same file opened locally', async () => {
    const uri = serve('org/empty/empty.gguf', new Uint8Array(0));
    const local = join(tempDir(), 'empty.gguf');
    writeFileSync(local, new Uint8Array(0));
    let localError: unknown;
    try {
      openGguf(local).close();
    } catch (error) {
      localError = error;
    }
    expect(localError).toMatchObject({ code: 'TRUNCATED', offset: 0 });
    await expect(openGgufRemote(uri, opts)).rejects.toMatchObject({ code: 'TRUNCATED', offset: 0 });
  });
});

describe('timeoutMs is idleness, and a range resumes (item 14)', () => {
  it('a slow but steady body longer than timeoutMs arrives; a server that sends nothing is given up after timeoutMs', async () => {
    const bytes = encodeGguf(spec(2, 48 << 10));
    const uri = serve('org/slow/model.gguf', bytes);
    const g = await openGgufRemote(uri, { ...opts, timeoutMs: 2000, attempts: 1 });
    // 48 KiB at a kibibyte every 50 ms: 2.4 s at the least, never 2 s without a byte.
    hub.trickleMs = 50;
    hub.faults.cdn.push('trickle');
    serve('org/silent/model.gguf', encodeGguf(spec(1, 64)));
    hub.faultFor = (server, path) => (server === 'hub' && path.includes('/org/silent/') ? 'stall' : undefined);
    hub.log.length = 0;
    const [slow, silent] = await Promise.allSettled([
      g.tensor('t1')!.fetchBytes(),
      openGgufRemote('hf:org/silent/model.gguf', { ...opts, timeoutMs: 2000, attempts: 1 }),
    ]);
    expect(slow.status === 'fulfilled' && same(slow.value, parseGguf(bytes).tensor('t1')!.bytes)).toBe(true);
    // One request: not cut off and tried again.
    expect(hub.log.filter((r) => r.server === 'cdn')).toHaveLength(1);
    expect(silent.status === 'rejected' && silent.reason).toMatchObject({ code: 'NETWORK_ERROR', message: expect.stringContaining('no byte within 2000 ms') });
  });

  it('a connection broken mid-range is resumed from the bytes received, not from the start', async () => {
    const bytes = encodeGguf(spec(2, 256 << 10));
    const g = await openGgufRemote(serve('org/resume/model.gguf', bytes), opts);
    const t1 = g.tensor('t1')!;
    hub.log.length = 0;
    hub.faults.cdn.push('reset');
    expect(same(await t1.fetchBytes(), parseGguf(bytes).tensor('t1')!.bytes)).toBe(true);
    const ranges = hub.log.filter((r) => r.server === 'cdn').map((r) => /bytes=(\d+)-(\d+)/.exec(r.range ?? '')!.slice(1).map(Number));
    expect(ranges).toHaveLength(2);
    const [first, second] = ranges as [number[], number[]];
    expect(first[0]).toBe(t1.fileOffset);
    // The retry asks from where the first stopped (past its start), to the same end.
    expect(second[0]).toBeGreaterThan(first[0]!);
    expect(second[1]).toBe(first[1]);
  });
});
