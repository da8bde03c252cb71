import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { writeHyperparametersJson, writeSummaryJson } from '../cli/inspect.js';
import { canDequantize } from '../dequant/dequantize.js';
import { GgufError } from '../errors.js';
import type { GgufFile } from '../file/gguf-file.js';
import type { GgufTensor } from '../file/tensor.js';
import { packageRoot } from '../package-root.js';
import { COMMON_HEADERS, hostAllowed, newAccessToken, PAGE_POLICY, tokenCookie, tokenOf } from './access.js';
import { layerMap, type LayerMap } from './layer-map.js';
import { arrayPage, metadataEntries, type MetadataEntry } from './metadata-api.js';
import { SORT_KEYS, TensorIndex } from './tensor-index.js';
import { DEFAULT_SAMPLE_LIMIT, sampleRows, tensorStats, type TensorStats } from './tensor-stats.js';
import { hasChatTemplates, hasTokenizer, renderSampleChat, tokenize } from './text-features.js';

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
  let metadata: MetadataEntry[] | undefined;
  const stats = new Map<number, Promise<TensorStats>>();
  // One statistics job at a time: each holds up to sampleLimit floats (64 MiB at the default).
  let statsQueue: Promise<unknown> = Promise.resolve();

  const tensorIndex = () => (index ??= new TensorIndex(file));

  function summary(): string {
    if (summaryJson !== undefined) return summaryJson;
    const pieces: string[] = [];
    // What `inspect --json` prints, less the metadata and the tensor table (paged by their own endpoints).
    pieces.push(`{"version":${file.version},"endian":"${file.endian}","alignment":${file.alignment},"dataOffset":${file.dataOffset},"fileSize":${file.fileSize}`);
    if (file.parts.length > 1) pieces.push(`,"parts":${JSON.stringify(file.parts.map((p) => ({ path: p.path, size: p.size, dataOffset: p.dataOffset, tensorCount: p.tensorCount })))}`);
    writeSummaryJson(file, (chunk) => pieces.push(chunk));
    writeHyperparametersJson(file, (chunk) => pieces.push(chunk));
    const features = { tokenizer: hasTokenizer(file), chatTemplate: hasChatTemplates(file) };
    pieces.push(`,"view":${JSON.stringify({ source, mode: file.mode, remote, tensorCount: file.tensorCount, metadataCount: file.metadata.size, features, sampleLimit })}}`);
    return (summaryJson = pieces.join(''));
  }

  function tensorNamed(encoded: string): { i: number; tensor: GgufTensor } {
    let name: string;
    try {
      name = decodeURIComponent(encoded);
    } catch {
      throw new HttpError(400, 'BAD_REQUEST', 'a tensor name that is not URI-encoded UTF-8');
    }
    const i = tensorIndex().find(name);
    if (i < 0) throw new HttpError(404, 'NOT_FOUND', `no tensor named ${JSON.stringify(name)}`);
    return { i, tensor: file.tensor(name)! };
  }

  function tensorDetail(i: number, t: GgufTensor): object {
    const sample = sampleRows(t.rows, t.rowLength, sampleLimit);
    const rowBytes = t.rows === 0 ? 0 : t.nbytes / t.rows;
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
      statsBytes: sample === undefined ? t.nbytes : sample.runStarts.length * sample.rowsPerRun * rowBytes,
      statsSampled: sample !== undefined,
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

  async function api(path: string, url: URL): Promise<string> {
    if (path === '/api/summary') return summary();
    if (path === '/api/tensors') {
      const sort = url.searchParams.get('sort') || 'index';
      if (!SORT_KEYS.includes(sort.replace(/^-/, '') as never)) throw new HttpError(400, 'BAD_REQUEST', `sort is one of ${SORT_KEYS.join(', ')} (a leading - for descending)`);
      return JSON.stringify(tensorIndex().query(url.searchParams.get('filter') ?? '', sort, intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER), intParam(url, 'limit', 100, 1000)));
    }
    if (path.startsWith('/api/tensors/')) {
      const rest = path.slice('/api/tensors/'.length);
      if (rest.endsWith('/stats')) {
        const { i, tensor: t } = tensorNamed(rest.slice(0, -'/stats'.length));
        const result = await statsOf(i, t);
        return JSON.stringify({ tensor: t.name, type: t.type, ...result });
      }
      if (rest.includes('/')) throw new HttpError(404, 'NOT_FOUND', 'no such endpoint');
      const { i, tensor } = tensorNamed(rest);
      return JSON.stringify(tensorDetail(i, tensor));
    }
    if (path === '/api/layers') return JSON.stringify((layers ??= layerMap(tensorIndex())));
    if (path === '/api/metadata') return JSON.stringify((metadata ??= metadataEntries(file)));
    if (path.startsWith('/api/metadata/')) {
      let key: string;
      try {
        key = decodeURIComponent(path.slice('/api/metadata/'.length));
      } catch {
        throw new HttpError(400, 'BAD_REQUEST', 'a key that is not URI-encoded UTF-8');
      }
      const page = arrayPage(file, key, url.searchParams.get('filter') ?? '', intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER), intParam(url, 'limit', 100, 1000));
      if (page === undefined) throw new HttpError(404, 'NOT_FOUND', `no array named ${JSON.stringify(key)}`);
      return JSON.stringify(page);
    }
    if (path === '/api/tokenize') {
      if (!hasTokenizer(file)) throw new HttpError(501, 'NOT_AVAILABLE', 'this build of gguf-mmap has no tokenizer');
      const text = url.searchParams.get('text') ?? '';
      if (text.length > 100_000) throw new HttpError(400, 'BAD_REQUEST', 'text is limited to 100,000 characters');
      return JSON.stringify(tokenize(file, text, url.searchParams.get('special') === '1'));
    }
    if (path === '/api/chat') {
      if (!hasChatTemplates(file)) throw new HttpError(501, 'NOT_AVAILABLE', 'no chat template, or this build of gguf-mmap cannot render one');
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
