import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A path as fs takes it (string, Buffer, file: URL), made absolute; NUL bytes are refused as fs
 * refuses them (passed on, one would cut the path short and name another file).
 */
export function toFilePath(path: string | URL | Buffer, caller: string): string {
  let text: string;
  if (typeof path === 'string') text = path;
  else if (path instanceof URL) text = fileURLToPath(path);
  else if (Buffer.isBuffer(path)) text = new TextDecoder('utf-8', { fatal: true }).decode(path);
  else throw new TypeError(`${caller}: path must be a string, Buffer or file: URL, not ${path === null ? 'null' : typeof path}`);
  if (text.includes('\0')) {
    throw Object.assign(new TypeError(`${caller}: path must not contain NUL bytes: ${JSON.stringify(text)}`), { code: 'ERR_INVALID_ARG_VALUE' });
  }
  return resolve(text);
}
