// Headers and tensors over HTTP, against a Hub imitation on 127.0.0.1 (test/helpers/hub-server.ts)
// with faults injected per request; the local file opened from the same bytes is the truth.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { encodeGguf, openGguf, openGgufRemote, parseGguf, writeGgufSplit, type GgufFile, type GgufWriteSpec } from '../../lib/index.js';
import { remoteStats } from '../../lib/remote/open-remote.js';
import type { HubServer } from '../../scripts/hub-imitation.js';
import { useHubImitation } from '../helpers/hub.js';
import { tempDir } from '../helpers/tmp.js';

const imitation = useHubImitation();
let hub: HubServer;
beforeAll(() => {
  hub = imitation.hub;
});
const TOKEN = 'hf_secret_token_for_tests';

/** A llama-shaped spec with `vocab` tokens and `merges` merges (a header of about 11 bytes a token and 14 a merge, plus tensors). */
function model(vocab: number, merges: number): GgufWriteSpec {
  const tokens = Array.from({ length: vocab }, (_, i) => `tok${i.toString(36)}`);
  return {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['llama.block_count', { type: 'UINT32', value: 2 }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }],
      ['tokenizer.ggml.merges', { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: merges }, (_, i) => `m${i} x${i}`) }],
    ],
    tensors: [
      { name: 'token_embd.weight', type: 'F32', shape: [4, 8], data: new Uint8Array(new Float32Array(32).map((_, i) => i / 2).buffer) },
      { name: 'output.weight', type: 'Q8_0', shape: [32, 2], data: new Uint8Array(68).map((_, i) => (i % 34 === 1 ? 0x3c : i)) },
    ],
  };
}

function serve(repoPath: string, bytes: Uint8Array): string {
  hub.files.set(repoPath, { bytes });
  return `hf:${repoPath}`;
}

const cdnRequests = () => hub.log.filter((r) => r.server === 'cdn');
const opts = { backoffMs: 1 };


function sameAsLocal(remote: GgufFile, bytes: Uint8Array): void {
  const local = parseGguf(bytes);
  expect(remote.mode).toBe('remote');
  expect(remote.fileSize).toBe(bytes.byteLength);
  expect([...remote.metadata.keys()]).toEqual([...local.metadata.keys()]);
  expect(remote.metadata.array('tokenizer.ggml.tokens')?.at(-1)).toBe(local.metadata.array('tokenizer.ggml.tokens')?.at(-1));
  expect(remote.tensors.map((t) => [t.name, t.type, t.shape, t.fileOffset])).toEqual(local.tensors.map((t) => [t.name, t.type, t.shape, t.fileOffset]));
  expect(remote.summary()).toEqual(local.summary());
}

