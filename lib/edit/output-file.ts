// Writing a model file the tools make: never onto a file being read, into a temporary file beside
// the output (made exclusively), synced, then renamed over it; nothing half-written is left on a
// failure (ENOSPC included).
import { closeSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** The one of `inputs` that `output` is (same device and inode: through a link too), if any. */
export function inputNamedBy(inputs: readonly string[], output: string): string | undefined {
  const out = statSync(output, { throwIfNoEntry: false });
  if (out === undefined) return undefined;
  return inputs.find((input) => {
    const st = statSync(input);
    return st.dev === out.dev && st.ino === out.ino;
  });
}

/** Refuses an output that is one of the files read. */
export function refuseInputAsOutput(inputs: readonly string[], output: string): void {
  const input = inputNamedBy(inputs, output);
  if (input !== undefined) {
    throw Object.assign(new Error(`${output} is ${input}, a file being read; writing it would destroy the model`), { code: 'EEXIST' });
  }
}

/** Writes `pieces` in order to `path` (through a temporary file renamed at the end). */
export function writeWhole(path: string, pieces: Iterable<Uint8Array>): void {
  commit(writeTemporary(path, pieces), path);
}

/** Renames `temp` to `path`; a rename that fails removes `temp` (nothing stays behind). */
export function commit(temp: string, path: string): void {
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * Writes `pieces` in order, synced, to a new temporary file beside `path`, and returns its name
 * (for several outputs renamed together: a split set appears whole or not at all). On a failure
 * the temporary file is removed.
 */
export function writeTemporary(path: string, pieces: Iterable<Uint8Array>): string {
  return writeTemporaryWith(path, (fd) => {
    for (const piece of pieces) writeAll(fd, piece);
  });
}

/** Writes all of `bytes` at the descriptor's position, or at `position` when given. */
export function writeAll(fd: number, bytes: Uint8Array, position?: number): void {
  for (let done = 0; done < bytes.length; ) {
    done += writeSync(fd, bytes, done, bytes.length - done, position === undefined ? null : position + done);
  }
}

/** As writeTemporary, the contents written by `write(fd)`. */
export function writeTemporaryWith(path: string, write: (fd: number) => void): string {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx');
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
