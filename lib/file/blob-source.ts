import { GgufError } from '../errors.js';
import { AsyncSource } from './async-source.js';

/**
 * A file as a Blob (a File a person dropped or picked in a page, or Node's fs.openAsBlob): the
 * header, read at open, and byte ranges read on demand with blob.slice(), 16 MiB at a time. The
 * whole file is never read unless asked for.
 */
export class BlobSource extends AsyncSource {
  constructor(
    readonly blob: Blob,
    headBytes: Uint8Array,
    /** The file's name, for errors. */
    readonly name: string,
  ) {
    super(headBytes, 16 << 20);
  }

  get size(): number {
    return this.blob.size;
  }

  protected describe(): { name: string; kind: string } {
    return { name: this.name, kind: 'a Blob' };
  }

  protected readPiece(offset: number, length: number): Promise<Uint8Array> {
    return readSlice(this.blob, offset, length, this.name);
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