describe('openGgufRemote', () => {
  it('a typical header in one range request; tensors fetched on demand; sync access is REMOTE_FILE', async () => {
    const bytes = encodeGguf(model(32_000, 61_000)); // TinyLlama's vocabulary: a ~1.5 MB header
    const uri = serve('org/tiny/model.gguf', bytes);
    const g = await openGgufRemote(uri, opts);
    sameAsLocal(g, bytes);
    expect(cdnRequests().length).toBe(1);
    expect(remoteStats(g).requests).toBe(2); // the Hub's 302, then the CDN's range
    const embd = g.tensor('token_embd.weight')!;
    expect(() => embd.bytes).toThrow(expect.objectContaining({ code: 'REMOTE_FILE' }));
    expect(() => embd.f32()).toThrow(expect.objectContaining({ code: 'REMOTE_FILE' }));
    const local = parseGguf(bytes);
    expect(await embd.fetchBytes()).toEqual(local.tensor('token_embd.weight')!.bytes);
    expect(await g.tensor('output.weight')!.dequantizeAsync()).toEqual(local.tensor('output.weight')!.dequantize());
    expect(await embd.gatherRowsAsync([7, 0, 7])).toEqual(local.tensor('token_embd.weight')!.gatherRows([7, 0, 7]));
    // Later ranges go straight to the resolved CDN URL, not through the Hub again.
    expect(hub.log.filter((r) => r.server === 'hub').length).toBe(1);
    g.close();
    await expect(embd.fetchBytes()).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it('a 128k-vocabulary header (~8 MB, Llama 3 shape) in 2 range requests and at most 1.5x its bytes', async () => {
    const bytes = encodeGguf(model(128_256, 280_147));
    const headerBytes = parseGguf(bytes).dataOffset;
    expect(headerBytes).toBeGreaterThan(7 << 20);
    const g = await openGgufRemote(serve('org/llama3/model.gguf', bytes), opts);
    sameAsLocal(g, bytes);
    const ranges = cdnRequests();
    expect(ranges.length).toBeLessThanOrEqual(2);
    expect(ranges.reduce((n, r) => n + r.bytes, 0)).toBeLessThanOrEqual(1.5 * headerBytes);
  });

  it('a URL (not hf:) opens the same; an invalid file is the same GgufError as locally', async () => {
    const bytes = encodeGguf(model(100, 10));
    serve('org/plain/model.gguf', bytes);
    const g = await openGgufRemote(`${hub.endpoint}/org/plain/resolve/main/model.gguf`, opts);
    sameAsLocal(g, bytes);
    const bad = bytes.slice();
    bad[0] = 0x46;
    serve('org/plain/bad.gguf', bad);
    await expect(openGgufRemote('hf:org/plain/bad.gguf', opts)).rejects.toMatchObject({ code: 'BAD_MAGIC' });
  });

  it('the token goes to the Hub only, never to the CDN, and never into an error', async () => {
    hub.requireToken = TOKEN;
    const uri = serve('org/gated/model.gguf', encodeGguf(model(100, 10)));
    const error = await openGgufRemote(uri, opts).catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('HTTP 401') });
    const g = await openGgufRemote(uri, { ...opts, token: TOKEN });
    expect(g.tensorCount).toBe(2);
    expect(hub.log.filter((r) => r.server === 'hub' && r.status === 302).every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(cdnRequests().every((r) => r.authorization === undefined)).toBe(true);
    hub.faults.cdn.push('wrong-range');
    const failed = (await openGgufRemote(uri, { ...opts, token: TOKEN }).then(() => new Error('opened'), (e: unknown) => e)) as Error;
    expect(failed.message).not.toContain(TOKEN);
    expect(failed.message).not.toContain('Signature');
  });

  it('an expired signed URL is resolved again once; a second 403 fails', async () => {
    const bytes = encodeGguf(model(100, 10));
    const g = await openGgufRemote(serve('org/exp/model.gguf', bytes), opts);
    hub.faults.cdn.push('expired');
    expect(await g.tensor('token_embd.weight')!.fetchBytes()).toEqual(parseGguf(bytes).tensor('token_embd.weight')!.bytes);
    expect(hub.log.map((r) => `${r.server} ${r.status}`)).toEqual(['hub 302', 'cdn 206', 'cdn 403', 'hub 302', 'cdn 206']);
    hub.faults.cdn.push('expired', 'expired');
    await expect(g.tensor('output.weight')!.fetchBytes()).rejects.toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('403') });
  });

  it.each([
    ['reset', 'a connection reset mid-body'],
    ['short', 'a body cut short'],
    ['429', 'Too Many Requests with Retry-After'],
    ['503', 'a 503'],
  ] as const)('%s (%s) is retried and the file opens', async (fault, _what) => {
    const bytes = encodeGguf(model(2000, 100));
    const uri = serve(`org/fault-${fault}/model.gguf`, bytes);
    hub.faults.cdn.push(fault);
    sameAsLocal(await openGgufRemote(uri, opts), bytes);
    expect(cdnRequests().length).toBe(2);
  });

  it('a server that ignores Range is read only as far as needed, then the body is cancelled', async () => {
    const bytes = encodeGguf({ ...model(100, 10), tensors: [{ name: 'big', type: 'F32', shape: [4 << 20] }] }); // 16 MiB of data
    const uri = serve('org/norange/model.gguf', bytes);
    hub.faults.cdn.push('ignore-range');
    const g = await openGgufRemote(uri, opts);
    expect(g.tensor('big')!.nbytes).toBe(16 << 20);
    // The client stopped reading after the first request's worth (the server may have sent a little more).
    expect(remoteStats(g).bytes).toBeLessThan(8 << 20);
  });

  it.each([
    ['wrong-range', 'BAD_RESPONSE', /Content-Range/],
    ['gzip', 'BAD_RESPONSE', /Content-Encoding: gzip/],
  ] as const)('%s is %s', async (fault, code, message) => {
    const uri = serve(`org/bad-${fault}/model.gguf`, encodeGguf(model(100, 10)));
    hub.faults.cdn.push(fault);
    await expect(openGgufRemote(uri, opts)).rejects.toMatchObject({ code, message: expect.stringMatching(message) });
  });

  it('bounded: 503 on every attempt, a redirect loop, a missing file, abort', async () => {
    const uri = serve('org/bounded/model.gguf', encodeGguf(model(100, 10)));
    hub.faults.cdn.push('503', '503', '503');
    await expect(openGgufRemote(uri, { ...opts, attempts: 3 })).rejects.toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('HTTP 503') });
    await expect(openGgufRemote(uri, { ...opts, attempts: Number.NaN })).rejects.toThrow(TypeError);
    hub.faults.hub.push(...Array<'loop'>(12).fill('loop'));
    await expect(openGgufRemote(uri, opts)).rejects.toMatchObject({ code: 'NETWORK_ERROR', message: expect.stringContaining('redirects') });
    hub.faults.hub.length = 0;
    await expect(openGgufRemote('hf:org/bounded/absent.gguf', opts)).rejects.toMatchObject({ code: 'HTTP_ERROR', message: expect.stringContaining('404') });
    // A server that sends nothing: remote-faults.test.ts (timeoutMs is idleness).
    const controller = new AbortController();
    const pending = openGgufRemote(uri, { ...opts, signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });

  it('any part of a split model by URL opens the whole set; a missing part is SPLIT_PART_MISSING; a part alone is refused', async () => {
    const dir = tempDir();
    const spec = model(500, 50);
    const paths = writeGgufSplit(join(dir, 'm'), spec, { maxTensors: 1 });
    expect(paths).toHaveLength(2);
    for (const p of paths) serve(`org/split/${p.split('/').pop()!}`, new Uint8Array(readFileSync(p)));
    using local = openGguf(paths[0]!);
    const g = await openGgufRemote('hf:org/split/m-00002-of-00002.gguf', opts);
    expect(g.parts).toHaveLength(2);
    expect(g.tensors.map((t) => [t.name, t.part, t.offset])).toEqual(local.tensors.map((t) => [t.name, t.part, t.offset]));
    expect(await g.tensor('output.weight')!.fetchBytes()).toEqual(local.tensor('output.weight')!.bytes);
    hub.files.delete('org/split/m-00001-of-00002.gguf');
    await expect(openGgufRemote('hf:org/split/m-00002-of-00002.gguf', opts)).rejects.toMatchObject({ code: 'SPLIT_PART_MISSING' });
    serve('org/split/renamed.gguf', new Uint8Array(readFileSync(paths[1]!)));
    await expect(openGgufRemote('hf:org/split/renamed.gguf', opts)).rejects.toMatchObject({ code: 'SPLIT_PART_MISSING' });
    expect((await openGgufRemote('hf:org/split/renamed.gguf', { ...opts, split: false })).tensorCount).toBe(1);
  });

  it('hf: URIs: revisions, and paths that would leave the repository are TypeErrors', async () => {
    serve('org/rev/sub/dir/model.gguf', encodeGguf(model(100, 10)));
    expect((await openGgufRemote('hf:org/rev/sub/dir/model.gguf@v1.0', opts)).tensorCount).toBe(2);
    expect(hub.log.some((r) => r.path === '/org/rev/resolve/v1.0/sub/dir/model.gguf')).toBe(true);
    for (const bad of ['hf:org/rev', 'hf:org/rev/../x.gguf', 'hf:org/rev/a//b.gguf', 'hf:../x/y.gguf']) {
      await expect(openGgufRemote(bad, opts)).rejects.toThrow(TypeError);
    }
  });
});

