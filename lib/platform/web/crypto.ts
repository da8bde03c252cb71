import { GgufError } from '../../errors.js';

/** Random bytes from the Web Crypto API (synchronous there, as Node's randomFillSync is). */
export function randomFillSync<T extends ArrayBufferView>(array: T): T {
  (globalThis as unknown as { crypto: { getRandomValues(a: ArrayBufferView): unknown } }).crypto.getRandomValues(array);
  return array;
}

/** Web Crypto hashes asynchronously only: the synchronous hashes (tensor.sha256()) are Node's. */
export function createHash(algorithm: string): never {
  throw new GgufError('ADDON_UNAVAILABLE', `a synchronous ${algorithm} needs Node's crypto; in a web page hash tensor bytes with crypto.subtle.digest`, 0);
}
