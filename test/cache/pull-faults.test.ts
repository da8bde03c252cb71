// pullModel and `gguf-mmap pull` against the Hub imitation on 127.0.0.1: one commit for a split
// set, projectors, offline and unreachable Hubs, a renamed repository, exit statuses, bounded
// listings (issue 27, items 5, 9-13, 15, 17).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { encodeGguf, modelForTests, openGguf, pullModel, writeGgufSplit, type GgufWriteSpec } from '../../lib/index.js';
import { RepoCache } from '../../lib/cache/hf-cache.js';
import { MAX_LISTING_PAGE_BYTES, pickQuant } from '../../lib/cache/pull.js';
import { printable } from '../../lib/cli/inspect.js';
import type { HubServer } from '../../scripts/hub-imitation.js';
import { useHubImitation } from '../helpers/hub.js';
import { tempDir } from '../helpers/tmp.js';

const imitation = useHubImitation();
let hub: HubServer;
beforeAll(() => {
  hub = imitation.hub;
});
let cacheDir: string;
beforeEach(() => {
  cacheDir = tempDir('gguf-mmap-hf-cache-');
});
const opts = () => ({ cacheDir, backoffMs: 1 });
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');

function spec(n: number, seed: number): GgufWriteSpec {
  return {
    metadata: [['general.architecture', { type: 'STRING', value: 'llama' }]],
    tensors: Array.from({ length: n }, (_, i) => ({ name: `t${i}`, type: 'I8', shape: [256], data: new Uint8Array(256).map((_, j) => (seed * 101 + i * 31 + j) & 0xff) })),
  };
}

function serve(repoPath: string, bytes: Uint8Array): Uint8Array {
  hub.files.set(repoPath, { bytes });
  return bytes;
}

/** Serves a split set of `parts` parts (one tensor each) under `repo`; returns the parts' bytes by name. */
function serveSplit(repo: string, prefix: string, parts: number, seed: number): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  for (const p of writeGgufSplit(join(tempDir(), prefix), spec(parts, seed), { maxTensors: 1 })) {
    const name = p.split('/').pop()!;
    out.set(name, serve(`${repo}/${name}`, new Uint8Array(readFileSync(p))));
  }
  return out;
}

/** A port nothing listens on: a Hub that cannot be reached. */
async function closedPort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function cli(env: Record<string, string>, ...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, HF_ENDPOINT: hub.endpoint, HF_HUB_CACHE: cacheDir, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ status: code ?? -1, stdout, stderr }));
  });
}

// A new commit for each move of a branch (the imitation serves every commit it has had).
let commits = 0;
const newCommit = () => `b0b0b${String(++commits).padStart(35, '0')}`;

describe('a split model at one commit (item 5)', () => {
  it('the branch moving during the pull: every part from the commit the revision named first', async () => {
    const a = serveSplit('org/moving', 'm', 3, 1);
    const commitA = hub.commit;
    // The first answer about a file moves the branch; later questions wait for it, so they see the move.
    let moved: Promise<void> | undefined;
    const moving: typeof fetch = async (input, init) => {
      if (!String(input).startsWith(hub.endpoint) || (init?.method ?? 'GET') !== 'HEAD') return fetch(input, init);
      if (moved !== undefined) {
        await moved;
        return fetch(input, init);
      }
      let done!: () => void;
      moved = new Promise((r) => (done = r));
      const answer = await fetch(input, init);
      hub.moveBranch(newCommit());
      serveSplit('org/moving', 'm', 3, 2);
      done();
      return answer;
    };
    const pulled = await pullModel('hf:org/moving/m-00001-of-00003.gguf', { ...opts(), fetch: moving });
    expect(pulled.commit).toBe(commitA);
    expect(pulled.parts.map((p) => dirname(p))).toEqual(Array(3).fill(join(cacheDir, 'models--org--moving', 'snapshots', commitA)));
    for (const p of pulled.parts) expect(sha256(readFileSync(p))).toBe(sha256(a.get(p.split('/').pop()!)!));
    using g = openGguf(pulled.path);
    expect(g.tensorCount).toBe(3);
  });

  it('part 1 cached from an interrupted pull, the branch moved since: every part at the new commit', async () => {
    serveSplit('org/resumed', 'm', 2, 1);
    const commitA = hub.commit;
    // The cache as an interrupted pull leaves it: part 1 linked at commit A, refs/main = A, no part 2.
    const part1 = hub.files.get('org/resumed/m-00001-of-00002.gguf')!.bytes;
    const cache = new RepoCache(cacheDir, 'org/resumed');
    cache.blobsFolder();
    writeFileSync(cache.blobPath(sha256(part1)), part1);
    cache.link(commitA, 'm-00001-of-00002.gguf', sha256(part1));
    cache.writeRef('main', commitA);
    const commitB = newCommit();
    hub.moveBranch(commitB);
    const b = serveSplit('org/resumed', 'm', 2, 2);
    const pulled = await pullModel('hf:org/resumed/m-00002-of-00002.gguf', opts());
    expect(pulled.commit).toBe(commitB);
    for (const p of pulled.parts) expect([p, sha256(readFileSync(p))]).toEqual([p, sha256(b.get(p.split("/").pop()!)!)]);
    expect(readFileSync(join(cacheDir, 'models--org--resumed', 'refs', 'main'), 'utf8')).toBe(commitB);
    using g = openGguf(pulled.path);
    expect(g.tensorCount).toBe(2);
  });
});

