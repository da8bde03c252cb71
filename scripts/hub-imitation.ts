// A Hugging Face Hub imitation on 127.0.0.1 for the network tests and benchmarks: `/{repo}/resolve/{rev}/{path}`
// answers 302 to a CDN on another port with a signed, expiring query, with X-Repo-Commit,
// X-Linked-Etag and X-Linked-Size; the CDN serves ranges. Faults are injected per request.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What to do to one request instead of answering it well. */
export type Fault =
  | 'reset' // destroy the connection after half the body
  | 'short' // end the body early (Content-Length says more)
  | 'ignore-range' // 200 with the whole file
  | 'wrong-range' // a Content-Range for other bytes
  | 'gzip' // a Content-Encoding on the range
  | 'expired' // the CDN's 403 for an expired signature
  | '429' // Too Many Requests, Retry-After: 0
  | '503'
  | '404'
  | 'corrupt' // one byte of the body changed (a checksum mismatch)
  | 'trickle' // the body 1 KiB at once, then 1 KiB every `trickleMs` (100 ms)
  | 'stall' // no answer at all, until the client gives up (its connection closed)
  | 'stall-body' // the headers and 1 KiB of the body, then nothing until the client gives up
  | 'loop'; // a redirect to itself

export interface HubFileEntry {
  bytes: Uint8Array;
}

export interface RequestLog {
  server: 'hub' | 'cdn';
  path: string;
  range: string | undefined;
  authorization: string | undefined;
  status: number;
  bytes: number;
  /** Whether the client closed the connection before the answer was complete. */
  abandoned: boolean;
}

