import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';

/** A fresh access token: 32 random bytes, URL-safe. */
export function newAccessToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The cookie that carries the token after the first visit; per port, as cookies are not port-scoped. */
export function cookieName(port: number): string {
  return `gguf_mmap_view_${port}`;
}

export function tokenCookie(port: number, token: string): string {
  return `${cookieName(port)}=${token}; HttpOnly; SameSite=Strict; Path=/`;
}

/**
 * 403 unless the Host header names this server as 127.0.0.1:PORT or localhost:PORT: a page whose
 * own name resolves to 127.0.0.1 (DNS rebinding) sends its own name, and is refused. On port 80,
 * HTTP's default, browsers send the name alone.
 */
export function hostAllowed(request: Pick<IncomingMessage, 'headers'>, port: number): boolean {
  const host = request.headers.host;
  if (port === 80 && (host === '127.0.0.1' || host === 'localhost')) return true;
  return host === `127.0.0.1:${port}` || host === `localhost:${port}`;
}

function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Where the request's token came from, or undefined when it has none that matches. */
export function tokenOf(request: IncomingMessage, url: URL, port: number, token: string): 'query' | 'cookie' | undefined {
  if (sameToken(url.searchParams.get('token') ?? undefined, token)) return 'query';
  const name = cookieName(port);
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name && sameToken(part.slice(eq + 1).trim(), token)) return 'cookie';
  }
  return undefined;
}

/** Headers on every answer: nothing cached, nothing sniffed, no referrer (the URL holds the token), no framing; no CORS header ever. */
export const COMMON_HEADERS: OutgoingHttpHeaders = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** The page runs only its own script and style, and talks only to this server. */
export const PAGE_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
