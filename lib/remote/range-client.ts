import { REDIRECTS } from '#platform/http';
import { GgufError } from '../errors.js';

/** How to reach a remote file (openGgufRemote's options, less what the parser takes). */
export interface RemoteOptions {
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
  /** Extra request headers (an Authorization header among them goes to the first origin only). */
  headers?: Record<string, string>;
  /** A bearer token; else HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token for hf: URIs and the Hub's endpoint. */
  token?: string;
  /** Aborts every request; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Milliseconds a request may go with nothing received (no answer yet, or no next byte of its
   * body) before it is given up and tried again, from the bytes it has (default 30,000). A slow
   * but steady transfer is never cut off.
   */
  timeoutMs?: number;
  /** Attempts for a request that fails with 429, 5xx or a broken connection (default 4). */
  attempts?: number;
  /** First backoff between attempts, doubled each time, unless the server says Retry-After (default 500 ms). */
  backoffMs?: number;
}

/** A range read's bytes so far, kept across its attempts. */
interface Received {
  out: Uint8Array | undefined;
  filled: number;
}

/** Requests made and bytes received, for benchmarks and tests. */
export interface TransferStats {
  requests: number;
  bytes: number;
}

/** `attempts` as a count: at least 1; one that is not a number at all is a TypeError, not endless tries. */
export function attemptsOf(options: Pick<RemoteOptions, 'attempts'>): number {
  const attempts = options.attempts ?? 4;
  if (typeof attempts !== 'number' || Number.isNaN(attempts)) throw new TypeError(`attempts must be a number, not ${String(attempts)}`);
  return Math.max(1, Math.floor(attempts));
}

const MAX_REDIRECTS = 10;
// The longest Retry-After honoured: past it the request fails rather than sleeping for minutes.
const MAX_RETRY_AFTER_MS = 60_000;

/** A URL as it may appear in an error: no query (a CDN's signed query is a credential), no user info. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

export interface RequestInit {
  fetch: typeof globalThis.fetch;
  /** The origin the credentials are for. */
  origin: string;
  authorization?: string;
  headers?: Record<string, string>;
  method?: string;
  signal?: AbortSignal;
  /** For errors: the byte the request is for. */
  offset?: number;
}

/**
 * One request, redirects followed by hand: the Authorization header (and cookies) go to
 * `origin` only, never to a CDN or another host a redirect names. `resolved` is the last
 * temporary redirect's target (a CDN's signed URL), for later requests of the same file.
 */
export async function request(url: string, init: RequestInit): Promise<{ response: Response; resolved?: string; commit?: string }> {
  let resolved: string | undefined;
  // The Hub names the commit a revision resolved to (X-Repo-Commit) on its answer, a redirect.
  let commit: string | undefined;
  for (let hops = 0; ; hops++) {
    refuseCredentials(url, init.offset);
    if (hops > MAX_REDIRECTS) throw new GgufError('NETWORK_ERROR', `${redactUrl(url)}: more than ${MAX_REDIRECTS} redirects`, init.offset ?? 0);
    const headers: Record<string, string> = { ...init.headers, 'Accept-Encoding': 'identity' };
    if (new URL(url).origin === init.origin) {
      if (init.authorization !== undefined) headers['Authorization'] = init.authorization;
    } else {
      for (const name of Object.keys(headers)) if (name.toLowerCase() === 'authorization' || name.toLowerCase() === 'cookie') delete headers[name];
    }
    const response = await init.fetch(url, { method: init.method ?? 'GET', headers, redirect: REDIRECTS, signal: init.signal });
    // A browser hides redirects from 'manual' (an opaque answer): it follows them itself, and drops
    // the Authorization header on a redirect to another origin; the final URL is reused.
    if (REDIRECTS === 'follow') return { response, resolved: response.redirected && response.url !== '' ? response.url : undefined, commit: response.headers.get('x-repo-commit') ?? undefined };
    const location = response.headers.get('location');
    commit = response.headers.get('x-repo-commit') ?? commit;
    if (response.status < 300 || response.status >= 400 || location === null) return { response, resolved, commit };
    await response.body?.cancel();
    url = new URL(location, url).href;
    if (response.status === 302 || response.status === 303 || response.status === 307) resolved = url;
  }
}

