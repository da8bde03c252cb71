import { constants as bufferConstants } from 'node:buffer';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { GgufError } from '../errors.js';
import type { FileIdentity } from '../native.js';
import type { ByteSource, Located, MappedOrigin } from './source.js';

// The header is read in a prefix of this many bytes, grown when a header is longer.
const HEAD_BYTES = 4 << 20;
const READ_PIECE = 1 << 30;
/**
 * The most header read mode reads: a hostile header (one long string, say) costs its size in
 * memory here, not only address space as in mmap mode. Real headers are a few MiB.
 */
export const MAX_READ_HEADER = 256 << 20;

// A file never closed is closed when it is garbage, as a mapping is let go.
const unclosed = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
});

function identityOf(fd: number): FileIdentity {
  const st = fstatSync(fd, { bigint: true });
  return { dev: String(st.dev), ino: String(st.ino), size: String(st.size), mtimeNs: String(st.mtimeNs) };
}

/**
 * A file read with `fs` instead of mapped: where the addon cannot load or the runtime refuses
 * ArrayBuffers over external memory. The header is read once; every other range is read into a
 * fresh buffer when asked for (a tensor's bytes are then a copy, kept by the tensor).
 */
export class ReadSource implements ByteSource {
  readonly size: number;
  readonly zeroCopy = false;
  readonly sliceLength = 16 << 20;
  private fd: number;
  private readonly opened: FileIdentity;
  private headBytes: Uint8Array | undefined;

  constructor(private readonly path: string) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below anyway.
    this.fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const st = fstatSync(this.fd);
      if (st.isDirectory()) throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), { code: 'EISDIR', syscall: 'open', path });
      if (!st.isFile()) throw Object.assign(new Error(`ENODEV: not a regular file, open '${path}'`), { code: 'ENODEV', syscall: 'open', path });
      this.opened = identityOf(this.fd);
      this.size = Number(this.opened.size);
    } catch (error) {
      closeSync(this.fd);
      throw error;
    }
    unclosed.register(this, this.fd, this);
  }

  get closed(): boolean {
    return this.fd < 0;
  }

  check(offset: number): void {
    if (this.fd < 0) throw new GgufError('CLOSED', 'the file has been closed', offset);
  }

  /**
   * The open descriptor, for the writers' copies: they read the file opened here, not whatever
   * its path names by then (a file replaced meanwhile). CLOSED after close().
   */
  descriptor(): number {
    this.check(0);
    return this.fd;
  }

  get origin(): MappedOrigin {
    return { path: this.path, identity: this.opened, current: () => (this.fd < 0 ? null : identityOf(this.fd)) };
  }

  head(minLength = HEAD_BYTES): DataView | undefined {
    const length = Math.min(this.size, minLength, MAX_READ_HEADER);
    if (this.headBytes !== undefined && length <= this.headBytes.length) return undefined;
    this.headBytes = this.read(0, length);
    return new DataView(this.headBytes.buffer, this.headBytes.byteOffset, this.headBytes.byteLength);
  }

  locate(offset: number, length: number): Located {
    if (length > bufferConstants.MAX_LENGTH) {
      throw new GgufError('TENSOR_TOO_LARGE', `${length} bytes do not fit in one ArrayBuffer (at most ${bufferConstants.MAX_LENGTH} bytes)`, offset);
    }
    const bytes = this.read(offset, length);
    return { buffer: bytes.buffer as ArrayBuffer, byteOffset: bytes.byteOffset };
  }

  close(): void {
    if (this.fd < 0) return;
    unclosed.unregister(this);
    closeSync(this.fd);
    this.fd = -1;
  }

  /** Bytes [offset, offset + length) of the file; a file that shrank meanwhile is FILE_CHANGED. */
  private read(offset: number, length: number): Uint8Array {
    this.check(offset);
    const bytes = new Uint8Array(length);
    for (let done = 0; done < length; ) {
      // One read() takes at most 2 GiB - 1 bytes: larger ranges go in 1 GiB pieces.
      const n = readSync(this.fd, bytes, done, Math.min(length - done, READ_PIECE), offset + done);
      if (n === 0) throw new GgufError('FILE_CHANGED', `'${this.path}' ends at byte ${offset + done}, shorter than when it was opened`, offset + done);
      done += n;
    }
    return bytes;
  }
}
