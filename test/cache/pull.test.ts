// Downloads into the Hugging Face cache, against the Hub imitation on 127.0.0.1; interop with
// @huggingface/hub (npm) and Python's filelock (Debian's python3-filelock) as real peers.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { encodeGguf, listCache, openGguf, pullModel, writeGgufSplit, type GgufWriteSpec } from '../../lib/index.js';
import { withFileLock } from '../../lib/cache/file-lock.js';
import type { HubServer } from '../../scripts/hub-imitation.js';
import { useHubImitation } from '../helpers/hub.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { tempDir } from '../helpers/tmp.js';

const imitation = useHubImitation();
let hub: HubServer;
beforeAll(() => {
  hub = imitation.hub;
});
let cacheDir: string;
const DIST_INDEX = pathToFileURL(join(import.meta.dirname, '../../dist/lib/index.js')).href;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const opts = () => ({ cacheDir, backoffMs: 1 });

function spec(n = 4, bytesEach = 1 << 16): GgufWriteSpec {
  return {
    metadata: [['general.architecture', { type: 'STRING', value: 'llama' }]],
    tensors: Array.from({ length: n }, (_, i) => ({ name: `t${i}`, type: 'I8', shape: [bytesEach], data: new Uint8Array(bytesEach).map((_, j) => (i * 31 + j * 7) & 0xff) })),
  };
}

function serve(repoPath: string, bytes: Uint8Array): Uint8Array {
  hub.files.set(repoPath, { bytes });
  return bytes;
}

/** Polls `condition` every 20 ms up to `limitMs` (generous: a loaded machine is slow, never wrong). */
async function eventually(condition: () => boolean, limitMs = 10_000): Promise<boolean> {
  for (const end = Date.now() + limitMs; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) if (condition()) return true;
  return condition();
}

const downloads = () => hub.log.filter((r) => r.server === 'cdn' && (r.status === 200 || r.status === 206));

beforeEach(() => {
  cacheDir = tempDir('gguf-mmap-hf-cache-');
});

