// An in-place header write made safe to kill: the old header goes first to a journal beside the
// file (written whole, synced, renamed into place), then the new header over the old, synced,
// then the journal is removed. A writer killed in between leaves the journal; the next edit of
// the file (or recoverHeaderEdit) writes the old header back from it. One pwrite is no promise:
// the kernel cuts a large write short when a fatal signal arrives.
import { closeSync, fsyncSync, openSync, readFileSync, readSync, realpathSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createHash } from 'node:crypto';
import { GgufError } from '../errors.js';
import { commit, processAlive, writeAll, writerHost, writeTemporaryWith } from './output-file.js';

const MAGIC = 'GGUFJRNL';
const TAIL = 32; // sha256 of everything before it

/** Where the journal of an in-place edit of `path` is kept: beside the file itself (links resolved). */
export function journalPath(path: string): string {
  try {
    path = realpathSync(path);
  } catch {
    // not there (yet): the name as given
  }
  const name = basename(path);
  // A long name keeps a hash of itself instead (names have at most 255 bytes).
  const short = Buffer.byteLength(name) > 200 ? createHash('sha256').update(name).digest('hex').slice(0, 24) : name;
  return join(dirname(path), `.${short}.edit-journal`);
}

interface Journal {
  /** The file's device and inode: a journal is never applied to another file under the name. */
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: number;
  readonly pid: number;
  readonly host: string;
  readonly header: Uint8Array;
}

function encode(journal: Journal): Uint8Array {
  const host = Buffer.from(journal.host, 'utf8');
  const head = Buffer.alloc(8 + 8 + 8 + 8 + 4 + 2 + host.length + 8);
  let at = head.write(MAGIC, 0, 'latin1');
  at = head.writeBigUInt64LE(journal.dev, at);
  at = head.writeBigUInt64LE(journal.ino, at);
  at = head.writeBigUInt64LE(BigInt(journal.size), at);
  at = head.writeUInt32LE(journal.pid, at);
  at = head.writeUInt16LE(host.length, at);
  at += host.copy(head, at);
  head.writeBigUInt64LE(BigInt(journal.header.length), at);
  const body = Buffer.concat([head, journal.header]);
  return Buffer.concat([body, createHash('sha256').update(body).digest()]);
}

/** The journal's contents, or undefined where it is not one whole (its checksum fails). */
function decode(bytes: Buffer): Journal | undefined {
  if (bytes.length < 46 + TAIL || bytes.toString('latin1', 0, 8) !== MAGIC) return undefined;
  const body = bytes.subarray(0, bytes.length - TAIL);
  if (!createHash('sha256').update(body).digest().equals(bytes.subarray(bytes.length - TAIL))) return undefined;
  const dev = body.readBigUInt64LE(8);
  const ino = body.readBigUInt64LE(16);
  let at = 24;
  const size = Number(body.readBigUInt64LE(at));
  const pid = body.readUInt32LE((at += 8));
  const hostLength = body.readUInt16LE((at += 4));
  const host = body.toString('utf8', (at += 2), at + hostLength);
  const length = Number(body.readBigUInt64LE((at += hostLength)));
  const header = body.subarray(at + 8);
  return header.length === length ? { dev, ino, size, pid, host, header } : undefined;
}



function syncDirectory(path: string): void {
  try {
    const fd = openSync(dirname(path), 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Windows cannot open a directory to sync it; its renames are durable by then.
  }
}

/**
 * Keeps `old` (the header on disk now) in the journal of `path`: written whole under a temporary
 * name, synced, renamed into place, the folder synced. Returns the journal's path. @internal
 */
export function writeJournal(path: string, old: Uint8Array, size: number): string {
  const journal = journalPath(path);
  const { dev, ino } = statSync(path, { bigint: true });
  const temp = writeTemporaryWith(journal, (out) => writeAll(out, encode({ dev, ino, size, pid: process.pid, host: writerHost(), header: old }), 0));
  commit(temp, journal);
  syncDirectory(journal);
  return journal;
}

/**
 * Writes `header` over the first bytes of the file at `path` (whose size is `size`), so that a
 * kill at any moment leaves the old header, the new one, or a journal that puts the old one back.
 */
export function writeHeaderInPlace(path: string, header: Uint8Array, size: number): void {
  const fd = openSync(path, 'r+');
  try {
    // The bytes on disk now (read with fs, not through a mapping) are what the journal keeps.
    const old = new Uint8Array(header.length);
    for (let done = 0; done < old.length; ) {
      const n = readSync(fd, old, done, old.length - done, done);
      if (n === 0) throw new GgufError('FILE_CHANGED', `${path} changed while it was being edited`, done);
      done += n;
    }
    const journal = writeJournal(path, old, size);
    for (let done = 0; done < header.length; ) done += writeSync(fd, header, done, header.length - done, done);
    fsyncSync(fd);
    rmSync(journal, { force: true });
  } finally {
    closeSync(fd);
  }
}

/**
 * Puts back the header an in-place edit of `path` was killed while writing, from its journal;
 * true if it did. A journal of a writer still running (this host) is left alone; a journal that
 * is not whole (the writer was killed while writing it, before touching the file) is removed.
 */
export function recoverHeaderEdit(path: string): boolean {
  const journalFile = journalPath(path);
  let bytes: Buffer;
  try {
    bytes = readFileSync(journalFile);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  const journal = decode(bytes);
  if (journal === undefined) {
    rmSync(journalFile, { force: true });
    return false;
  }
  // Another file under the name now (replaced, or the journal of a file long gone): not its header.
  const now = statSync(path, { bigint: true, throwIfNoEntry: false });
  if (now === undefined || now.dev !== journal.dev || now.ino !== journal.ino || Number(now.size) !== journal.size) {
    rmSync(journalFile, { force: true });
    return false;
  }
  if (journal.host === writerHost() && journal.pid !== process.pid && processAlive(journal.pid)) {
    throw new GgufError('CANNOT_REWRITE', `${path} is being edited in place by process ${journal.pid} (${journalFile})`, 0);
  }
  const fd = openSync(path, 'r+');
  try {
    writeAll(fd, journal.header, 0);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  rmSync(journalFile, { force: true });
  return true;
}
