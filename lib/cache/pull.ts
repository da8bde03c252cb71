import { createHash } from 'node:crypto';
import { createReadStream, existsSync, renameSync, rmSync, statSync, statfsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import { GgufError } from '../errors.js';
import { partNameOf } from '../file/split.js';
import { splitPartName } from '../format/write-split.js';
import { hubAuthorization, hubEndpoint, parseHubUri, REPO_PART, resolveUrl, type HubFile } from '../remote/hub.js';
import { attemptsOf, checkRangeResponse, CREDENTIALS_REFUSED, eitherSignal, httpError, redactUrl, refuseCredentials, request, safeMessage, sleep, throwIfRetryableStatus, withRetries, type RemoteOptions } from '../remote/range-client.js';
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
  // Every part of a split set at one commit: the revision resolved once, before any part.
  const commit = part === undefined ? undefined : await setCommit(cache, file, paths, options);
  const partRevision = commit ?? file.revision;
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
        results[i] = await pullFile(cache, { ...file, path: paths[i]!, revision: partRevision }, partOptions, (done, total) => progress.report(i, done, total));
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
  if (commit !== undefined) cache.writeRef(file.revision, commit);
  return {
    path: results[0]!.path,
    parts: results.map((r) => r.path),
    repo: file.repo,
    revision: file.revision,
    commit: results[0]!.commit,
    downloaded: results.reduce((n, r) => n + r.downloaded, 0),
  };
}

/**
 * The commit every part of a split set is pulled at: the one `file.revision` names in the cache
 * when every part is there (and no refresh), else the Hub's answer for the named part (a branch
 * that moves meanwhile cannot mix two commits); undefined to take each part from the cache
 * (offline, or the Hub unreachable: pullFile falls back to the cache as huggingface_hub does).
 */
async function setCommit(cache: RepoCache, file: HubFile, paths: readonly string[], options: PullOptions): Promise<string | undefined> {
  if (isCommit(file.revision)) return file.revision;
  if (isOffline(options)) return undefined;
  const cached = cache.commitOf(file.revision);
  if (!options.refresh && cached !== undefined && paths.every((path) => cache.find(cached, path) !== undefined)) return cached;
  try {
    return (await fileMeta(file, options)).commit;
  } catch (error) {
    if (unreachable(error)) return undefined;
    throw error;
  }
}

/**
 * A failure that says the Hub cannot be reached now (no connection, no answer, 429 or 5xx) rather
 * than that the file is not there: a cached copy is used instead, as huggingface_hub uses it.
 */
function unreachable(error: unknown): boolean {
  return error instanceof GgufError && (error.code === 'NETWORK_ERROR' || (error.code === 'HTTP_ERROR' && /HTTP (429|5\d\d)\b/.test(error.message)));
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
  const offline = isOffline(options);
  let listed: string[];
  try {
    listed = offline ? cache.cachedFiles(revision) : await listRepoFiles(repo, revision, options);
  } catch (error) {
    // The Hub unreachable: the cached snapshot's files, as huggingface_hub falls back to them.
    const cached = unreachable(error) ? pickQuant(insideRepo(repo, cache.cachedFiles(revision)), quant[2]!) : undefined;
    if (cached === undefined) throw error;
    return { repo, path: cached, revision };
  }
  const files = insideRepo(repo, listed);
  const path = pickQuant(files, quant[2]!);
  if (path === undefined) {
    const ggufs = files.filter((f) => f.endsWith('.gguf'));
    const shown = ggufs.length <= LISTED_IN_ERRORS ? ggufs.join(', ') : `${ggufs.slice(0, LISTED_IN_ERRORS).join(', ')} and ${ggufs.length - LISTED_IN_ERRORS} more`;
    // Offline, a file not in the cache may well be on the Hub: NOT_CACHED, as for a /PATH.
    if (offline) throw new GgufError('NOT_CACHED', `offline (HF_HUB_OFFLINE or { offline }) and no .gguf file of quantization ${quant[2]} of ${repo}@${revision} is in the cache (${cache.folder}); cached: ${shown || 'none'}`, 0);
    throw new GgufError('FILE_NOT_FOUND', `no .gguf file of quantization ${quant[2]} in ${repo}@${revision}; files: ${shown || 'none'}`, 0);
  }
  return { repo, path, revision };
}

// The most file names an error lists.
const LISTED_IN_ERRORS = 20;

/** Paths from a listing (the server's) or the cache that stay inside the repository. */
function insideRepo(repo: string, paths: readonly string[]): string[] {
  return paths.filter((path) => {
    try {
      return parseHubUri(`hf:${repo}/${path}`) !== undefined;
    } catch {
      return false;
    }
  });
}

/** The repository's files at `revision` (the Hub's tree listing). */
async function listRepoFiles(repo: string, revision: string, options: PullOptions): Promise<string[]> {
  const paths: string[] = [];
  let url: string | undefined = `${hubEndpoint()}/api/models/${repo}/tree/${encodeURIComponent(revision)}?recursive=true`;
  // Pages as the Hub links them (Link: <...>; rel="next"), up to a bound.
  for (let page = 0; url !== undefined && page < MAX_LISTING_PAGES; page++) {
    const listingUrl: string = url;
    const { entries, link, from } = await hubRequest(listingUrl, options, 'GET', async (response, touch, from) => {
      if (!response.ok) {
        await response.body?.cancel();
        throw new GgufError('HTTP_ERROR', `${redactUrl(from)}: HTTP ${response.status}`, 0);
      }
      const text = await boundedText(response, redactUrl(from), MAX_LISTING_PAGE_BYTES, touch);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (!Array.isArray(parsed)) throw new GgufError('BAD_RESPONSE', `${redactUrl(from)}: the file listing is not a JSON list`, 0);
      return { entries: parsed as Array<{ type?: unknown; path?: unknown } | null>, link: response.headers.get('link'), from };
    });
    for (const e of entries) if (e?.type === 'file' && typeof e.path === 'string') paths.push(e.path);
    const next = /<([^>]+)>;\s*rel="next"/.exec(link ?? '')?.[1];
    url = next === undefined ? undefined : new URL(next, from).href;
    if (url !== undefined && new URL(url).origin !== new URL(hubEndpoint()).origin) url = undefined;
  }
  return paths;
}