describe('pullModel', () => {
  it('downloads into the shared cache layout; the path maps with openGguf; a second pull needs no network', async () => {
    const bytes = serve('org/repo/model.gguf', encodeGguf(spec()));
    const pulled = await pullModel('hf:org/repo/model.gguf', opts());
    const folder = join(cacheDir, 'models--org--repo');
    expect(pulled).toMatchObject({ repo: 'org/repo', revision: 'main', commit: hub.commit, downloaded: bytes.byteLength });
    expect(pulled.path).toBe(join(folder, 'snapshots', hub.commit, 'model.gguf'));
    expect(readlinkSync(pulled.path)).toBe(`../../blobs/${sha256(bytes)}`);
    expect(readFileSync(join(folder, 'refs', 'main'), 'utf8')).toBe(hub.commit);
    expect(readdirSync(join(folder, 'blobs'))).toEqual([sha256(bytes)]);
    expect(existsSync(join(cacheDir, '.locks', 'models--org--repo', `${sha256(bytes)}.lock`))).toBe(true);
    using g = openGguf(pulled.path);
    expect(g.tensor('t3')!.bytes).toEqual(new Uint8Array(spec().tensors![3]!.data!));
    hub.log.length = 0;
    expect(await pullModel('hf:org/repo/model.gguf', opts())).toMatchObject({ path: pulled.path, downloaded: 0 });
    expect(hub.log).toEqual([]);
    expect(listCache(cacheDir)).toEqual([{ repo: 'org/repo', files: [{ path: 'model.gguf', revision: 'main', commit: hub.commit, bytes: bytes.byteLength }], bytes: bytes.byteLength }]);
  });

  it('HF_HUB_OFFLINE resolves from refs/ and snapshots/, else NOT_CACHED naming what is missing', async () => {
    serve('org/off/model.gguf', encodeGguf(spec()));
    const pulled = await pullModel('hf:org/off/model.gguf', opts());
    process.env.HF_HUB_OFFLINE = '1';
    hub.log.length = 0;
    expect((await pullModel('hf:org/off/model.gguf', opts())).path).toBe(pulled.path);
    await expect(pullModel('hf:org/off/other.gguf', opts())).rejects.toMatchObject({ code: 'NOT_CACHED', message: expect.stringContaining('no such file in its snapshot') });
    await expect(pullModel('hf:org/off/model.gguf@v2', opts())).rejects.toMatchObject({ code: 'NOT_CACHED', message: expect.stringContaining('no refs/v2') });
    expect(hub.log).toEqual([]);
  });

  it('a connection reset mid-body resumes with Range from the bytes on disk', async () => {
    const bytes = serve('org/resume/model.gguf', encodeGguf(spec(8, 1 << 18)));
    hub.faults.cdn.push('reset');
    const pulled = await pullModel('hf:org/resume/model.gguf', opts());
    expect(sha256(readFileSync(pulled.path))).toBe(sha256(bytes));
    const ranges = downloads().map((r) => r.range);
    expect(ranges[0]).toBe('bytes=0-');
    expect(Number(/bytes=(\d+)-/.exec(ranges[1]!)![1])).toBeGreaterThan(0);
    expect(readdirSync(join(cacheDir, 'models--org--resume', 'blobs'))).toEqual([sha256(bytes)]);
  });

  it('a checksum mismatch deletes the download: no blob, no .incomplete, no snapshot', async () => {
    serve('org/bad/model.gguf', encodeGguf(spec()));
    hub.faults.cdn.push('corrupt');
    await expect(pullModel('hf:org/bad/model.gguf', opts())).rejects.toMatchObject({ code: 'CHECKSUM_MISMATCH' });
    expect(readdirSync(join(cacheDir, 'models--org--bad', 'blobs'))).toEqual([]);
    expect(existsSync(join(cacheDir, 'models--org--bad', 'snapshots'))).toBe(false);
    await expect(pullModel('hf:org/bad/model.gguf', { ...opts(), sha256: '0'.repeat(64) })).rejects.toMatchObject({ code: 'CHECKSUM_MISMATCH' });
  });

  it('any part of a split model pulls every part, with one progress; hf:ORG/REPO:QUANT picks the file', async () => {
    const dir = tempDir();
    const paths = writeGgufSplit(join(dir, 'tiny-Q4_K_M'), spec(6), { maxTensors: 2 });
    for (const p of paths) serve(`org/split/${p.split('/').pop()!}`, new Uint8Array(readFileSync(p)));
    serve('org/split/tiny-Q8_0.gguf', encodeGguf(spec(1)));
    const seen: Array<[number, number]> = [];
    const pulled = await pullModel('hf:org/split/tiny-Q4_K_M-00002-of-00003.gguf', { ...opts(), onProgress: (done, total) => seen.push([done, total]) });
    expect(pulled.parts.map((p) => p.split('/').pop())).toEqual(paths.map((p) => p.split('/').pop()));
    expect(pulled.path).toBe(pulled.parts[0]);
    const total = paths.reduce((n, p) => n + readFileSync(p).byteLength, 0);
    expect(seen.at(-1)).toEqual([total, total]);
    using g = openGguf(pulled.path);
    expect(g.tensorCount).toBe(6);
    expect((await pullModel('hf:org/split:Q4_K_M', opts())).path).toBe(pulled.path);
    expect((await pullModel('hf:org/split:q8_0', opts())).path.endsWith('tiny-Q8_0.gguf')).toBe(true);
    await expect(pullModel('hf:org/split:IQ2_XS', opts())).rejects.toMatchObject({ code: 'FILE_NOT_FOUND' });
    process.env.HF_HUB_OFFLINE = '1';
    expect((await pullModel('hf:org/split:Q4_K_M', opts())).path).toBe(pulled.path);
  });

  it('paths never leave the cache: .. in a path is a TypeError; a symlink planted in the layout is refused', async () => {
    await expect(pullModel('hf:org/esc/../../x.gguf', opts())).rejects.toThrow(TypeError);
    serve('org/esc/sub/model.gguf', encodeGguf(spec()));
    const outside = tempDir();
    mkdirSync(join(cacheDir, 'models--org--esc', 'snapshots', hub.commit), { recursive: true });
    symlinkSync(outside, join(cacheDir, 'models--org--esc', 'snapshots', hub.commit, 'sub'));
    await expect(pullModel('hf:org/esc/sub/model.gguf', opts())).rejects.toMatchObject({ code: 'ENOTDIR' });
    expect(readdirSync(outside)).toEqual([]);
  });

  it('a token goes to the Hub only; a gated repository without one is HTTP_ERROR naming the token', async () => {
    serve('org/gated/model.gguf', encodeGguf(spec()));
    hub.requireToken = 'hf_pull_token';
    try {
      await expect(pullModel('hf:org/gated/model.gguf', opts())).rejects.toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('token') });
      await pullModel('hf:org/gated/model.gguf', { ...opts(), token: 'hf_pull_token' });
      expect(hub.log.filter((r) => r.server === 'cdn').every((r) => r.authorization === undefined)).toBe(true);
    } finally {
      hub.requireToken = undefined;
    }
  });
});

