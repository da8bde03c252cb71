// Writing a model file the tools make: never onto a file being read, into a temporary file beside
// the output (made exclusively), synced, then renamed over it; nothing half-written is left on a
// failure (ENOSPC included), and what a killed writer left is removed by the next one.
import { closeSync, fsyncSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { GgufError } from '../errors.js';
import { optionalAddon } from '../native.js';
import { splitSetOf } from '../file/split.js';

/**
 * The one of `inputs`, or of the split sets they belong to (a part's siblings by the naming
 * convention), that `output` is (same device and inode: through a link too), if any.
 */
export function inputNamedBy(inputs: readonly string[], output: string): string | undefined {
  const out = statSync(output, { throwIfNoEntry: false });
  if (out === undefined) return undefined;
  const candidates = [...new Set(inputs.flatMap((input) => [input, ...splitSetOf(input)]))];
  return candidates.find((input) => {
    const st = statSync(input, { throwIfNoEntry: false });
    return st !== undefined && st.dev === out.dev && st.ino === out.ino;
  });
}

/** Refuses an output that is one of the files read. */
export function refuseInputAsOutput(inputs: readonly string[], output: string): void {
  const input = inputNamedBy(inputs, output);
  if (input !== undefined) {
    throw Object.assign(new Error(`${output} is ${input}, a file being read; writing it would destroy the model`), { code: 'EEXIST' });
  }
}

/**
 * Refuses to write over `path` while this process maps it (any thread: an open file would read
 * the new bytes at its old offsets). The addon's list of open mappings; none without it.
 */
export function refuseMappedHere(path: string): void {
  const st = statSync(path, { bigint: true, throwIfNoEntry: false });
  if (st !== undefined && optionalAddon()?.mapsFile(String(st.dev), String(st.ino))) throw new GgufError('CANNOT_REWRITE', `${path} is open (mapped) in this process: close it before editing it in place`, 0);
}

// Errors of copy_file_range that mean "not here" or "not between these files": copied through memory.
const NO_KERNEL_COPY = new Set(['ENOSYS', 'EXDEV', 'EINVAL', 'EOPNOTSUPP', 'ENOTSUP']);

/**
 * Copies `length` bytes at `from` in `inFd` to `to` in `outFd`: inside the kernel where it can
 * (copy_file_range: a reflink, or holes kept, where the filesystem does that), else read and
 * written in slices. `onBytes` hears of each piece done; a file that ends early is FILE_CHANGED.
 */
export function copyRange(inFd: number, from: number, outFd: number, to: number, length: number, input: string, onBytes?: (n: number) => void): void {
  let done = 0;
  const kernel = optionalAddon();
  if (kernel !== undefined && length > 0) {
    try {
      while (done < length) {
        // Pieces of at most 64 MiB, so progress moves.
        const n = kernel.copyFileRange(inFd, from + done, outFd, to + done, Math.min(length - done, 64 << 20));
        if (n === 0) break;
        done += n;
        onBytes?.(n);
      }
    } catch (error) {
      if (!NO_KERNEL_COPY.has((error as { code?: string }).code ?? '')) throw error;
    }
  }
  const slice = new Uint8Array(Math.min(8 << 20, Math.max(0, length - done)));
  while (done < length) {
    const n = readSync(inFd, slice, 0, Math.min(slice.length, length - done), from + done);
    if (n === 0) break;
    writeAll(outFd, slice.subarray(0, n), to + done);
    done += n;
    onBytes?.(n);
  }
  if (done < length) throw new GgufError('FILE_CHANGED', `${input} ended at byte ${from + done} while it was being copied`, from + done);
}

/** Renames `temp` to `path`; a rename that fails removes `temp` (nothing stays behind). */
export function commit(temp: string, path: string): void {
  if (temp === path) return; // written in place: a device or FIFO (see writeTemporaryWith)
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw naming(error, temp, path);
  }
}