/** A failure worth another attempt (429, 5xx, a connection broken or cut short, a timeout). */
class Retryable extends Error {
  constructor(
    readonly error: GgufError,
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
  }
}

/**
 * A timer that aborts its signal once nothing has been received for `ms`: each `touch()` (a
 * response's headers, a piece of its body) starts the wait again.
 */
class IdleTimeout {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout>;

  constructor(private readonly ms: number) {
    this.timer = this.start();
  }

  private start(): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => this.controller.abort(), this.ms);
    (timer as { unref?: () => void }).unref?.();
    return timer;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  readonly touch = (): void => {
    if (this.controller.signal.aborted) return;
    // Node's timers restart in place; a browser's are numbers: cleared and set again.
    const timer = this.timer as { refresh?: () => void };
    if (typeof timer.refresh === 'function') timer.refresh();
    else {
      clearTimeout(this.timer);
      this.timer = this.start();
    }
  };

  clear(): void {
    clearTimeout(this.timer);
  }
}

/**
 * `once` tried up to `attempts` times, each given a signal that aborts when nothing has been
 * received for `timeoutMs` (`once` calls `touch` as bytes arrive, so a slow but steady transfer
 * is never cut off): a Retryable (throwIfRetryableStatus, a body cut short), a connection that
 * fails or breaks, and such a stall are tried again after the backoff (doubling from `backoffMs`)
 * or the server's Retry-After; any other GgufError, or `signal` aborting, ends it at once.
 */
export async function withRetries<T>(options: RemoteOptions, signal: AbortSignal | undefined, where: string, offset: number, once: (signal: AbortSignal, touch: () => void) => Promise<T>): Promise<T> {
  const attempts = attemptsOf(options);
  const timeoutMs = options.timeoutMs ?? 30_000;
  let delay = options.backoffMs ?? 500;
  for (let attempt = 1; ; attempt++) {
    const idle = new IdleTimeout(timeoutMs);
    let failure: Retryable;
    try {
      return await once(eitherSignal(signal, idle.signal), idle.touch);
    } catch (error) {
      signal?.throwIfAborted();
      if (idle.signal.aborted) failure = new Retryable(new GgufError('NETWORK_ERROR', `${where}: no byte within ${timeoutMs} ms`, offset));
      else if (error instanceof Retryable) failure = error;
      else if (error instanceof GgufError) throw error;
      // fetch's TypeError: the connection failed or was reset.
      else failure = new Retryable(new GgufError('NETWORK_ERROR', `${where}: ${safeMessage(error)}${causeOf(error)}`, offset));
    } finally {
      idle.clear();
    }
    if (attempt >= attempts) throw failure.error;
    await sleep(failure.retryAfterMs ?? delay, signal);
    delay *= 2;
  }
}

export const CREDENTIALS_REFUSED = 'the URL carries a user name or password';

/**
 * A URL with a user name or password: fetch refuses it (a TypeError quoting it, password and
 * all), so it is refused here, before any request, with the credentials left out; never retried.
 */
export function refuseCredentials(url: string, offset = 0): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return; // fetch says what is wrong with it
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new GgufError('HTTP_ERROR', `${redactUrl(url)}: ${CREDENTIALS_REFUSED}, which fetch does not send (not shown here); give a token ({ token }, HF_TOKEN) or an Authorization header instead`, offset);
  }
}

/** A 429 or 5xx answer, its body let go, thrown as a Retryable HTTP_ERROR (with the server's Retry-After). */
export async function throwIfRetryableStatus(response: Response, where: string, offset: number): Promise<void> {
  if (response.status !== 429 && response.status < 500) return;
  await response.body?.cancel();
  throw new Retryable(new GgufError('HTTP_ERROR', `${where}: HTTP ${response.status}`, offset), retryAfter(response.headers.get('retry-after')));
}

/**
 * Byte ranges of one file over HTTP(S): redirects followed by hand (an Authorization header is
 * sent to the first origin only; a 302's target, such as a CDN's signed URL, is reused for later
 * ranges and resolved again once when it answers 403), 429/5xx and broken connections retried
 * with backoff, every response checked against the range asked for.
 */
