// A static file server on 127.0.0.1 for the browser tests and bench/browser.ts: byte ranges (206, Content-Range) as a
// CDN serves them, CORS headers as the Hub sends them, and /redirect/PATH answering 302 to PATH
// (the Hub's resolve URL redirects to its CDN).
import { createReadStream, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StaticServer {
  readonly url: string;
  /** Requests seen, as 'METHOD PATH RANGE'. */
  readonly log: string[];
  close(): Promise<void>;
}

/** Serves `routes`: a path prefix ('/files/', not '/') to a folder, or an exact path to a file or to bytes in memory. */
export async function startStaticServer(routes: Record<string, string | { body: string | Uint8Array; type: string }>): Promise<StaticServer> {
  const log: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    log.push(`${req.method} ${url.pathname} ${req.headers.range ?? ''}`);
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', 'Content-Range, Content-Length, ETag');
    // A preflight (a page of another origin sending Range): allowed, as the Hub allows it.
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { 'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] ?? '*', 'Access-Control-Allow-Methods': 'GET, HEAD' }).end();
      return;
    }
    if (url.pathname.startsWith('/redirect/')) {
      res.writeHead(302, { Location: url.pathname.slice('/redirect'.length) }).end();
      return;
    }
    const exact = routes[url.pathname];
    if (exact !== undefined && typeof exact !== 'string') {
      res.writeHead(200, { 'Content-Type': exact.type }).end(exact.body);
      return;
    }
    let path = exact;
    if (path === undefined) {
      const prefix = Object.keys(routes).find((p) => p.length > 1 && p.endsWith('/') && url.pathname.startsWith(p));
      const name = prefix === undefined ? '' : decodeURIComponent(url.pathname.slice(prefix.length));
      if (prefix !== undefined && !name.split('/').includes('..')) path = `${routes[prefix] as string}/${name}`;
    }
    let size: number;
    try {
      size = path === undefined ? -1 : statSync(path).size;
    } catch {
      size = -1;
    }
    if (path === undefined || size < 0) {
      res.writeHead(404).end();
      return;
    }
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range === null) {
      res.writeHead(200, { 'Content-Length': size, 'Accept-Ranges': 'bytes' });
      createReadStream(path).pipe(res);
      return;
    }
    const start = Number(range[1]);
    const end = Math.min(size - 1, range[2] === '' ? size - 1 : Number(range[2]));
    if (start >= size) {
      res.writeHead(416, { 'Content-Range': `bytes */${size}` }).end();
      return;
    }
    res.writeHead(206, { 'Content-Length': end - start + 1, 'Content-Range': `bytes ${start}-${end}/${size}`, 'Accept-Ranges': 'bytes' });
    createReadStream(path, { start, end }).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