export interface HubServer {
  /** The Hub's address (HF_ENDPOINT). */
  endpoint: string;
  cdn: string;
  /** Files by `repo/path` (revision main, commit `commit`). */
  files: Map<string, HubFileEntry>;
  commit: string;
  log: RequestLog[];
  /** Faults for the next requests, taken in order, per server ('hub' or 'cdn'). */
  faults: { hub: Fault[]; cdn: Fault[] };
  /** A fault for one request by its path (asked before `faults`); undefined for none. */
  faultFor: ((server: 'hub' | 'cdn', path: string) => Fault | undefined) | undefined;
  /** Repositories renamed: the old name answers a relative 307 to the new one, as the Hub does. */
  renamed: Map<string, string>;
  /**
   * Makes `commit` the branch's new head: the files served until now stay served at the old
   * commit (`/resolve/<old commit>/...`); `files` is what the branch serves from now on.
   */
  moveBranch(commit: string): void;
  /** Milliseconds added before answering each request (a far-away server). */
  latencyMs: number;
  /** Milliseconds between the kibibytes of a 'trickle' body. */
  trickleMs: number;
  /** Token the Hub requires (401 without it), or undefined. */
  requireToken: string | undefined;
  /** Seconds a signed CDN URL stays valid. */
  signatureSeconds: number;
  close(): Promise<void>;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

export async function startHubServer(): Promise<HubServer> {
  const state: Omit<HubServer, 'endpoint' | 'cdn' | 'close'> = {
    files: new Map(),
    commit: 'c0ffee0000000000000000000000000000000001',
    log: [],
    faults: { hub: [], cdn: [] },
    latencyMs: 0,
    trickleMs: 100,
    requireToken: undefined,
    signatureSeconds: 3600,
    faultFor: undefined,
    renamed: new Map(),
    moveBranch: (commit: string) => {
      history.set(state.commit, new Map(state.files));
      state.commit = commit;
    },
  };
  // The files of earlier commits (moveBranch), by commit.
  const history = new Map<string, Map<string, HubFileEntry>>();
  const blobs = new Map<string, Uint8Array>();
  const hub = createServer((req, res) => void later(state.latencyMs).then(() => answerHub(req, res)));
  const cdn = createServer((req, res) => void later(state.latencyMs).then(() => answerCdn(req, res)));
  const endpoint = await listen(hub);
  const cdnBase = await listen(cdn);

  function logged(server: 'hub' | 'cdn', req: IncomingMessage, status: number, bytes: number, res?: ServerResponse): RequestLog {
    const entry: RequestLog = { server, path: req.url ?? '', range: req.headers.range, authorization: req.headers.authorization, status, bytes, abandoned: false };
    state.log.push(entry);
    res?.once('close', () => {
      if (!res.writableFinished) entry.abandoned = true;
    });
    return entry;
  }

  /** The fault for this request: by its path first, else the next of the server's queue. */
  function takeFault(server: 'hub' | 'cdn', req: IncomingMessage): Fault | undefined {
    return state.faultFor?.(server, req.url ?? '') ?? state.faults[server].shift();
  }

  /** A 'stall': nothing sent; the request stays open until the client closes it. */
  function stalled(server: 'hub' | 'cdn', req: IncomingMessage, res: ServerResponse, fault: Fault | undefined): boolean {
    if (fault !== 'stall') return false;
    logged(server, req, 0, 0, res);
    res.on('error', () => {});
    return true;
  }

  function answerHub(req: IncomingMessage, res: ServerResponse): void {
    const fault = takeFault('hub', req);
    const url = new URL(req.url ?? '/', endpoint);
    if (stalled('hub', req, res, fault)) return;
    // A renamed repository: a relative redirect to the same request under the new name.
    const named = /^(\/(?:api\/models\/)?)([^/]+\/[^/]+)(\/.*)$/.exec(url.pathname);
    const renamedTo = named === null ? undefined : state.renamed.get(named[2]!);
    if (named !== null && renamedTo !== undefined) {
      res.setHeader('Location', `${named[1]}${renamedTo}${named[3]}${url.search}`);
      return finish('hub', req, res, 307);
    }
    // What @huggingface/hub asks first: POST /api/models/{repo}/paths-info/{rev} { paths }.
    const info = /^\/api\/models\/([^/]+\/[^/]+)\/paths-info\/([^/]+)$/.exec(url.pathname);
    if (info !== null && req.method === 'POST') {
      let body = '';
      req.on('data', (d: Buffer) => (body += d));
      req.on('end', () => {
        const paths = (JSON.parse(body || '{}') as { paths?: string[] }).paths ?? [];
        const entries = paths.flatMap((p) => {
          const f = state.files.get(`${info[1]}/${p}`);
          if (f === undefined) return [];
          const oid = createHash('sha1').update(`blob ${f.bytes.byteLength}\0`).update(f.bytes).digest('hex');
          return [{ type: 'file', path: p, size: f.bytes.byteLength, oid, lfs: { oid: sha256(f.bytes), size: f.bytes.byteLength }, lastCommit: { id: state.commit, title: 'add', date: new Date(0).toISOString() } }];
        });
        for (const e of entries) blobs.set(e.lfs.oid, state.files.get(`${info[1]}/${e.path}`)!.bytes);
        res.setHeader('Content-Type', 'application/json');
        send('hub', req, res, 200, new TextEncoder().encode(JSON.stringify(entries)), undefined);
      });
      return;
    }
    // The file listing: /api/models/{repo}/tree/{rev}?recursive=true
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)$/.exec(url.pathname);
    if (tree !== null) {
      if (answeredStatusFault('hub', req, res, fault)) return;
      const prefix = `${tree[1]}/`;
      const listing = [...state.files].filter(([key]) => key.startsWith(prefix)).map(([key, f]) => ({ type: 'file', path: key.slice(prefix.length), size: f.bytes.byteLength }));
      res.setHeader('Content-Type', 'application/json');
      return send('hub', req, res, 200, new TextEncoder().encode(JSON.stringify(listing)), undefined);
    }
    const m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    // A commit of before moveBranch serves that commit's files; any other revision the branch's.
    const old = m === null ? undefined : history.get(decodeURIComponent(m[2]!));
    const files = old ?? state.files;
    const commit = old === undefined ? state.commit : decodeURIComponent(m![2]!);
    const entry = m === null ? undefined : files.get(`${m[1]}/${decodeURIComponent(m[3]!)}`);
    if (state.requireToken !== undefined && req.headers.authorization !== `Bearer ${state.requireToken}`) return finish('hub', req, res, 401);
    if (fault === 'loop') {
      res.setHeader('Location', url.pathname);
      return finish('hub', req, res, 302);
    }
    if (answeredStatusFault('hub', req, res, fault)) return;
    if (entry === undefined) return finish('hub', req, res, 404);
    const etag = sha256(entry.bytes);
    blobs.set(etag, entry.bytes);
    const expires = Date.now() + state.signatureSeconds * 1000;
    res.setHeader('X-Repo-Commit', commit);
    res.setHeader('X-Linked-Etag', `"${etag}"`);
    res.setHeader('X-Linked-Size', String(entry.bytes.byteLength));
    res.setHeader('ETag', `"${etag}"`);
    res.setHeader('Location', `${cdnBase}/blobs/${etag}?Expires=${expires}&Signature=${sha256(new TextEncoder().encode(`${etag}${expires}`)).slice(0, 16)}`);
    finish('hub', req, res, 302);
  }