export class RangeClient {
  /** The file's size, known after the first response. */
  size: number | undefined;
  readonly stats: TransferStats = { requests: 0, bytes: 0 };
  private resolved: string | undefined;
  /** The commit the Hub said the file's revision is at (X-Repo-Commit), once it has answered. */
  commit: string | undefined;
  private readonly origin: string;
  private readonly fetchFn: typeof globalThis.fetch;

  constructor(
    readonly url: string,
    private readonly options: RemoteOptions & { authorization?: string } = {},
  ) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`openGgufRemote: ${redactUrl(url)} is not an http(s) URL`);
    this.origin = parsed.origin;
    // Called as a function, never as this client's method: a browser's fetch throws 'Illegal
    // invocation' unless `this` is the window (or undefined).
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /**
   * Bytes [offset, offset + length) of the file; fewer only where the file ends first. An attempt
   * that breaks or stalls part way keeps what it received: the next asks for the rest only.
   */
  read(offset: number, length: number, signal = this.options.signal): Promise<Uint8Array> {
    const got: Received = { out: undefined, filled: 0 };
    return withRetries(this.options, signal, redactUrl(this.url), offset, async (attemptSignal, touch) => {
      const end = this.size === undefined ? offset + length : Math.min(offset + length, this.size);
      const from = offset + got.filled;
      if (end <= from) return got.out?.subarray(0, got.filled) ?? new Uint8Array(0);
      const response = await this.get(`bytes=${from}-${end - 1}`, attemptSignal, from);
      touch();
      return this.body(response, offset, end, got, attemptSignal, touch);
    });
  }

  /** The response to a GET of `range`, redirects followed, from the resolved URL where there is one. */
  private async get(range: string, signal: AbortSignal, offset: number): Promise<Response> {
    const counted: typeof globalThis.fetch = (input, options) => {
      this.stats.requests++;
      return this.fetchFn(input, options);
    };
    const init = { fetch: counted, origin: this.origin, authorization: this.options.authorization, headers: { ...this.options.headers, Range: range }, signal, offset };
    let { response, resolved, commit } = await request(this.resolved ?? this.url, init);
    // An expired signed URL: resolve it again from the original, once.
    if (response.status === 403 && this.resolved !== undefined) {
      await response.body?.cancel();
      this.resolved = undefined;
      ({ response, resolved, commit } = await request(this.url, init));
    }
    if (resolved !== undefined) this.resolved = resolved;
    if (commit !== undefined && /^[0-9a-f]{40}$/.test(commit)) this.commit ??= commit;
    return response;
  }

  /**
   * The bytes [offset, end) into `got`, from `response` to a request for [offset + got.filled,
   * end), checked against what was asked; what arrives before a failure stays in `got`.
   */
  private async body(response: Response, offset: number, end: number, got: Received, signal: AbortSignal, touch: () => void): Promise<Uint8Array> {
    const where = redactUrl(this.url);
    const from = offset + got.filled;
    await throwIfRetryableStatus(response, where, from);
    if (response.status === 416) {
      await response.body?.cancel();
      // `bytes */SIZE`: the range starts at or past the end of the file (an empty file, for one):
      // the read has what there is, as a local read would.
      const total = /^bytes \*\/(\d+)$/.exec(response.headers.get('content-range') ?? '')?.[1];
      if (total !== undefined && Number(total) <= from) {
        this.noteSize(Number(total), from);
        return (got.out ?? new Uint8Array(0)).subarray(0, got.filled);
      }
      throw new GgufError('BAD_RESPONSE', `${where}: range ${from}-${end - 1} is past the end of the file (HTTP 416)`, from);
    }
    const { start, total } = await checkRangeResponse(response, where, from, end);
    if (total !== undefined) this.noteSize(total, from);
    // A 200 (the server ignored Range) sends the whole file: read it up to `end`, then stop.
    const skip = from - start;
    const want = Math.min(end, this.size ?? end) - offset;
    const out = (got.out ??= new Uint8Array(want));
    const limit = Math.min(want, out.byteLength);
    let seen = 0;
    const reader = response.body!.getReader();
    try {
      while (got.filled < limit) {
        signal.throwIfAborted();
        const { done, value } = await reader.read();
        if (done) break;
        touch();
        this.stats.bytes += value.byteLength;
        // Bytes before the range (a 200) are passed over.
        const skipHere = Math.max(0, skip - seen);
        seen += value.byteLength;
        if (skipHere >= value.byteLength) continue;
        const piece = value.subarray(skipHere, skipHere + (limit - got.filled));
        out.set(piece, got.filled);
        got.filled += piece.byteLength;
      }
    } catch (error) {
      signal.throwIfAborted();
      throw new Retryable(new GgufError('NETWORK_ERROR', `${where}: the connection broke after ${got.filled} of ${want} bytes: ${safeMessage(error)}`, offset + got.filled));
    } finally {
      await reader.cancel().catch(() => {});
    }
    if (got.filled < limit) throw new Retryable(new GgufError('BAD_RESPONSE', `${where}: the body ended after ${got.filled} of ${want} bytes`, offset + got.filled));
    return out.subarray(0, limit);
  }

  private noteSize(size: number, offset: number): void {
    if (this.size !== undefined && this.size !== size) {
      throw new GgufError('FILE_CHANGED', `${redactUrl(this.url)}: the file was ${this.size} bytes, now the server says ${size}`, offset);
    }
    this.size = size;
  }
}

