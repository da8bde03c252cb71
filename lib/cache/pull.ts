import { createHash } from 'node:crypto';
import { createReadStream, existsSync, renameSync, rmSync, statSync, statfsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { GgufError } from '../errors.js';
import { partNameOf } from '../file/split.js';
import { splitPartName } from '../format/write-split.js';
import { hubAuthorization, hubEndpoint, parseHubUri, REPO_PART, resolveUrl, type HubFile } from '../remote/hub.js';
import { attemptsOf, checkRangeResponse, eitherSignal, httpError, redactUrl, request, safeMessage, sleep, throwIfRetryableStatus, withRetries, type RemoteOptions } from '../remote/range-client.js';
import { withFileLock } from './file-lock.js';
import { hubCacheDir, isBlobName, isCommit, RepoCache } from './hf-cache.js';

export interface PullOptions extends Pick<RemoteOptions, 'fetch' | 'token' | 'signal' | 'attempts' | 'backoffMs' | 'timeoutMs'> {
  /** The revision (branch, tag or commit) when the URI names none (default main). */
  revision?: string;
  /** The cache's root (default: HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub). */
  cacheDir?: string;
  /** Bytes done and the total, of every part together; `parts`: each part's (one for a file not split). */
  onProgress?: (done: number, total: number, parts: ReadonlyArray<{ done: number; total: number }>) => void;
  /** The file's expected sha256 (hex): else the Hub's X-Linked-Etag (the LFS sha256) is checked. */
  sha256?: string;
  /** Ask the Hub even when the revision's file is cached (a branch may have moved). Default false. */
  refresh?: boolean;
  /** Never ask the Hub: the cache only (default: HF_HUB_OFFLINE). */
  offline?: boolean;
}

export interface PulledModel {
  /** The file to open: the snapshot path (of part 1, for a split model). openGguf maps it, no copy. */
  readonly path: string;
  /** Every part's snapshot path (one for a file not split). */
  readonly parts: readonly string[];
  readonly repo: string;
  readonly revision: string;
  readonly commit: string;
  /** Bytes downloaded by this call (0 when everything was cached). */
  readonly downloaded: number;
}

// Parts of a split model downloaded at once.
const PART_CONCURRENCY = 3;

/** `options.offline`, else HF_HUB_OFFLINE as huggingface_hub reads it. */
function isOffline(options: PullOptions): boolean {
  return options.offline ?? ['1', 'true', 'yes', 'on'].includes((process.env.HF_HUB_OFFLINE ?? '').toLowerCase());
}

/**
 * Downloads `hf:ORG/REPO/PATH[@REVISION]` (or `hf:ORG/REPO:QUANT`, the .gguf file of that
 * quantization) into the Hugging Face cache that huggingface_hub and llama.cpp share, and returns
 * its path there. A file already cached is found with no network (unless `refresh`); HF_HUB_OFFLINE
 * resolves from the cache only. One download per blob across processes and threads (the lock file
 * huggingface_hub uses); bytes go to `<blob>.incomplete`, resumed by range after an interruption,
 * and become the blob only once their sha256 matches. A part of a split model pulls every part.
 */
export async function pullModel(uri: string, options: PullOptions = {}): Promise<PulledModel> {
  const root = options.cacheDir ?? hubCacheDir();
  const file = await resolveUri(uri, options, root);
  const cache = new RepoCache(root, file.repo);
  const part = partNameOf(basename(file.path));
  const paths = part === undefined ? [file.path] : Array.from({ length: part.count }, (_, i) => file.path.replace(/[^/]*$/, splitPartName(part.prefix, i + 1, part.count)));
  const progress = new CombinedProgress(paths.length, options.onProgress);
  const results = new Array<{ path: string; commit: string; downloaded: number }>(paths.length);
  const todo = paths.map((_, i) => i);
  // One part failing stops the others (their downloads resume on the next pull).
  const stop = new AbortController();
  let firstError: { error: unknown } | undefined;
  const signal = eitherSignal(options.signal, stop.signal);
  const worker = async () => {
    for (let i = todo.shift(); i !== undefined; i = todo.shift()) {
      // `sha256` is the named file's; the other parts are checked against the Hub's etags.
      const named = paths[i] === file.path;
      const partOptions = { ...options, signal, sha256: named ? options.sha256 : undefined };
      try {
        results[i] = await pullFile(cache, { ...file, path: paths[i]! }, partOptions, (done, total) => progress.report(i, done, total));
      } catch (error) {
        firstError ??= { error: partError(error, named, i) };
        stop.abort(firstError.error);
        throw firstError.error;
      }
    }
  };
  // A part other than the one named, absent on the Hub: the set is incomplete.
  const partError = (error: unknown, named: boolean, i: number): unknown =>
    !named && error instanceof GgufError && error.code === 'HTTP_ERROR' && /HTTP 404\b/.test(error.message)
      ? new GgufError('SPLIT_PART_MISSING', `part ${i + 1} of the split model ${file.repo}/${file.path} is missing on the Hub (${error.message})`, 0)
      : error;
  await Promise.allSettled(Array.from({ length: Math.min(PART_CONCURRENCY, paths.length) }, worker));
  if (firstError !== undefined) throw firstError.error;
  return {
    path: results[0]!.path,
    parts: results.map((r) => r.path),
    repo: file.repo,
    revision: file.revision,
    commit: results[0]!.commit,
    downloaded: results.reduce((n, r) => n + r.downloaded, 0),
  };
}

/** Progress of several downloads as one: the sum of bytes done over the sum of totals. */
class CombinedProgress {
  private readonly done: number[];
  private readonly totals: number[];
  constructor(
    parts: number,
    private readonly onProgress: PullOptions['onProgress'],
  ) {
    this.done = new Array<number>(parts).fill(0);
    this.totals = new Array<number>(parts).fill(0);
  }
  report(part: number, done: number, total: number): void {
    this.done[part] = done;
    this.totals[part] = total;
    this.onProgress?.(sum(this.done), sum(this.totals), this.done.map((done, i) => ({ done, total: this.totals[i]! })));
  }
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/** The file `uri` names; for `hf:ORG/REPO:QUANT`, the .gguf file of that quantization in the repository's listing (or snapshot, offline). */
async function resolveUri(uri: string, options: PullOptions, root: string): Promise<HubFile> {
  const quant = /^hf:([^/:@]+\/[^/:@]+):([A-Za-z0-9_.-]+)(?:@(.+))?$/.exec(uri);
  if (quant === null) {
    const file = parseHubUri(uri);
    if (file === undefined) throw new TypeError(`pullModel: '${uri}' is not a Hub file (hf:ORG/REPO/PATH[@REVISION] or hf:ORG/REPO:QUANT)`);
    return uri.includes('@') || options.revision === undefined ? file : { ...file, revision: options.revision };
  }
  const repo = quant[1]!;
  if (!repo.split('/').every((p) => REPO_PART.test(p))) throw new TypeError(`pullModel: '${repo}' is not ORG/REPO`);
  const revision = quant[3] ?? options.revision ?? 'main';
  const cache = new RepoCache(root, repo);
  const listed = isOffline(options) ? cache.cachedFiles(revision) : await listRepoFiles(repo, revision, options);
  // Paths from the listing are the server's: only those that stay inside the repository.
  const files = listed.filter((path) => {
    try {
      return parseHubUri(`hf:${repo}/${path}`) !== undefined;
    } catch {
      return false;
    }
  });
  const path = pickQuant(files, quant[2]!);
  if (path === undefined) {
    throw new GgufError('FILE_NOT_FOUND', `no .gguf file of quantization ${quant[2]} in ${repo}@${revision}${isOffline(options) ? ' (offline: looked in the cache only)' : ''}; files: ${files.filter((f) => f.endsWith('.gguf')).join(', ') || 'none'}`, 0);
  }
  return { repo, path, revision };
}

/** The repository's files at `revision` (the Hub's tree listing). */
async function listRepoFiles(repo: string, revision: string, options: PullOptions): Promise<string[]> {
  const paths: string[] = [];
  let url: string | undefined = `${hubEndpoint()}/api/models/${repo}/tree/${encodeURIComponent(revision)}?recursive=true`;
  // Pages as the Hub links them (Link: <...>; rel="next"), up to a bound.
  for (let page = 0; url !== undefined && page < MAX_LISTING_PAGES; page++) {
    const listingUrl: string = url;
    const { entries, link } = await hubRequest(listingUrl, options, 'GET', async (response) => {
      if (!response.ok) {
        await response.body?.cancel();
        throw new GgufError('HTTP_ERROR', `${redactUrl(listingUrl)}: HTTP ${response.status}`, 0);
      }
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (!Array.isArray(parsed)) throw new GgufError('BAD_RESPONSE', `${redactUrl(listingUrl)}: the file listing is not a JSON list`, 0);
      return { entries: parsed as Array<{ type?: unknown; path?: unknown } | null>, link: response.headers.get('link') };
    });
    for (const e of entries) if (e?.type === 'file' && typeof e.path === 'string') paths.push(e.path);
    const next = /<([^>]+)>;\s*rel="next"/.exec(link ?? '')?.[1];
    url = next === undefined ? undefined : new URL(next, url).href;
    if (url !== undefined && new URL(url).origin !== new URL(hubEndpoint()).origin) url = undefined;
  }
  return paths;
}

// The most pages of a repository's file listing read (a thousand files each on the Hub).
const MAX_LISTING_PAGES = 100;

/** The file of quantization `quant` (a name part such as Q4_K_M, any case): a single file, else part 1 of a set. */
export function pickQuant(files: readonly string[], quant: string): string | undefined {
  const wanted = new RegExp(`(^|[-._/])${quant.replace(/[.]/g, '\\.')}([-._]|$)`, 'i');
  const matches = files.filter((f) => f.endsWith('.gguf') && wanted.test(basename(f).replace(/\.gguf$/, '')));
  return matches.find((f) => partNameOf(basename(f)) === undefined) ?? matches.find((f) => partNameOf(basename(f))?.index === 1);
}

/**
 * A request to the Hub (its token, never sent elsewhere), redirects not followed, and `read` of its
 * answer, tried again as a range is (withRetries: a failed or broken connection, no answer within
 * `timeoutMs`, 429 and 5xx); what `read` throws as a GgufError is final.
 */
function hubRequest<T>(url: string, options: PullOptions, method: string, read: (response: Response) => Promise<T>): Promise<T> {
  const authorization = hubAuthorization(options.token);
  const fetchFn = options.fetch ?? globalThis.fetch;
  const headers: Record<string, string> = authorization === undefined ? {} : { Authorization: authorization };
  const where = redactUrl(url);
  return withRetries(options, options.signal, where, 0, async (signal) => {
    const response = await fetchFn(url, { method, headers, redirect: 'manual', signal });
    await throwIfRetryableStatus(response, where, 0);
    return read(response);
  });
}

/** What the Hub says of a file: commit, blob name (etag), size, and where its bytes are served. */
interface FileMeta {
  commit: string;
  etag: string;
  size: number;
  location: string;
}

async function fileMeta(file: HubFile, options: PullOptions): Promise<FileMeta> {
  const url = resolveUrl(file);
  const response = await hubRequest(url, options, 'HEAD', async (answer) => {
    await answer.body?.cancel();
    return answer;
  });
  if (response.status >= 400) throw httpError(response.status, redactUrl(url), 0);
  const header = (name: string) => response.headers.get(name)?.replace(/^W\//, '').replace(/"/g, '') ?? undefined;
  const commit = header('x-repo-commit');
  const etag = (header('x-linked-etag') ?? header('etag'))?.toLowerCase();
  const sizeText = header('x-linked-size') ?? header('content-length') ?? '';
  const size = /^\d+$/.test(sizeText) ? Number(sizeText) : NaN;
  const location = response.headers.get('location');
  if (commit === undefined || !isCommit(commit) || etag === undefined || !isBlobName(etag) || !Number.isSafeInteger(size)) {
    throw new GgufError('BAD_RESPONSE', `${redactUrl(url)}: the Hub's answer lacks a commit, a blob etag (sha1 or sha256) or a size (X-Repo-Commit, X-Linked-Etag, X-Linked-Size)`, 0);
  }
  return { commit, etag, size, location: location === null ? url : new URL(location, url).href };
}

/** One file into the cache: its snapshot path, commit and the bytes downloaded. */
async function pullFile(cache: RepoCache, file: HubFile, options: PullOptions, onProgress: (done: number, total: number) => void): Promise<{ path: string; commit: string; downloaded: number }> {
  const cached = options.refresh ? undefined : cache.find(file.revision, file.path);
  if (cached !== undefined || isOffline(options)) {
    if (cached === undefined) {
      throw new GgufError('NOT_CACHED', `offline (HF_HUB_OFFLINE or { offline }) and ${file.repo}/${file.path}@${file.revision} is not in the cache (${cache.folder}: ${cache.commitOf(file.revision) === undefined ? `no refs/${file.revision}` : 'no such file in its snapshot'})`, 0);
    }
    const size = statSync(cached.path).size;
    onProgress(size, size);
    return { ...cached, downloaded: 0 };
  }
  const meta = await fileMeta(file, options);
  const blob = cache.blobPath(meta.etag);
  let downloaded = 0;
  if (!hasBlob(blob, meta.size)) {
    downloaded = await withFileLock(cache.lockPath(meta.etag), async () => (hasBlob(blob, meta.size) ? 0 : download(cache, file, meta, options, onProgress)), options.signal);
  }
  onProgress(meta.size, meta.size);
  const path = cache.link(meta.commit, file.path, meta.etag);
  cache.writeRef(file.revision, meta.commit);
  return { path, commit: meta.commit, downloaded };
}

function hasBlob(blob: string, size: number): boolean {
  return existsSync(blob) && statSync(blob).size === size;
}

/**
 * The blob's bytes into `<blob>.incomplete` (resumed from what is there, by range), hashed as
 * they come; renamed to the blob once complete and checked. Retries resume too.
 */
async function download(cache: RepoCache, file: HubFile, first: FileMeta, options: PullOptions, onProgress: (done: number, total: number) => void): Promise<number> {
  const blob = cache.blobPath(first.etag);
  const incomplete = `${blob}.incomplete`;
  const folder = cache.blobsFolder();
  const expected = (options.sha256 ?? (first.etag.length === 64 ? first.etag : undefined))?.toLowerCase();
  let meta = first;
  let received = 0;
  const attempts = attemptsOf(options);
  let delay = options.backoffMs ?? 500;
  for (let attempt = 1; ; attempt++) {
    const have = existsSync(incomplete) ? Math.min(statSync(incomplete).size, meta.size) : 0;
    const { bavail, bsize } = statfsSync(folder);
    if (bavail * bsize < meta.size - have) {
      throw Object.assign(new Error(`ENOSPC: ${meta.size - have} bytes needed for ${file.repo}/${file.path}, ${bavail * bsize} free in ${folder}`), { code: 'ENOSPC', path: folder });
    }
    try {
      received += await transfer(meta, incomplete, have, options, onProgress);
      break;
    } catch (error) {
      if (!(error instanceof GgufError) || !['NETWORK_ERROR', 'BAD_RESPONSE', 'HTTP_ERROR'].includes(error.code) || attempt >= attempts) throw error;
      if (/HTTP (401|404)\b/.test(error.message)) throw error;
      // An expired signed URL (403), or any other failure: ask the Hub again, then resume.
      await sleep(delay, options.signal);
      delay *= 2;
      meta = await fileMeta(file, options);
      if (meta.etag !== first.etag) throw new GgufError('FILE_CHANGED', `${file.repo}/${file.path}@${file.revision} changed during the download (blob ${first.etag} -> ${meta.etag})`, 0);
    }
  }
  const actual = await sha256Of(incomplete);
  if (expected !== undefined && actual !== expected) {
    rmSync(incomplete, { force: true });
    throw new GgufError('CHECKSUM_MISMATCH', `${file.repo}/${file.path}: sha256 is ${actual}, expected ${expected}; the download was deleted`, 0);
  }
  renameSync(incomplete, blob);
  return received;
}

/** Appends bytes [have, size) to `incomplete`: one GET with Range; returns the bytes written. */
async function transfer(meta: FileMeta, incomplete: string, have: number, options: PullOptions, onProgress: (done: number, total: number) => void): Promise<number> {
  if (have >= meta.size) {
    if (have === 0) await (await open(incomplete, 'w')).close(); // an empty file is complete at once
    return 0;
  }
  const fetchFn = options.fetch ?? globalThis.fetch;
  const hub = new URL(hubEndpoint()).origin;
  const timeoutMs = options.timeoutMs ?? 30_000;
  // No answer, or no byte, within timeoutMs: the request is given up (and resumed by the caller).
  const stalled = new AbortController();
  let idle = setTimeout(() => stalled.abort(), timeoutMs);
  const signal = eitherSignal(options.signal, stalled.signal);
  const stalledError = (at: number) => new GgufError('NETWORK_ERROR', `${redactUrl(meta.location)}: no byte within ${timeoutMs} ms (at byte ${at} of ${meta.size})`, at);
  let response: Response;
  try {
    ({ response } = await request(meta.location, {
      fetch: fetchFn,
      origin: hub,
      authorization: hubAuthorization(options.token),
      headers: { Range: `bytes=${have}-` },
      signal,
      offset: have,
    }));
  } catch (error) {
    clearTimeout(idle);
    options.signal?.throwIfAborted();
    if (stalled.signal.aborted) throw stalledError(have);
    if (error instanceof GgufError) throw error;
    throw new GgufError('NETWORK_ERROR', `${redactUrl(meta.location)}: ${safeMessage(error)}`, have);
  }
  const where = redactUrl(meta.location);
  // A 200 (the server ignored Range) is the whole file again, from byte 0.
  let start: number;
  try {
    ({ start } = await checkRangeResponse(response, where, have));
  } catch (error) {
    clearTimeout(idle);
    throw error;
  }
  const out = await open(incomplete, start === 0 ? 'w' : 'r+');
  let at = start;
  try {
    await out.truncate(start);
    const reader = response.body!.getReader();
    try {
      for (;;) {
        clearTimeout(idle);
        idle = setTimeout(() => stalled.abort(), timeoutMs);
        const { done, value } = await reader.read();
        if (done) break;
        if (at + value.byteLength > meta.size) throw new GgufError('BAD_RESPONSE', `${where}: more bytes than the file's ${meta.size}`, at);
        await out.write(value, 0, value.byteLength, at);
        at += value.byteLength;
        onProgress(at, meta.size);
      }
    } catch (error) {
      options.signal?.throwIfAborted();
      if (stalled.signal.aborted) throw stalledError(at);
      if (error instanceof GgufError) throw error;
      throw new GgufError('NETWORK_ERROR', `${where}: the connection broke at byte ${at} of ${meta.size}: ${safeMessage(error)}`, at);
    } finally {
      clearTimeout(idle);
      await reader.cancel().catch(() => {});
    }
  } finally {
    await out.close();
  }
  if (at < meta.size) throw new GgufError('BAD_RESPONSE', `${where}: the body ended at byte ${at} of ${meta.size}`, at);
  return at - start;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 4 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
