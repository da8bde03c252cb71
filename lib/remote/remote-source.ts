import { GgufError } from '../errors.js';
import type { ByteSource, Located } from '../file/source.js';
import { redactUrl, type RangeClient } from './range-client.js';

/** Options of a remote read: abort, and progress in bytes. */
export interface FetchOptions {
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

// Tensor bytes are fetched in ranges of this many bytes: progress and abort between them.
const FETCH_PIECE = 16 << 20;

/**
 * A file over HTTP: its header, fetched when it was opened, and byte ranges fetched on demand
 * (asynchronously: a synchronous read of a tensor's bytes is REMOTE_FILE).
 */
export class RemoteSource implements ByteSource {
  readonly zeroCopy = false;
  readonly sliceLength = FETCH_PIECE;
  private headGiven = false;
  private isClosed = false;

  constructor(
    readonly client: RangeClient,
    /** Bytes [0, headBytes.length) of the file: the whole header. */
    private readonly headBytes: Uint8Array,
  ) {}

  get size(): number {
    return this.client.size ?? this.headBytes.byteLength;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** The header bytes fetched at open, once (they cannot grow synchronously). */
  head(): DataView | undefined {
    if (this.headGiven) return undefined;
    this.headGiven = true;
    return new DataView(this.headBytes.buffer, this.headBytes.byteOffset, this.headBytes.byteLength);
  }

  locate(offset: number): Located {
    this.check(offset);
    throw new GgufError('REMOTE_FILE', `${redactUrl(this.client.url)} is a remote file: its tensors' bytes are read with await tensor.fetchBytes() (or dequantizeAsync())`, offset);
  }

  /** Bytes [offset, offset + length), fetched in pieces with progress; CLOSED once closed. */
  async fetch(offset: number, length: number, options: FetchOptions = {}): Promise<Uint8Array> {
    this.check(offset);
    const out = new Uint8Array(length);
    for (let done = 0; done < length; ) {
      const piece = await this.client.read(offset + done, Math.min(FETCH_PIECE, length - done), options.signal);
      this.check(offset + done);
      if (piece.byteLength === 0) throw new GgufError('FILE_CHANGED', `${redactUrl(this.client.url)} ends before byte ${offset + length}`, offset + done);
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
