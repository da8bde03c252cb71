import { GgufError } from '../errors.js';
import type { ByteSource, Located } from './source.js';

/** Options of an asynchronous read: abort, and progress in bytes. */
export interface FetchOptions {
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

/**
 * A file whose bytes come asynchronously (a Blob, a URL): the header, read at open, and byte
 * ranges read on demand in pieces of `sliceLength` (progress and abort between them, and no second
 * copy of a whole large tensor in flight). A synchronous read of a tensor's bytes is REMOTE_FILE.
 */
export abstract class AsyncSource implements ByteSource {
  readonly zeroCopy = false;
  private headGiven = false;
  private isClosed = false;

  constructor(
    /** Bytes [0, headBytes.length) of the file: the whole header. */
    protected readonly headBytes: Uint8Array,
    readonly sliceLength: number,
  ) {}

  abstract get size(): number;
  /** The file as errors name it, and what it is ("a Blob", "a remote file"). */
  protected abstract describe(): { name: string; kind: string };
  /** Up to `length` bytes at `offset`: fewer (none) only where the file ends. */
  protected abstract readPiece(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;

  get closed(): boolean {
    return this.isClosed;
  }

  /** The header bytes read at open, once (they cannot grow synchronously). */
  head(): DataView | undefined {
    if (this.headGiven) return undefined;
    this.headGiven = true;
    return new DataView(this.headBytes.buffer, this.headBytes.byteOffset, this.headBytes.byteLength);
  }

  locate(offset: number): Located {
    this.check(offset);
    const { name, kind } = this.describe();
    throw new GgufError('REMOTE_FILE', `${name} is ${kind}: its tensors' bytes are read with await tensor.fetchBytes() (or dequantizeAsync())`, offset);
  }

  /** Bytes [offset, offset + length), read a piece at a time with progress; CLOSED once closed. */
  async fetch(offset: number, length: number, options: FetchOptions = {}): Promise<Uint8Array> {
    this.check(offset);
    const out = new Uint8Array(length);
    for (let done = 0; done < length; ) {
      options.signal?.throwIfAborted();
      const piece = await this.readPiece(offset + done, Math.min(this.sliceLength, length - done), options.signal);
      this.check(offset + done);
      if (piece.byteLength === 0) throw new GgufError('FILE_CHANGED', `${this.describe().name} ends before byte ${offset + length}`, offset + done);
      out.set(piece, done);
      done += piece.byteLength;
      options.onProgress?.(done, length);
    }
    return out;
  }

  check(offset: number): void {
    if (this.isClosed) throw new GgufError('CLOSED', 'the file has been closed', offset);
  }

  close(): void {
    this.isClosed = true;
  }
}