  function answerCdn(req: IncomingMessage, res: ServerResponse): void {
    const fault = takeFault('cdn', req);
    const url = new URL(req.url ?? '/', cdnBase);
    if (stalled('cdn', req, res, fault)) return;
    const bytes = blobs.get(url.pathname.replace('/blobs/', ''));
    const expires = Number(url.searchParams.get('Expires'));
    if (bytes === undefined) return finish('cdn', req, res, 404);
    res.setHeader('ETag', `"${url.pathname.replace('/blobs/', '')}"`);
    if (fault === 'expired' || !(expires > Date.now())) return finish('cdn', req, res, 403);
    if (answeredStatusFault('cdn', req, res, fault)) return;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (fault === 'corrupt') {
      const changed = bytes.slice();
      changed[changed.length >> 1]! ^= 0xff;
      return send('cdn', req, res, 200, changed, fault);
    }
    if (m === null || fault === 'ignore-range') return send('cdn', req, res, 200, bytes, fault);
    const start = Number(m[1]);
    const end = Math.min(m[2] === '' ? bytes.byteLength - 1 : Number(m[2]), bytes.byteLength - 1);
    if (start >= bytes.byteLength) {
      res.setHeader('Content-Range', `bytes */${bytes.byteLength}`);
      return finish('cdn', req, res, 416);
    }
    const shown = fault === 'wrong-range' ? `bytes ${start + 1}-${end + 1}/${bytes.byteLength}` : `bytes ${start}-${end}/${bytes.byteLength}`;
    res.setHeader('Content-Range', shown);
    if (fault === 'gzip') res.setHeader('Content-Encoding', 'gzip');
    send('cdn', req, res, 206, bytes.subarray(start, end + 1), fault);
  }

  function send(server: 'hub' | 'cdn', req: IncomingMessage, res: ServerResponse, status: number, body: Uint8Array, fault: Fault | undefined): void {
    res.statusCode = status;
    res.setHeader('Content-Length', String(body.byteLength));
    res.setHeader('Accept-Ranges', 'bytes');
    logged(server, req, status, body.byteLength, res);
    res.on('error', () => {});
    if (fault === 'stall-body') {
      res.write(body.subarray(0, 1024));
      return;
    }
    if (fault === 'reset' || fault === 'short') {
      res.write(body.subarray(0, body.byteLength >> 1), () => (fault === 'reset' ? res.destroy() : res.socket?.end()));
      return;
    }
    res.on('error', () => {});
    if (fault === 'trickle') {
      let sent = 0;
      const step = () => {
        if (res.destroyed || sent >= body.byteLength) {
          clearInterval(timer);
          if (!res.destroyed) res.end();
          return;
        }
        res.write(body.subarray(sent, sent + 1024));
        sent += 1024;
      };
      const timer = setInterval(step, state.trickleMs);
      res.once('close', () => clearInterval(timer));
      step();
      return;
    }
    // Written in pieces, so a client that stops reading is seen to cancel.
    let at = 0;
    const next = () => {
      while (at < body.byteLength) {
        const piece = body.subarray(at, at + (1 << 16));
        at += piece.byteLength;
        if (!res.write(piece)) return void res.once('drain', next);
      }
      res.end();
    };
    res.on('error', () => {});
    next();
  }

  /** A '429' (Retry-After: 0), '503' or '404' fault answered as that status; whether it was one. */
  function answeredStatusFault(server: 'hub' | 'cdn', req: IncomingMessage, res: ServerResponse, fault: Fault | undefined): boolean {
    if (fault !== '429' && fault !== '503' && fault !== '404') return false;
    if (fault === '429') res.setHeader('Retry-After', '0');
    finish(server, req, res, Number(fault));
    return true;
  }

  function finish(server: 'hub' | 'cdn', req: IncomingMessage, res: ServerResponse, status: number): void {
    res.statusCode = status;
    logged(server, req, status, 0);
    res.end();
  }

  return Object.assign(state, {
    endpoint,
    cdn: cdnBase,
    close: async () => {
      hub.closeAllConnections();
      cdn.closeAllConnections();
      await Promise.all([new Promise((r) => hub.close(r)), new Promise((r) => cdn.close(r))]);
    },
  });
}

function later(ms: number): Promise<void> {
  return ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();
}
