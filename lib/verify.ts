import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { GgufError } from './errors.js';
import type { ByteSource } from './source.js';

export interface VerifyOptions {
  /** Expected sha256 of the whole file (hex): every byte is read and hashed. */
  sha256?: string;
}

// Hashing reads the mapping in slices this long.
const HASH_SLICE = 16 << 20;

/**
 * Checks that the mapped file is still the file that was opened. A file truncated in place while
 * mapped raises SIGBUS on the next read of the lost pages, which kills the process; verify()
 * turns that into a GgufError beforehand. A file replaced by rename is fine: the mapping keeps
 * the old file's bytes.
 */
export function verifySource(source: ByteSource, options: VerifyOptions = {}): void {
  if (source.closed) throw new GgufError('CLOSED', 'verify() after close()', 0);
  if (source.origin !== undefined) checkIdentity(source.origin, source.size);
  if (options.sha256 !== undefined) {
    const hash = createHash('sha256');
    for (let at = 0; at < source.size; at += HASH_SLICE) {
      const length = Math.min(HASH_SLICE, source.size - at);
      const { buffer, byteOffset } = source.locate(at, length);
      hash.update(new Uint8Array(buffer, byteOffset, length));
    }
    const digest = hash.digest('hex');
    if (digest !== options.sha256.toLowerCase()) {
      throw new GgufError('CHECKSUM_MISMATCH', `sha256 is ${digest}, expected ${options.sha256}`, 0);
    }
  }
}

function checkIdentity(origin: NonNullable<ByteSource['origin']>, mappedSize: number): void {
  const now = statSync(origin.path, { bigint: true, throwIfNoEntry: false });
  // Gone, or another file now at the path (replaced by rename): the mapping still holds the
  // original file, which cannot change under it any more through this path.
  if (now === undefined || String(now.dev) !== origin.identity.dev || String(now.ino) !== origin.identity.ino) return;
  if (now.size < BigInt(mappedSize)) {
    throw new GgufError('FILE_CHANGED', `'${origin.path}' was truncated to ${now.size} bytes while mapped (reading past that raises SIGBUS)`, Number(now.size));
  }
  if (now.size !== BigInt(mappedSize) || String(now.mtimeNs) !== origin.identity.mtimeNs) {
    throw new GgufError('FILE_CHANGED', `'${origin.path}' was modified in place while mapped`, 0);
  }
}
