// Resumable, checksummed download into a cache: bytes go to DEST.partial, which is renamed to DEST
// only once its sha256 matches. An interrupted transfer keeps the partial file and resumes with
// an HTTP Range request; a checksum mismatch deletes it, so no half file is ever left as DEST.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface DownloadOptions {
  url: string;
  dest: string;
  /** Expected sha256 (hex). Without it, a server's X-Linked-ETag (Hugging Face LFS) is used. */
  sha256?: string;
  onProgress?: (received: number, total: number | undefined) => void;
}

export interface DownloadResult {
  path: string;
  sha256: string;
  bytes: number;
  /** Bytes that were already on disk from an interrupted attempt. */
  resumedFrom: number;
  /** Whether a checksum (given or from the server) was checked. */
  verified: boolean;
}

export class ChecksumError extends Error {
  constructor(readonly expected: string, readonly actual: string) {
    super(`sha256 mismatch: expected ${expected}, got ${actual}; the partial download was deleted`);
  }
}

export async function download(options: DownloadOptions): Promise<DownloadResult> {
  const { url, dest } = options;
  const partial = `${dest}.partial`;
  mkdirSync(dirname(dest), { recursive: true });
  let start = existsSync(partial) ? statSync(partial).size : 0;

  const response = await fetch(url, { headers: start > 0 ? { Range: `bytes=${start}-` } : {} });
  if (start > 0 && response.status === 200) start = 0; // the server ignored the range: start over
  if (response.status !== 200 && response.status !== 206) {
    throw new Error(`GET ${url}: HTTP ${response.status}`);
  }
  const total = totalSize(response, start);
  const expected = (options.sha256 ?? linkedEtag(response))?.toLowerCase();

  const hash = createHash('sha256');
  if (start > 0) for await (const chunk of createReadStream(partial, { end: start - 1 })) hash.update(chunk as Buffer);
  const file = await open(partial, start > 0 ? 'r+' : 'w');
  let received = start;
  try {
    await file.truncate(start);
    options.onProgress?.(received, total);
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      await file.write(chunk, 0, chunk.byteLength, received);
      received += chunk.byteLength;
      options.onProgress?.(received, total);
    }
  } finally {
    await file.close();
  }

  const actual = hash.digest('hex');
  if (expected !== undefined && actual !== expected) {
    rmSync(partial, { force: true });
    throw new ChecksumError(expected, actual);
  }
  renameSync(partial, dest);
  return { path: dest, sha256: actual, bytes: received, resumedFrom: start, verified: expected !== undefined };
}

function totalSize(response: Response, start: number): number | undefined {
  const range = response.headers.get('content-range')?.match(/\/(\d+)$/);
  if (range) return Number(range[1]);
  const length = response.headers.get('content-length');
  return length === null ? undefined : start + Number(length);
}

function linkedEtag(response: Response): string | undefined {
  const etag = response.headers.get('x-linked-etag')?.replace(/"/g, '');
  return etag !== undefined && /^[0-9a-f]{64}$/i.test(etag) ? etag : undefined;
}
