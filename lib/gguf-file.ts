import { GgufMetadata } from './metadata.js';
import { GgufError } from './errors.js';
import { parseLayout, type GgufLayout } from './parse.js';
import { MappedSource, MemorySource, type ByteSource } from './source.js';
import { GgufTensor } from './tensor.js';
import { verifySource, type VerifyOptions } from './verify.js';

export interface OpenOptions {
  /**
   * Largest ArrayBuffer to create over the mapping; defaults to buffer.constants.MAX_LENGTH.
   * Files larger than this are exposed through several windows (see README, "Large files").
   * At least 64 KiB.
   */
  maxWindowBytes?: number;
}

/**
 * An opened GGUF file: its header fields, metadata and tensors. Opening reads only the header;
 * tensor data is touched when a tensor's bytes are read.
 */
export class GgufFile implements Disposable {
  readonly version: number;
  readonly endian: 'little' | 'big';
  readonly alignment: number;
  /** File offset of the data section. For a file with no tensors it may lie past the end. */
  readonly dataOffset: number;
  readonly fileSize: number;
  readonly metadata: GgufMetadata;
  /** Tensors in file order. */
  readonly tensors: readonly GgufTensor[];
  private readonly byName: Map<string, GgufTensor>;

  constructor(private readonly source: ByteSource) {
    const { view, layout } = readHeader(source);
    this.version = layout.version;
    this.endian = layout.littleEndian ? 'little' : 'big';
    this.alignment = layout.alignment;
    this.dataOffset = layout.dataOffset;
    this.fileSize = layout.fileSize;
    this.metadata = new GgufMetadata(layout.kvs, {
      view,
      fileSize: layout.fileSize,
      littleEndian: layout.littleEndian,
      wideCounts: layout.version >= 2,
      closed: () => source.closed,
    });
    this.tensors = Object.freeze(layout.tensors.map((t) => new GgufTensor(t, layout.dataOffset, source, layout.littleEndian)));
    this.byName = new Map(this.tensors.map((t) => [t.name, t]));
  }

  /** The tensor with this name, or undefined. */
  tensor(name: string): GgufTensor | undefined {
    return this.byName.get(name);
  }

  get closed(): boolean {
    return this.source.closed;
  }

  /**
   * Checks that the file on disk is still the one mapped: throws GgufError FILE_CHANGED if it was
   * truncated (reading the lost pages would raise SIGBUS) or modified in place since it was
   * opened; with `sha256`, also hashes every byte and throws CHECKSUM_MISMATCH on a difference.
   * A file replaced by rename passes: the mapping keeps serving the old file.
   */
  verify(options: VerifyOptions = {}): void {
    verifySource(this.source, options);
  }

  /**
   * Unmaps the file. Every view handed out (tensor bytes, typed views, metadata arrays that were
   * views) becomes empty: length 0, reads give undefined. Calling close() again does nothing.
   */
  close(): void {
    this.source.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Parses the header through the source's head window, growing it while the header runs past. */
function readHeader(source: ByteSource): { view: DataView; layout: GgufLayout } {
  let view = source.head()!;
  for (;;) {
    try {
      return { view, layout: parseLayout(view, source.size) };
    } catch (error) {
      const longer = error instanceof GgufError && error.code === 'HEADER_TOO_LARGE' ? source.head(view.byteLength * 4) : undefined;
      if (longer === undefined) throw error;
      view = longer;
    }
  }
}

/** Parses a GGUF file held in memory. The tensors view `bytes`; nothing is copied. */
export function parseGguf(bytes: ArrayBuffer | ArrayBufferView): GgufFile {
  return new GgufFile(new MemorySource(bytes));
}

/**
 * Maps the file at `path` read-only and parses its header. I/O problems throw the system error
 * (code ENOENT, EISDIR, ...); invalid contents throw a GgufError. The mapping is released by
 * close() (or `using`), or once the file and every view of it are garbage.
 */
export function openGguf(path: string, options: OpenOptions = {}): GgufFile {
  const source = new MappedSource(path, options.maxWindowBytes);
  try {
    return new GgufFile(source);
  } catch (error) {
    source.close();
    throw error;
  }
}
