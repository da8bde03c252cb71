import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeHyperparametersJson, writeSummaryJson } from '../file/summary-json.js';
import { canDequantize } from '../dequant/dequantize.js';
import { GgufError } from '../errors.js';
import type { GgufFile } from '../file/gguf-file.js';
import type { GgufTensor } from '../file/tensor.js';
import { packageRoot } from '../package-root.js';
import { COMMON_HEADERS, hostAllowed, newAccessToken, PAGE_POLICY, tokenCookie, tokenOf } from './access.js';
import { layerMap, type LayerMap } from './layer-map.js';
import { arrayPage, metadataEntry, metadataKeys, metadataPage, type ArrayPage } from './metadata-api.js';
import { SORT_KEYS, TensorIndex } from './tensor-index.js';
import { DEFAULT_SAMPLE_LIMIT, samplePlan, tensorStats, type TensorStats } from './tensor-stats.js';
import { hasChatTemplates, renderSampleChat, tokenize, tokenizerOf } from './text-features.js';

export interface ViewServerOptions {
  /** Port on 127.0.0.1; 0 or undefined: a free one. */
  port?: number;
  /** What the page calls the model (the path or URI given); defaults to the file's first part. */
  source?: string;
  /** Values past which statistics come from a sample (default 16M). */
  sampleLimit?: number;
  /** The access token (default: 32 random bytes). */
  token?: string;
}

export interface ViewServer {
  /** http://127.0.0.1:PORT/?token=T */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** Stops listening and drops open connections; the file stays open (its owner closes it). */
  close(): Promise<void>;
}

/** The page's own files, read once at start: nothing else of the disk is ever served. */
const ASSETS: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'view.js': 'text/javascript; charset=utf-8',
  'view.css': 'text/css; charset=utf-8',
};

function loadAssets(): Map<string, { type: string; body: Buffer }> {
  const dir = join(packageRoot(), 'lib', 'view', 'page');
  return new Map(Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(join(dir, name)) }]));
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A whole number from the query within [0, max], or `fallback`. */
function intParam(url: URL, name: string, fallback: number, max: number): number {
  const text = url.searchParams.get(name);
  if (text === null || text === '') return fallback;
  if (!/^\d{1,15}$/.test(text)) throw new HttpError(400, 'BAD_REQUEST', `${name} must be a whole number`);
  return Math.min(max, Number(text));
}

/**
 * Serves `file` read-only to a page on 127.0.0.1: the page's assets and a JSON API (see
 * docs/api.md). Every request needs the Host this server is reached by (403 otherwise) and the
 * token, in the query or in the cookie the page's first load sets (401 otherwise).
 */