describe.skipIf(READ_MODE)(mmapOnly('one download per blob across processes and threads'), () => {
  it('two processes and two worker threads pulling the same file at once: one download, all get it', async () => {
    const bytes = serve('org/race/model.gguf', encodeGguf(spec(8, 1 << 18)));
    hub.latencyMs = 30;
    const script = `
      import { pullModel } from ${JSON.stringify(DIST_INDEX)};
      import { Worker, isMainThread, parentPort } from 'node:worker_threads';
      const pull = () => pullModel('hf:org/race/model.gguf', { cacheDir: ${JSON.stringify(cacheDir)} }).then((p) => p.path);
      if (isMainThread) {
        const worker = new Worker(new URL(import.meta.url), { eval: false });
        const [a, b] = await Promise.all([pull(), new Promise((r) => worker.once('message', r))]);
        console.log(JSON.stringify([a, b]));
      } else parentPort.postMessage(await pull());
    `;
    const file = join(tempDir(), 'race.mjs');
    (await import('node:fs')).writeFileSync(file, script);
    const run = () =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, [file], { env: { ...process.env, HF_ENDPOINT: hub.endpoint } });
        let out = '';
        let err = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (err += d));
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!)) : reject(new Error(err))));
      });
    const results = (await Promise.all([run(), run()])).flat();
    expect(new Set(results).size).toBe(1);
    expect(downloads()).toHaveLength(1);
    expect(sha256(readFileSync(results[0]!))).toBe(sha256(bytes));
  });
});

describe('real peers', () => {
  it('@huggingface/hub: what it downloads, pullModel finds offline; what pullModel downloads, its scanCacheDir lists', async () => {
    const { downloadFileToCacheDir, scanCacheDir } = await import('@huggingface/hub');
    const bytes = serve('org/peer/model.gguf', encodeGguf(spec()));
    const theirs = await downloadFileToCacheDir({ repo: 'org/peer', path: 'model.gguf', hubUrl: hub.endpoint, cacheDir });
    process.env.HF_HUB_OFFLINE = '1';
    const ours = await pullModel('hf:org/peer/model.gguf', opts());
    expect(ours.path).toBe(theirs);
    expect(sha256(readFileSync(ours.path))).toBe(sha256(bytes));
    delete process.env.HF_HUB_OFFLINE;
    serve('org/peer2/model.gguf', encodeGguf(spec(2)));
    await pullModel('hf:org/peer2/model.gguf', opts());
    const scan = await scanCacheDir(cacheDir);
    const repo = [...scan.repos].find((r) => r.id.name === 'org/peer2');
    expect(repo?.revisions.map((rev) => rev.commitOid)).toEqual([hub.commit]);
    expect([...(repo?.revisions[0]?.files ?? [])].map((f) => f.path.split('/').pop())).toEqual(['model.gguf']);
  });

  // Debian's python3-filelock is for /usr/bin/python3 (PATH may lead to another Python first).
  const pythons = ['/usr/bin/python3', 'python3'];
  const pythonBin = pythons.find((p) => spawnSync(p, ['-c', 'import filelock']).status === 0) ?? 'python3';
  const python = spawnSync(pythonBin, ['-c', 'import filelock'], { encoding: 'utf8' });
  it.skipIf(python.status !== 0 || READ_MODE)(
    python.status !== 0 ? "Python's filelock [skipped: python3 with filelock is not installed (Debian: python3-filelock)]" : mmapOnly("Python's filelock: its lock makes our download wait; ours makes it wait"),
    async () => {
      const bytes = serve('org/py/model.gguf', encodeGguf(spec()));
      const lock = join(cacheDir, '.locks', 'models--org--py', `${sha256(bytes)}.lock`);
      mkdirSync(join(cacheDir, '.locks', 'models--org--py'), { recursive: true });
      // Python holds the lock until told (a line on its stdin).
      const holder = spawn(pythonBin, ['-c', `import filelock, sys\nwith filelock.FileLock(${JSON.stringify(lock)}):\n  print('locked', flush=True)\n  sys.stdin.readline()`]);
      await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
      let settled = false;
      const pulling = pullModel('hf:org/py/model.gguf', opts()).finally(() => (settled = true));
      // The pull has asked the Hub and come to the lock; a while later it still waits, nothing downloaded.
      await eventually(() => hub.log.some((r) => r.server === 'hub'));
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      expect(downloads()).toEqual([]);
      holder.stdin.end('\n');
      await pulling;
      expect(downloads()).toHaveLength(1);
      // Ours held: Python's acquire times out.
      const r = await withFileLock(lock, async () => spawnSync(pythonBin, ['-c', `import filelock\ntry:\n  filelock.FileLock(${JSON.stringify(lock)}).acquire(timeout=0.3)\n  print('acquired')\nexcept filelock.Timeout:\n  print('timeout')`], { encoding: 'utf8' }));
      expect(r.stdout.trim()).toBe('timeout');
      rmSync(lock, { force: true });
      expect(lstatSync(join(cacheDir, 'models--org--py', 'snapshots', hub.commit, 'model.gguf')).isSymbolicLink()).toBe(true);
    },
  );
});

