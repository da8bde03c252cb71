import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeGguf, parseGguf } from '../../lib/index.js';
import { ChecksumError, download } from '../../scripts/download.js';
import { tempDir } from '../helpers/tmp.js';

// A generated GGUF served from 127.0.0.1, with Range support, Hugging Face's X-Linked-ETag
// checksum header, and a switch that cuts the connection part-way through the next response.
const payload = Buffer.from(
  encodeGguf({
    metadata: { 'general.name': { type: 'STRING', value: 'served' } },
    tensors: [{ name: 'w', type: 'I8', shape: [3 << 20], data: new Uint8Array(randomBytes(3 << 20)) }],
  }),
);
const payloadSha = createHash('sha256').update(payload).digest('hex');
let cutNextAfter: number | undefined;
const rangesSeen: string[] = [];
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const range = req.headers.range?.match(/^bytes=(\d+)-$/);
    rangesSeen.push(req.headers.range ?? '');
    const start = range ? Number(range[1]) : 0;
    const body = payload.subarray(start);
    res.writeHead(range ? 206 : 200, {
      'content-length': body.length,
      'x-linked-etag': `"${payloadSha}"`,
      ...(range ? { 'content-range': `bytes ${start}-${payload.length - 1}/${payload.length}` } : {}),
    });
    if (cutNextAfter !== undefined) {
      const cut = cutNextAfter;
      cutNextAfter = undefined;
      res.write(body.subarray(0, cut), () => setTimeout(() => res.destroy(), 20));
      return;
    }
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('fetch:tinyllama download (against a local server)', () => {
  const cache = tempDir();

  it('downloads with progress and checks the served checksum', async () => {
    const dest = join(cache, 'a.gguf');
    const progress: Array<[number, number | undefined]> = [];
    const result = await download({ url: `${base}/a.gguf`, dest, onProgress: (r, t) => progress.push([r, t]) });
    expect(result).toMatchObject({ sha256: payloadSha, bytes: payload.length, resumedFrom: 0, verified: true });
    expect(readFileSync(dest).equals(payload)).toBe(true);
    expect(parseGguf(readFileSync(dest)).metadata.get('general.name')).toBe('served');
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toEqual([payload.length, payload.length]);
    expect(progress.every(([r], i) => i === 0 || r >= progress[i - 1]![0])).toBe(true);
    expect(existsSync(`${dest}.partial`)).toBe(false);
  });

  it('an interrupted transfer keeps its partial file and resumes with a Range request', async () => {
    const dest = join(cache, 'b.gguf');
    cutNextAfter = 1 << 20;
    await expect(download({ url: `${base}/b.gguf`, dest })).rejects.toThrow();
    expect(existsSync(dest)).toBe(false);
    const kept = statSync(`${dest}.partial`).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(payload.length);

    rangesSeen.length = 0;
    const result = await download({ url: `${base}/b.gguf`, dest });
    expect(rangesSeen).toEqual([`bytes=${kept}-`]);
    expect(result).toMatchObject({ resumedFrom: kept, verified: true, sha256: payloadSha });
    expect(readFileSync(dest).equals(payload)).toBe(true);
    expect(existsSync(`${dest}.partial`)).toBe(false);
  });

  it('a checksum mismatch leaves no file, whole or partial, in the cache', async () => {
    const dest = join(cache, 'c.gguf');
    const wrong = '0'.repeat(64);
    await expect(download({ url: `${base}/c.gguf`, dest, sha256: wrong })).rejects.toBeInstanceOf(ChecksumError);
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(`${dest}.partial`)).toBe(false);
  });
});
