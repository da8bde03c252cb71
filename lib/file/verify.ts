import { createHash } from 'node:crypto';
import { GgufError } from '../errors.js';
import type { ByteSource, MappedOrigin } from './source.js';

export interface VerifyOptions {
  /** Expected sha256 of the whole file (hex): every byte is read and hashed. */
  sha256?: string;
}

// Hashing reads the mapping in slices of at most this many bytes.
const HASH_SLICE = 16 << 20;

/**
 * Checks that the mapped file is still the file that was opened: the file itself (not whatever
 * its path names now) is asked for its size and modification time. A file replaced by rename is
 * fine: the mapping keeps the old file's bytes.
 */
export function verifySource(source: ByteSource, options: VerifyOptions = {}): void {
  source.check(0);
  if (source.origin !== undefined) checkIdentity(source.origin, source.size);
  if (options.sha256 !== undefined) {
    const hash = createHash('sha256');
    const slice = Math.min(HASH_SLICE, source.sliceLength);
    for (let at = 0; at < source.size; at += slice) {
      const length = Math.min(slice, source.size - at);
      const { buffer, byteOffset } = source.locate(at, length);
      hash.update(new Uint8Array(buffer, byteOffset, length));
    }
    // Pages lost during the hash read as zeros: report the change, not a checksum mismatch.
    source.check(0);
    const digest = hash.digest('hex');
    if (digest !== options.sha256.toLowerCase()) {
      throw new GgufError('CHECKSUM_MISMATCH', `sha256 is ${digest}, expected ${options.sha256}`, 0);
    }
  }
}

function checkIdentity(origin: MappedOrigin, mappedSize: number): void {
  const now = origin.current();
  if (now === null) return;
  const size = BigInt(now.size);
  if (size < BigInt(mappedSize)) {
    throw new GgufError('FILE_CHANGED', `'${origin.path}' was truncated to ${size} bytes while mapped (pages past that read as zeros)`, Number(size));
  }
  if (size !== BigInt(mappedSize) || now.mtimeNs !== origin.identity.mtimeNs) {
    throw new GgufError('FILE_CHANGED', `'${origin.path}' was modified in place while mapped`, 0);
  }
}