describe('hf:ORG/REPO:QUANT (items 9, 17)', () => {
  it('picks the model, not a projector (mmproj*), unless the projector is asked for', () => {
    const files = ['mmproj-model-f16.gguf', 'model-F16.gguf', 'model-Q4_K_M.gguf', 'sub/mmproj-F16.gguf'];
    expect(pickQuant(files, 'F16')).toBe('model-F16.gguf');
    expect(pickQuant(files, 'f16')).toBe('model-F16.gguf');
    expect(pickQuant(files, 'mmproj-F16')).toBe('mmproj-model-f16.gguf');
    expect(pickQuant(['mmproj-model-f16.gguf', 'model-Q8_0.gguf'], 'F16')).toBeUndefined();
    expect(pickQuant(['x-mmproj-f16.gguf'], 'mmproj')).toBe('x-mmproj-f16.gguf');
  });

  it('a listing page past the bound is BAD_RESPONSE, read no further; FILE_NOT_FOUND names a bounded number of files', async () => {
    let produced = 0;
    const endless: typeof fetch = async (input, init) => {
      if (!String(input).includes('/tree/')) return fetch(input, init);
      const piece = new TextEncoder().encode(`${JSON.stringify({ type: 'file', path: 'x'.repeat(1000) })},`);
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          // Twice the bound at most (8 MiB): a client that reads it all is seen reading too much.
          if (produced > 2 * (8 << 20)) return controller.close();
          produced += piece.byteLength;
          controller.enqueue(produced === piece.byteLength ? new TextEncoder().encode('[') : piece);
        },
      });
      return new Response(body);
    };
    await expect(pullModel('hf:org/huge:Q4_K_M', { ...opts(), fetch: endless })).rejects.toMatchObject({ code: 'BAD_RESPONSE', message: expect.stringContaining(`longer than ${MAX_LISTING_PAGE_BYTES} bytes`) });
    expect(produced).toBeLessThan(MAX_LISTING_PAGE_BYTES + (1 << 20));
    for (let i = 0; i < 100; i++) serve(`org/many/m${String(i).padStart(3, '0')}-Q8_0.gguf`, new Uint8Array(8));
    const error = (await pullModel('hf:org/many:Q4_K_M', opts()).then(() => new Error('pulled'), (e: unknown) => e)) as Error;
    expect(error).toMatchObject({ code: 'FILE_NOT_FOUND', message: expect.stringContaining('m019-Q8_0.gguf and 80 more') });
    expect(error.message).not.toContain('m099-Q8_0.gguf');
  });
});