/** A file system error on `temp` told of `path` (the output the user named), code kept. */
function naming(error: unknown, temp: string, path: string): unknown {
  if (!(error instanceof Error) || !error.message.includes(temp)) return error;
  const e = error as NodeJS.ErrnoException;
  const told = error.message.replace(/, rename '.*$/, `, rename to '${path}'`).replaceAll(temp, path);
  return Object.assign(new Error(told), { code: e.code, errno: e.errno, syscall: e.syscall, path });
}

/** Writes all of `bytes` at the descriptor's position, or at `position` when given. */
export function writeAll(fd: number, bytes: Uint8Array, position?: number): void {
  for (let done = 0; done < bytes.length; ) {
    done += writeSync(fd, bytes, done, bytes.length - done, position === undefined ? null : position + done);
  }
}

/**
 * Writes a new temporary file beside `path` with `write(fd)`, synced, and returns its name (for
 * several outputs renamed together: a split set appears whole or not at all). On a failure the
 * temporary file is removed. An existing `path` that is not a regular file (/dev/null, a FIFO, a
 * device) would be replaced by the rename: with `streamed` (output written in order, no
 * positions) it is written directly and its own path returned; without, CANNOT_REWRITE.
 */
export function writeTemporaryWith(path: string, write: (fd: number) => void, options: { streamed?: boolean } = {}): string {
  const existing = statSync(path, { throwIfNoEntry: false });
  // (A directory in the way fails at the rename, as before: EISDIR.)
  if (existing !== undefined && !existing.isFile() && !existing.isDirectory()) {
    if (!options.streamed) {
      throw new GgufError('CANNOT_REWRITE', `${path} is not a regular file (a device, FIFO or socket): a model is written to a new file renamed into place; name a regular file`, 0);
    }
    const fd = openSync(path, 'w');
    try {
      write(fd);
    } finally {
      closeSync(fd);
    }
    return path;
  }
  removeStaleTemporaries(path);
  const temp = join(dirname(path), `${temporaryPrefix(path)}${writerHost()}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let fd: number;
  try {
    fd = openSync(temp, 'wx');
  } catch (error) {
    // the user named `path`: a folder that is not there (or not writable) is said of it, not of
    // the hidden temporary file beside it
    throw naming(error, temp, path);
  }
  try {
    write(fd);
    fsyncSync(fd);
    closeSync(fd);
    return temp;
  } catch (error) {
    try {
      closeSync(fd);
    } catch {
      // closed already
    }
    rmSync(temp, { force: true });
    throw error;
  }
}

// A name has at most 255 bytes and the temporary adds ~60 (host, pid, random, dots): for a long
// output name the prefix keeps its first bytes and a hash of the whole name instead.
const NAME_MAX = 255;
const TEMPORARY_SUFFIX_MAX = 1 + 40 + 1 + 10 + 1 + 12 + 4;

function temporaryPrefix(path: string): string {
  const name = basename(path);
  const whole = `.${name}.`;
  if (Buffer.byteLength(whole) + TEMPORARY_SUFFIX_MAX <= NAME_MAX) return whole;
  let kept = name;
  while (Buffer.byteLength(kept) > 120) kept = kept.slice(0, -1);
  // A cut between a surrogate pair leaves half a character: drop it.
  if (/[\uD800-\uDBFF]$/.test(kept)) kept = kept.slice(0, -1);
  return `.${kept}~${createHash('sha256').update(name).digest('hex').slice(0, 12)}.`;
}

// The writer's host in its temporary files' names: a pid says whether a writer is gone only on
// the machine (and pid namespace: a container has a hostname of its own) that ran it; a folder
// shared over NFS or between containers has other writers' files too.
// Asked when first needed, not at import (Deno asks for a permission to tell it), and a runtime
// that refuses gives a fixed name: its temporary files are then told apart by pid alone.
let host: string | undefined;
export function writerHost(): string {
  if (host === undefined) {
    try {
      host = hostname().replace(/[^A-Za-z0-9-]/g, '_').slice(0, 40) || 'host';
    } catch {
      host = 'host';
    }
  }
  return host;
}

/**
 * Removes the temporary files of `path` left by a writer that was killed (its process gone): the
 * name carries the writer's host and pid. Those of a live process, and of other hosts, stay.
 */
function removeStaleTemporaries(path: string): void {
  const prefix = temporaryPrefix(path);
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return; // the directory's own error comes with the write
  }
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const m = /^([A-Za-z0-9_-]+)\.(\d+)\.[0-9a-f]{12}\.tmp$/.exec(name.slice(prefix.length));
    if (m === null || m[1] !== writerHost() || processAlive(Number(m[2]))) continue;
    rmSync(join(dirname(path), name), { force: true });
  }
}

/** Whether process `pid` (on this host) still runs. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