/** HTTP_ERROR for an error status; 401 and 403 say a token may be what is missing. */
export function httpError(status: number, where: string, offset: number): GgufError {
  const hint = status === 401 || status === 403 ? ' (a gated or private repository needs a token: HF_TOKEN or { token })' : '';
  return new GgufError('HTTP_ERROR', `${where}: HTTP ${status}${hint}`, offset);
}

/**
 * Checks that `response` carries the file's bytes from `from` (up to `end`, when given, or the
 * file's end): a 206 whose Content-Range starts there (and ends there), or a 200 (the server
 * ignored Range: the whole file); no Content-Encoding. Returns the file offset of its first byte
 * and the file's size when it says; otherwise cancels the body and throws HTTP_ERROR or
 * BAD_RESPONSE.
 */
export async function checkRangeResponse(response: Response, where: string, from: number, end?: number): Promise<{ start: number; total?: number }> {
  const fail = async (error: GgufError) => {
    await response.body?.cancel();
    return error;
  };
  if (response.status !== 200 && response.status !== 206) throw await fail(httpError(response.status, where, from));
  const encoding = response.headers.get('content-encoding');
  if (encoding !== null && encoding !== 'identity') {
    throw await fail(new GgufError('BAD_RESPONSE', `${where}: the server encoded a byte range (Content-Encoding: ${encoding}); ranges of an encoded body are not the file's bytes`, from));
  }
  if (response.status === 200) {
    const length = response.headers.get('content-length');
    return { start: 0, total: length === null ? undefined : Number(length) };
  }
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(response.headers.get('content-range') ?? '');
  const total = m === null || m[3] === '*' ? undefined : Number(m[3]);
  const last = end === undefined ? undefined : Math.min(end, total ?? end) - 1;
  if (m === null || Number(m[1]) !== from || (last !== undefined && Number(m[2]) !== last)) {
    const asked = `${from}-${end === undefined ? '' : end - 1}`;
    throw await fail(new GgufError('BAD_RESPONSE', `${where}: asked for bytes ${asked}, the server sent Content-Range '${response.headers.get('content-range') ?? ''}'`, from));
  }
  return { start: from, total };
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date), bounded. */
function retryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS) : undefined;
}

/**
 * An error's message fit to repeat: fetch quotes a header value it refuses, so any credential in
 * it is masked, and so is any URL's query.
 */
export function safeMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@'"]*@/gi, '$1')
    .replace(/(Bearer|Basic|token)\s*[:=]?\s*\S+/gi, '$1 ***').replace(/(https?:\/\/[^\s?'"]+)\?\S*/g, '$1');
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code !== undefined ? ` (${cause.code})` : cause?.message !== undefined ? ` (${cause.message})` : '';
}

/** A signal that aborts when `caller`'s does (if there is one) or `own` does. */
export function eitherSignal(caller: AbortSignal | undefined, own: AbortSignal): AbortSignal {
  return caller === undefined ? own : AbortSignal.any([caller, own]);
}

/** A wait of `ms` that an abort ends at once (rejecting with its reason). */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