describe('offline, or the Hub unreachable (items 11, 12)', () => {
  it('offline and not cached, hf:ORG/REPO:QUANT is NOT_CACHED: modelForTests skips, pull exits 3', async () => {
    serve('org/absent/m-Q4_K_M.gguf', encodeGguf(spec(1, 1)));
    expect(await modelForTests('hf:org/absent:Q4_K_M', { ...opts(), download: false })).toEqual({ path: undefined, skip: expect.stringMatching(/^skipped: hf:org\/absent:Q4_K_M is not cached and offline \(NOT_CACHED: /) });
    const r = await cli({ HF_HUB_OFFLINE: '1' }, 'pull', 'hf:org/absent:Q4_K_M');
    expect([r.status, r.stderr]).toEqual([3, expect.stringMatching(/^gguf-mmap: NOT_CACHED: /)]);
    expect(r.stdout).toBe('');
  });

  it('cached, with the network failing (HF_HUB_OFFLINE unset): the cached snapshot, for modelForTests and pull', async () => {
    serve('org/cached/m-Q4_K_M.gguf', encodeGguf(spec(1, 1)));
    const pulled = await pullModel('hf:org/cached:Q4_K_M', opts());
    const endpoint = hub.endpoint;
    process.env.HF_ENDPOINT = `http://127.0.0.1:${await closedPort()}`;
    try {
      expect(await modelForTests('hf:org/cached:Q4_K_M', opts())).toEqual({ path: pulled.path, skip: undefined });
      expect((await pullModel('hf:org/cached:Q4_K_M', { ...opts(), refresh: true })).path).toBe(pulled.path);
      // Not cached: still the network's error.
      await expect(pullModel('hf:org/other:Q4_K_M', opts())).rejects.toMatchObject({ code: 'NETWORK_ERROR' });
    } finally {
      process.env.HF_ENDPOINT = endpoint;
    }
  });
});

describe('a renamed repository (item 13)', () => {
  it("pull follows the Hub's relative 307 to the new name (by path and by quantization); the cache keeps the name asked for", async () => {
    const bytes = serve('org/new-name/m-Q4_K_M.gguf', encodeGguf(spec(1, 3)));
    hub.renamed.set('org/old-name', 'org/new-name');
    const pulled = await pullModel('hf:org/old-name/m-Q4_K_M.gguf', opts());
    expect(pulled.path).toBe(join(cacheDir, 'models--org--old-name', 'snapshots', hub.commit, 'm-Q4_K_M.gguf'));
    expect(sha256(readFileSync(pulled.path))).toBe(sha256(bytes));
    expect(hub.log.some((r) => r.status === 307)).toBe(true);
    expect((await pullModel('hf:org/old-name:Q4_K_M', { ...opts(), refresh: true })).path).toBe(pulled.path);
    expect(hub.log.filter((r) => r.path.startsWith('/api/models/org/old-name/tree/')).map((r) => r.status)).toEqual([307]);
  });
});

describe('gguf-mmap pull (items 10, 15)', () => {
  it('a server-provided file name is printed escaped, the path one line and the last', async () => {
    serve('org/esc/a\u001b[2Jb\nc-Q4_K_M.gguf', encodeGguf(spec(1, 4)));
    const r = await cli({}, 'pull', 'hf:org/esc:Q4_K_M');
    expect(r.status, r.stderr).toBe(0);
    const path = join(cacheDir, 'models--org--esc', 'snapshots', hub.commit, 'a\u001b[2Jb\nc-Q4_K_M.gguf');
    expect(r.stdout).toBe(`${printable(path)}\n`);
    expect(r.stdout).not.toContain('\u001b');
    expect(r.stdout.split('\n')).toHaveLength(2);
  });

  it('a sha256 mismatch, a file changed during the download and a missing part are failed transfers: exit 1', async () => {
    serve('org/corrupt/model.gguf', encodeGguf(spec(1, 5)));
    hub.faults.cdn.push('corrupt');
    const corrupt = await cli({}, 'pull', 'hf:org/corrupt/model.gguf');
    expect([corrupt.status, corrupt.stderr]).toEqual([1, expect.stringMatching(/^gguf-mmap: CHECKSUM_MISMATCH: /)]);
    serve('org/changing/model.gguf', encodeGguf(spec(64, 6)));
    // The first download breaks, and meanwhile the file changes on the Hub.
    hub.faultFor = (server) => {
      if (server !== 'cdn') return undefined;
      hub.faultFor = undefined;
      serve('org/changing/model.gguf', encodeGguf(spec(64, 7)));
      return 'reset';
    };
    const changed = await cli({}, 'pull', 'hf:org/changing/model.gguf');
    expect([changed.status, changed.stderr]).toEqual([1, expect.stringMatching(/^gguf-mmap: FILE_CHANGED: /)]);
    serveSplit('org/partial', 'm', 2, 8);
    hub.files.delete('org/partial/m-00002-of-00002.gguf');
    const partial = await cli({}, 'pull', 'hf:org/partial/m-00001-of-00002.gguf');
    expect([partial.status, partial.stderr]).toEqual([1, expect.stringMatching(/^gguf-mmap: SPLIT_PART_MISSING: /)]);
  });
});
