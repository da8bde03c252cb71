import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GgufError } from '../errors.js';
import type { GgufFile } from '../file/gguf-file.js';
import { packageRoot } from '../package-root.js';
import { COMMON_HEADERS, hostAllowed, newAccessToken, PAGE_POLICY, tokenCookie, tokenOf } from './access.js';
import { createViewApi, HttpError } from './view-api.js';

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

export async function startViewServer(file: GgufFile, options: ViewServerOptions = {}): Promise<ViewServer> {
  const assets = loadAssets();
  const token = options.token ?? newAccessToken();
  const api = createViewApi(file, { source: options.source ?? file.parts[0]?.path ?? 'model', sampleLimit: options.sampleLimit });

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