describe('gguf-mmap inspect URL', () => {
  const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
  async function cli(...args: string[]) {
    const { execFile } = await import('node:child_process');
    // Asynchronous: the server answering is in this process.
    return new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [CLI, ...args], { env: { ...process.env, HF_ENDPOINT: hub.endpoint, GGUF_MMAP_MODE: 'read' }, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
        resolve({ status: error === null ? 0 : Number((error as { code?: number }).code), stdout, stderr }),
      );
    });
  }

  it('prints what inspect FILE prints for the same file (text and --json), reading the header only', async () => {
    const bytes = encodeGguf(model(3000, 300));
    const uri = serve('org/cli/model.gguf', bytes);
    const file = join(tempDir(), 'model.gguf');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, bytes);
    const [remote, local] = [await cli('inspect', uri), await cli('inspect', file)];
    expect(remote.status, remote.stderr).toBe(0);
    const body = (text: string) => text.split('\n').filter((l) => !l.startsWith('file ')).join('\n');
    expect(body(remote.stdout)).toBe(body(local.stdout));
    expect(remote.stdout).toContain(`file       ${uri}`);
    const [remoteJson, localJson] = [await cli('inspect', uri, '--json'), await cli('inspect', file, '--json')];
    expect(remoteJson.stdout).toBe(localJson.stdout);
    expect((await cli('inspect', uri, '--json', '--sha256')).status).toBe(1);
    const missing = await cli('inspect', 'hf:org/cli/absent.gguf');
    expect([missing.status, missing.stderr]).toEqual([1, expect.stringMatching(/^gguf-mmap: HTTP_ERROR: .*HTTP 404/)]);
  });
});