// The most pages of a repository's file listing read (a thousand files each on the Hub).
const MAX_LISTING_PAGES = 100;
/**
 * The longest page of a file listing read (the Hub's thousand entries are some 300 KB): a longer
 * one is BAD_RESPONSE rather than a body read whole into memory, however large.
 */
export const MAX_LISTING_PAGE_BYTES = 8 << 20;

/** A response's body as text, up to `limit` bytes (BAD_RESPONSE past it, the rest not read). */
async function boundedText(response: Response, where: string, limit: number, touch: () => void): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const pieces: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      touch();
      length += value.byteLength;
      if (length > limit) throw new GgufError('BAD_RESPONSE', `${where}: a page of the file listing is longer than ${limit} bytes`, 0);
      pieces.push(value);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(pieces, length).toString('utf8');
}

/**
 * The file of quantization `quant` (a name part such as Q4_K_M, any case): a single file, else
 * part 1 of a set. A multimodal projector (a file named mmproj*) is no model: it is picked only
 * when `quant` asks for one (`mmproj-F16`, `mmproj`), as llama.cpp's -hf keeps it apart.
 */
export function pickQuant(files: readonly string[], quant: string): string | undefined {
  const projector = /^mmproj(?:[-._]|$)/i.test(quant);
  const name = projector ? quant.replace(/^mmproj[-._]?/i, '') : quant;
  const wanted = new RegExp(`(^|[-._/])${name.replace(/[.]/g, '\\.')}([-._]|$)`, 'i');
  const isProjector = (f: string) => /(^|[-._])mmproj([-._]|$)/i.test(basename(f));
  const matches = files.filter((f) => f.endsWith('.gguf') && isProjector(f) === projector && (name === '' || wanted.test(basename(f).replace(/\.gguf$/, ''))));
  return matches.find((f) => partNameOf(basename(f)) === undefined) ?? matches.find((f) => partNameOf(basename(f))?.index === 1);
}

/**
 * A request to the Hub (its token, never sent elsewhere), redirects not followed, and `read` of its
 * answer, tried again as a range is (withRetries: a failed or broken connection, no answer within
 * `timeoutMs`, 429 and 5xx); what `read` throws as a GgufError is final.
 */
function hubRequest<T>(url: string, options: PullOptions, method: string, read: (response: Response, touch: () => void, from: string) => Promise<T>): Promise<T> {
  const authorization = hubAuthorization(options.token);
  const fetchFn = options.fetch ?? globalThis.fetch;
  const headers: Record<string, string> = authorization === undefined ? {} : { Authorization: authorization };
  return withRetries(options, options.signal, redactUrl(url), 0, async (signal, touch) => {
    for (let target = url, hops = 0; ; hops++) {
      refuseCredentials(target);
      const response = await fetchFn(target, { method, headers, redirect: 'manual', signal });
      touch();
      // A relative redirect is the Hub's own (a renamed repository): followed, as huggingface_hub
      // follows it; an absolute one (a CDN) is the answer, its Location the file's bytes.
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location !== null && isRelative(location, target) && hops < MAX_HUB_REDIRECTS) {
        await response.body?.cancel();
        target = new URL(location, target).href;
        continue;
      }
      await throwIfRetryableStatus(response, redactUrl(target), 0);
      return read(response, touch, target);
    }
  });
}

// The most relative redirects of the Hub followed for one request.
const MAX_HUB_REDIRECTS = 10;

/** A Location with no scheme that stays on the same server (not `//host`, nor `/\\host`, which URL parsing makes a host). */
function isRelative(location: string, from: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(location) && new URL(location, from).origin === new URL(from).origin;
}

/** What the Hub says of a file: commit, blob name (etag), size, and where its bytes are served. */
interface FileMeta {
  commit: string;
  etag: string;
  size: number;
  location: string;
}

async function fileMeta(file: HubFile, options: PullOptions): Promise<FileMeta> {
  const { response, url } = await hubRequest(resolveUrl(file), options, 'HEAD', async (answer, _touch, from) => {
    await answer.body?.cancel();
    return { response: answer, url: from };
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
  const cached = cache.find(file.revision, file.path);
  const fromCache = (found: { path: string; commit: string }) => {
    const size = statSync(found.path).size;
    onProgress(size, size);
    return { ...found, downloaded: 0 };
  };
  if ((cached !== undefined && !options.refresh) || isOffline(options)) {
    if (cached === undefined) {
      throw new GgufError('NOT_CACHED', `offline (HF_HUB_OFFLINE or { offline }) and ${file.repo}/${file.path}@${file.revision} is not in the cache (${cache.folder}: ${cache.commitOf(file.revision) === undefined ? `no refs/${file.revision}` : 'no such file in its snapshot'})`, 0);
    }
    return fromCache(cached);
  }
  let meta: FileMeta;
  try {
    meta = await fileMeta(file, options);
  } catch (error) {
    // A refresh with the Hub unreachable: the cached copy, as huggingface_hub returns it.
    if (cached !== undefined && unreachable(error)) return fromCache(cached);
    throw error;
  }
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
      if (/HTTP (401|404)\b/.test(error.message) || error.message.includes(CREDENTIALS_REFUSED)) throw error;
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