describe('modelForTests and the CLI', () => {
  it('modelForTests: the cached path, downloaded once; a skip reason when not cached and offline or unreachable', async () => {
    const { modelForTests } = await import('../../lib/index.js');
    serve('org/suite/model.gguf', encodeGguf(spec()));
    expect(await modelForTests('hf:org/suite/model.gguf', { ...opts(), download: false })).toEqual({ path: undefined, skip: expect.stringMatching(/^skipped: hf:org\/suite\/model\.gguf is not cached and offline \(NOT_CACHED: /) });
    const got = await modelForTests('hf:org/suite/model.gguf', opts());
    expect(got.path).toBe(join(cacheDir, 'models--org--suite', 'snapshots', hub.commit, 'model.gguf'));
    expect(await modelForTests('hf:org/suite/model.gguf', { ...opts(), download: false })).toEqual(got);
    // A Hub that cannot be reached (nothing listens there).
    const { createServer } = await import('node:net');
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
    });
    process.env.HF_ENDPOINT = `http://127.0.0.1:${closed}`;
    try {
      expect((await modelForTests('hf:org/suite/other.gguf', opts())).skip).toMatch(/not cached and it cannot be downloaded \(NETWORK_ERROR/);
    } finally {
      process.env.HF_ENDPOINT = hub.endpoint;
    }
    await expect(modelForTests('not-a-uri', opts())).rejects.toThrow(TypeError);
  });

  it('gguf-mmap pull prints the path last on stdout and one summary line; cache lists it', async () => {
    const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
    const bytes = serve('org/cli/m-Q4_K_M.gguf', encodeGguf(spec()));
    const run = (...args: string[]) =>
      new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, HF_ENDPOINT: hub.endpoint, HF_HUB_CACHE: cacheDir } });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) => resolve({ status: code ?? -1, stdout, stderr }));
      });
    const r = await run('pull', 'hf:org/cli:Q4_K_M');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${join(cacheDir, 'models--org--cli', 'snapshots', hub.commit, 'm-Q4_K_M.gguf')}\n`);
    expect(r.stderr).toMatch(new RegExp(`^org/cli@main \\(${hub.commit.slice(0, 10)}\\): downloaded ${(bytes.byteLength / 1024).toFixed(1)} KiB in `));
    const again = await run('pull', 'hf:org/cli/m-Q4_K_M.gguf');
    expect(again.stderr).toContain('): cached');
    const listing = await run('cache');
    expect(listing.stdout).toContain('org/cli');
    expect(listing.stdout).toMatch(/m-Q4_K_M\.gguf {2}.* {2}main \(/);
    expect(JSON.parse((await run('cache', '--json')).stdout).repos[0].files[0].path).toBe('m-Q4_K_M.gguf');
    const offline = await run('pull', 'hf:org/cli/absent.gguf');
    expect(offline.status).toBe(1);
    expect(offline.stderr).toMatch(/^gguf-mmap: HTTP_ERROR: .*404/);
  });
});

describe('pullModel against a hostile or broken server', () => {
  it('a CDN that stalls mid-body is given up after timeoutMs (and the lock let go), resumed from the bytes on disk; a Hub that stalls too', async () => {
    const bytes = serve('org/stall/model.gguf', encodeGguf(spec(2, 1 << 16)));
    serve('org/stall2/model.gguf', encodeGguf(spec(1)));
    // A kibibyte, then nothing until the client lets go; the Hub's answer for stall2 never comes.
    hub.faults.cdn.push('stall-body');
    hub.faultFor = (server, path) => (server === 'hub' && path.includes('/org/stall2/') ? 'stall' : undefined);
    const [pulled, silent] = await Promise.allSettled([
      pullModel('hf:org/stall/model.gguf', { ...opts(), timeoutMs: 2000, attempts: 2 }),
      pullModel('hf:org/stall2/model.gguf', { ...opts(), timeoutMs: 2000, attempts: 1 }),
    ]);
    expect(pulled.status === 'fulfilled' && sha256(readFileSync(pulled.value.path))).toBe(sha256(bytes));
    // The second attempt from the bytes on disk: the first attempt's kibibyte.
    expect(hub.log.filter((r) => r.server === 'cdn').map((r) => r.range ?? 'bytes=0-')).toEqual(['bytes=0-', 'bytes=1024-']);
    expect(silent.status === 'rejected' && silent.reason).toMatchObject({ code: 'NETWORK_ERROR', message: expect.stringContaining('no byte within 2000 ms') });
  });

  it('the Hub answering 503 or 429 (Retry-After) is asked again, up to attempts; a refresh it cannot answer takes the cached copy', async () => {
    const bytes = serve('org/busy/m-Q4_K_M.gguf', encodeGguf(spec()));
    // The file listing: 503, then 429, then the listing; the file's metadata at once.
    hub.faults.hub.push('503', '429');
    const pulled = await pullModel('hf:org/busy:Q4_K_M', { ...opts(), attempts: 3 });
    expect(sha256(readFileSync(pulled.path))).toBe(sha256(bytes));
    expect(hub.log.filter((r) => r.server === 'hub').map((r) => r.status)).toEqual([503, 429, 200, 302]);
    // The file's metadata: 503, then its answer.
    hub.log.length = 0;
    hub.faults.hub.push('503');
    await pullModel('hf:org/busy/m-Q4_K_M.gguf', { ...opts(), refresh: true, attempts: 2 });
    expect(hub.log.filter((r) => r.server === 'hub').map((r) => r.status)).toEqual([503, 302]);
    // A refresh the Hub cannot answer: the cached copy, as huggingface_hub falls back to it.
    hub.faults.hub.push('503', '503');
    expect((await pullModel('hf:org/busy/m-Q4_K_M.gguf', { ...opts(), refresh: true, attempts: 2 })).path).toBe(pulled.path);
    await expect(pullModel('hf:org/busy/m-Q4_K_M.gguf', { ...opts(), refresh: true, attempts: Number.NaN })).rejects.toThrow(TypeError);
    cacheDir = tempDir('gguf-mmap-hf-cache-');
    hub.faults.hub.push('503', '503');
    await expect(pullModel('hf:org/busy/m-Q4_K_M.gguf', { ...opts(), attempts: 2 })).rejects.toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('503') });
  });

  it('a file listing that is not a JSON list is BAD_RESPONSE; entries that are not objects are passed over', async () => {
    serve('org/odd/m-Q4_K_M.gguf', encodeGguf(spec(1)));
    const listing = (body: string): typeof fetch => async (input, init) => (String(input).includes('/tree/') ? new Response(body) : fetch(input, init));
    await expect(pullModel('hf:org/odd:Q4_K_M', { ...opts(), fetch: listing('<html>busy</html>') })).rejects.toMatchObject({ code: 'BAD_RESPONSE', message: expect.stringContaining('not a JSON list') });
    await expect(pullModel('hf:org/odd:Q4_K_M', { ...opts(), fetch: listing('{"error":"x"}') })).rejects.toMatchObject({ code: 'BAD_RESPONSE' });
    const pulled = await pullModel('hf:org/odd:Q4_K_M', { ...opts(), fetch: listing('[null, 3, "x", {"type":"file","path":"m-Q4_K_M.gguf"}]') });
    expect(pulled.path.endsWith('m-Q4_K_M.gguf')).toBe(true);
  });

  it('a zero-length file pulls; a token a header cannot carry is a TypeError that does not show it', async () => {
    serve('org/empty/empty.bin', new Uint8Array(0));
    expect(readFileSync((await pullModel('hf:org/empty/empty.bin', opts())).path).byteLength).toBe(0);
    const error = (await pullModel('hf:org/empty/empty.bin', { ...opts(), refresh: true, token: 'hf_SECRET\nsecond' }).then(() => new Error('pulled'), (e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).not.toContain('SECRET');
  });

  it('sha256 checks the named part of a split model only; a part missing on the Hub is SPLIT_PART_MISSING', async () => {
    const dir = tempDir();
    const paths = writeGgufSplit(join(dir, 'h'), spec(4), { maxTensors: 2 });
    for (const p of paths) serve(`org/hashed/${p.split('/').pop()!}`, new Uint8Array(readFileSync(p)));
    const first = sha256(new Uint8Array(readFileSync(paths[0]!)));
    expect((await pullModel('hf:org/hashed/h-00001-of-00002.gguf', { ...opts(), sha256: first })).parts).toHaveLength(2);
    hub.files.delete('org/hashed/h-00002-of-00002.gguf');
    cacheDir = tempDir('gguf-mmap-hf-cache-');
    await expect(pullModel('hf:org/hashed/h-00001-of-00002.gguf', opts())).rejects.toMatchObject({ code: 'SPLIT_PART_MISSING' });
  });

  it('an abort ends a pull waiting for another of the same file at once', async () => {
    const bytes = serve('org/queue/model.gguf', encodeGguf(spec(8, 1 << 18)));
    // The first pull's download never gets a byte: it holds the lock until it is aborted. (Every
    // request for this file's blob stalls, whatever else reaches the imitation meanwhile: a
    // queued fault was once taken by another test's late request, and the pull completed.)
    const blob = sha256(bytes);
    hub.faultFor = (server, path) => (server === 'cdn' && path.includes(blob) ? 'stall' : undefined);
    const ofQueue = (server: 'hub' | 'cdn') => hub.log.filter((r) => r.server === server && (server === 'cdn' ? r.path.includes(blob) : r.path.includes('/org/queue/')));
    const stopFirst = new AbortController();
    const first = pullModel('hf:org/queue/model.gguf', { ...opts(), signal: stopFirst.signal }).catch((e: unknown) => e);
    expect(await eventually(() => ofQueue('cdn').length > 0)).toBe(true);
    const hubAsked = ofQueue('hub').length;
    const controller = new AbortController();
    const second = pullModel('hf:org/queue/model.gguf', { ...opts(), signal: controller.signal });
    // The second has its answer from the Hub: it waits for the lock now (or is about to).
    expect(await eventually(() => ofQueue('hub').length > hubAsked)).toBe(true);
    controller.abort(new Error('stop'));
    // Without the abort reaching the wait, this would wait as long as the first holds the lock: for ever.
    await expect(second).rejects.toThrow('stop');
    stopFirst.abort(new Error('done'));
    expect(await first).toMatchObject({ message: 'done' });
  });

  it('a file listing cannot steer a request out of the repository; a 404 in modelForTests throws', async () => {
    const { modelForTests } = await import('../../lib/index.js');
    hub.files.set('org/steer/../../evil-Q4_K_M.gguf', { bytes: encodeGguf(spec(1)) });
    await expect(pullModel('hf:org/steer:Q4_K_M', opts())).rejects.toMatchObject({ code: 'FILE_NOT_FOUND' });
    expect(hub.log.every((r) => !r.path.includes('evil'))).toBe(true);
    await expect(modelForTests('hf:org/steer/absent.gguf', opts())).rejects.toMatchObject({ code: 'HTTP_ERROR' });
  });
});
