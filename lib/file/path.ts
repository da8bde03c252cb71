import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgufError } from '../errors.js';

/** An http(s) URL or an hf: URI, which name no local file (resolved, one became cwd/http:/host/...). */
const REMOTE = /^(https?:\/\/|hf:)/i;

function refuseRemote(text: string, caller: string): void {
  if (!REMOTE.test(text)) return;
  throw new GgufError(
    'REMOTE_FILE',
    `${caller}: '${text}' is a URL, and ${caller} takes local files: open it with openGgufRemote (the header and tensors by range; the CLI's inspect), or download it with pullModel (gguf-mmap pull) and use the path it gives (a local file with such a name: ./${text})`,
    0,
  );
}

/**
 * A path as fs takes it (string, Buffer, file: URL), made absolute; NUL bytes are refused as fs
 * refuses them (passed on, one would cut the path short and name another file).
 */
export function toFilePath(path: string | URL | Buffer, caller: string): string {
  let text: string;
  if (typeof path === 'string') text = path;
  else if (path instanceof URL) {
    if (path.protocol !== 'file:') refuseRemote(path.href, caller);
    text = fileURLToPath(path);
  }
  else if (Buffer.isBuffer(path)) text = new TextDecoder('utf-8', { fatal: true }).decode(path);
  else throw new TypeError(`${caller}: path must be a string, Buffer or file: URL, not ${path === null ? 'null' : typeof path}`);
  refuseRemote(text, caller);
  if (text.includes('\0')) {
    throw Object.assign(new TypeError(`${caller}: path must not contain NUL bytes: ${JSON.stringify(text)}`), { code: 'ERR_INVALID_ARG_VALUE' });
  }
  return resolve(text);
}
