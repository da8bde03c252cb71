import { GgufError } from '../errors.js';
import type { ByteSource, Located } from './source.js';

/** Options of an asynchronous read: abort, and progress in bytes. */
export interface BlobFetchOptions {
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

// Tensor bytes are read in slices of this many bytes: progress and abort between them, and no
// second copy of a whole large tensor in flight.
const READ_SLICE = 16 << 20;

/**
 * A file as a Blob (a File a person dropped or picked in a page, or Node's fs.openAsBlob): the
 * header, read at open, and byte ranges read on demand with blob.slice() (asynchronously, as a
 * remote file's: a synchronous read of a tensor's bytes is REMOTE_FILE). The whole file is never
 * read unless asked for.
 */
export class BlobSource implements ByteSource {
  readonly zeroCopy = false;
  readonly sliceLength = READ_SLICE;
  private headGiven = false;
  private isClosed = false;

  constructor(
    readonly blob: Blob,
    /** Bytes [0, headBytes.length) of the file: the whole header. */
    private readonly headBytes: Uint8Array,
    /** The file's name, for errors. */
    readonly name: string,
  ) {}

  get size(): number {
    return this.blob.size;
  }

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
    throw new GgufError('REMOTE_FILE', `${this.name} is a Blob: its tensors' bytes are read with await tensor.fetchBytes() (or dequantizeAsync())`, offset);
  }

  /** Bytes [offset, offset + length), read a slice at a time with progress; CLOSED once closed. */
  async fetch(offset: number, length: number, options: BlobFetchOptions = {}): Promise<Uint8Array> {
    this.check(offset);
    const out = new Uint8Array(length);
    for (let done = 0; done < length; ) {
      options.signal?.throwIfAborted();
      const piece = await readSlice(this.blob, offset + done, Math.min(READ_SLICE, length - done), this.name);
      this.check(offset + done);
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

/**
 * Bytes [offset, offset + length) of `blob`. A File changed on disk since it was picked (or a
 * Node Blob whose file changed) fails to read with NotReadableError: FILE_CHANGED.
 */
export async function readSlice(blob: Blob, offset: number, length: number, name: string): Promise<Uint8Array> {
  let bytes: ArrayBuffer;
  try {
    bytes = await blob.slice(offset, offset + length).arrayBuffer();
  } catch (error) {
    if ((error as Error | undefined)?.name === 'NotReadableError') {
      throw new GgufError('FILE_CHANGED', `${name} changed since it was opened (${(error as Error).message})`, offset);
    }
    throw error;
  }
  if (bytes.byteLength !== length) throw new GgufError('FILE_CHANGED', `${name} ends before byte ${offset + length}`, offset + bytes.byteLength);
  return new Uint8Array(bytes);
}