export async function startViewServer(file: GgufFile, options: ViewServerOptions = {}): Promise<ViewServer> {
  const assets = loadAssets();
  const token = options.token ?? newAccessToken();
  const sampleLimit = options.sampleLimit ?? DEFAULT_SAMPLE_LIMIT;
  const source = options.source ?? file.parts[0]?.path ?? 'model';
  const remote = file.mode === 'remote';

  // Computed on first use and kept: the header does not change while the server runs.
  let summaryJson: string | undefined;
  let index: TensorIndex | undefined;
  let layers: LayerMap | undefined;
  const stats = new Map<number, Promise<TensorStats>>();
  // One statistics job at a time: each holds up to sampleLimit floats (64 MiB at the default).
  let statsQueue: Promise<unknown> = Promise.resolve();

  const tensorIndex = () => (index ??= new TensorIndex(file));
  let tokenizerState: ReturnType<typeof tokenizerOf> | undefined;
  const textTokenizer = () => (tokenizerState ??= tokenizerOf(file));

  function summary(): string {
    if (summaryJson !== undefined) return summaryJson;
    const pieces: string[] = [];
    // What `inspect --json` prints, less the metadata and the tensor table (paged by their own endpoints).
    pieces.push(`{"version":${file.version},"endian":"${file.endian}","alignment":${file.alignment},"dataOffset":${file.dataOffset},"fileSize":${file.fileSize}`);
    if (file.parts.length > 1) pieces.push(`,"parts":${JSON.stringify(file.parts.map((p) => ({ path: p.path, size: p.size, dataOffset: p.dataOffset, tensorCount: p.tensorCount })))}`);
    writeSummaryJson(file, (chunk) => pieces.push(chunk));
    writeHyperparametersJson(file, (chunk) => pieces.push(chunk));
    const text = textTokenizer();
    const features = { tokenizer: 'tokenizer' in text, ...('why' in text ? { tokenizerNote: text.why } : {}), chatTemplate: hasChatTemplates(file) };
    pieces.push(`,"view":${JSON.stringify({ source, mode: file.mode, remote, tensorCount: file.tensorCount, metadataCount: file.metadata.size, features, sampleLimit })}}`);
    return (summaryJson = pieces.join(''));
  }

  /** The tensor a request names: `index` (its place in file order) or `name` (any name, `.` and `..` too: a query value is not a path segment). */
  function tensorOf(url: URL): { i: number; tensor: GgufTensor } {
    const name = url.searchParams.get('name');
    let i: number;
    if (name !== null) {
      i = tensorIndex().find(name);
      if (i < 0) throw new HttpError(404, 'NOT_FOUND', `no tensor named ${JSON.stringify(name)}`);
    } else {
      i = intParam(url, 'index', -1, Number.MAX_SAFE_INTEGER);
      if (i < 0) throw new HttpError(400, 'BAD_REQUEST', 'a tensor is named by index or name');
      if (i >= tensorIndex().size) throw new HttpError(404, 'NOT_FOUND', `no tensor ${i} (the file has ${tensorIndex().size})`);
    }
    return { i, tensor: file.tensor(tensorIndex().row(i).name)! };
  }

  function tensorDetail(i: number, t: GgufTensor): object {
    const plan = samplePlan(t, sampleLimit);
    return {
      ...tensorIndex().row(i),
      nelements: t.nelements,
      fileOffset: t.fileOffset,
      byteRange: [t.fileOffset, t.fileOffset + t.nbytes],
      blockSize: t.ggmlType.blockSize,
      typeSize: t.ggmlType.typeSize,
      rows: t.rows,
      rowLength: t.rowLength,
      canDequantize: canDequantize(t.type),
      remote,
      // What the statistics read: the whole tensor, or the sampled rows.
      statsBytes: plan === undefined ? t.nbytes : plan.sample.runStarts.length * plan.sample.rowsPerRun * (t.nbytes / plan.rows),
      statsSampled: plan !== undefined,
    };
  }

  function statsOf(i: number, tensor: GgufTensor): Promise<TensorStats> {
    let job = stats.get(i);
    if (job === undefined) {
      job = statsQueue.then(() => tensorStats(tensor, sampleLimit));
      statsQueue = job.catch(() => undefined);
      // A failure (a network error) is not kept: opening the tensor again tries again.
      job.catch(() => stats.delete(i));
      stats.set(i, job);
    }
    return job;
  }

  /** The metadata key a request names: `index` (its place in file order; any key, however long) or `key`. */
  function metadataIndexOf(url: URL): number {
    const keys = metadataKeys(file);
    const key = url.searchParams.get('key');
    if (key !== null) {
      const index = keys.indexOf(key);
      if (index < 0) throw new HttpError(404, 'NOT_FOUND', `no key ${JSON.stringify(key)}`);
      return index;
    }
    const index = intParam(url, 'index', -1, Number.MAX_SAFE_INTEGER);
    if (index < 0) throw new HttpError(400, 'BAD_REQUEST', 'a key is named by index or key');
    if (index >= keys.length) throw new HttpError(404, 'NOT_FOUND', `no key ${index} (the file has ${keys.length})`);
    return index;
  }

  async function api(path: string, url: URL): Promise<string> {
    if (path === '/api/summary') return summary();
    if (path === '/api/tensors') {
      const sort = url.searchParams.get('sort') || 'index';
      if (!SORT_KEYS.includes(sort.replace(/^-/, '') as never)) throw new HttpError(400, 'BAD_REQUEST', `sort is one of ${SORT_KEYS.join(', ')} (a leading - for descending)`);
      return JSON.stringify(tensorIndex().query(url.searchParams.get('filter') ?? '', sort, intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER), intParam(url, 'limit', 100, 1000)));
    }
    if (path === '/api/tensor') {
      const { i, tensor } = tensorOf(url);
      return JSON.stringify(tensorDetail(i, tensor));
    }
    if (path === '/api/tensor/stats') {
      const { i, tensor: t } = tensorOf(url);
      const result = await statsOf(i, t);
      return JSON.stringify({ tensor: t.name, type: t.type, ...result });
    }
    if (path === '/api/layers') return JSON.stringify((layers ??= layerMap(tensorIndex())));
    if (path === '/api/metadata') return metadataPage(file, intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER));
    if (path === '/api/metadata/entry') {
      const index = metadataIndexOf(url);
      return JSON.stringify(metadataEntry(file, index));
    }
    if (path === '/api/metadata/array') {
      const index = metadataIndexOf(url);
      const offset = intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER);
      // Where a STRING array's walk resumes: element `from` (default: offset) at byte `at`.
      const cursor = url.searchParams.has('at') ? { from: intParam(url, 'from', offset, offset), at: intParam(url, 'at', 0, Number.MAX_SAFE_INTEGER) } : undefined;
      let page: ArrayPage | undefined;
      try {
        page = arrayPage(file, index, url.searchParams.get('filter') ?? '', offset, intParam(url, 'limit', 100, 1000), cursor);
      } catch (error) {
        if (error instanceof RangeError) throw new HttpError(400, 'BAD_REQUEST', 'at is not the position of an element (give the nextAt of the answer before)');
        throw error;
      }
      if (page === undefined) throw new HttpError(404, 'NOT_FOUND', `key ${index} is not an array`);
      return JSON.stringify(page);
    }
    if (path === '/api/tokenize') {
      const state = textTokenizer();
      if ('why' in state) throw new HttpError(501, 'NOT_AVAILABLE', state.why);
      const text = url.searchParams.get('text') ?? '';
      if (text.length > 100_000) throw new HttpError(400, 'BAD_REQUEST', 'text is limited to 100,000 characters');
      return JSON.stringify(tokenize(state.tokenizer, text, url.searchParams.get('special') === '1'));
    }
    if (path === '/api/chat') {
      if (!hasChatTemplates(file)) throw new HttpError(501, 'NOT_AVAILABLE', 'this file has no chat template (tokenizer.chat_template)');
      return JSON.stringify(renderSampleChat(file));
    }
    throw new HttpError(404, 'NOT_FOUND', 'no such endpoint');
  }

  let port = 0;
  const send = (response: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) => {
    response.writeHead(status, { ...COMMON_HEADERS, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra });
    response.end(response.req.method === 'HEAD' ? undefined : body);
  };
  const sendError = (response: ServerResponse, status: number, code: string, message: string) =>
    send(response, status, 'application/json; charset=utf-8', JSON.stringify({ error: { code, message } }));

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!hostAllowed(request, port)) return sendError(response, 403, 'FORBIDDEN', 'this server answers only to 127.0.0.1 and localhost');
    let url: URL;
    try {
      url = new URL(request.url ?? '/', `http://127.0.0.1:${port}`);
    } catch {
      return sendError(response, 400, 'BAD_REQUEST', 'a URL that does not parse');
    }
    const from = tokenOf(request, url, port, token);
    if (from === undefined) return sendError(response, 401, 'UNAUTHORIZED', 'the access token is missing or wrong: open the URL gguf-mmap view printed');
    if (request.method !== 'GET' && request.method !== 'HEAD') return sendError(response, 405, 'METHOD_NOT_ALLOWED', 'this server is read-only');
    const path = url.pathname;
    if (path.startsWith('/api/')) {
      try {
        send(response, 200, 'application/json; charset=utf-8', await api(path, url));
      } catch (error) {
        if (error instanceof HttpError) return sendError(response, error.status, error.code, error.message);
        if (error instanceof GgufError) return sendError(response, error.code === 'NO_DEQUANTIZER' ? 422 : 502, error.code, error.message);
        return sendError(response, 500, 'INTERNAL', error instanceof Error ? error.message : String(error));
      }
      return;
    }
    const asset = path === '/' ? assets.get('index.html') : path.startsWith('/assets/') ? assets.get(path.slice('/assets/'.length)) : undefined;
    if (asset === undefined) return sendError(response, 404, 'NOT_FOUND', 'not found');
    // The page's first load carries the token in its URL: from then on the cookie carries it.
    const extra: Record<string, string> = from === 'query' ? { 'Set-Cookie': tokenCookie(port, token) } : {};
    if (asset.type.startsWith('text/html')) extra['Content-Security-Policy'] = PAGE_POLICY;
    send(response, 200, asset.type, asset.body, extra);
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendError(response, 500, 'INTERNAL', error instanceof Error ? error.message : String(error));
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
