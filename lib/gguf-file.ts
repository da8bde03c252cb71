import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgufMetadata } from './metadata.js';
import { GgufError } from './errors.js';
import { parseLayout, type GgufLayout, type ParseLimits } from './parse.js';
import type { TensorTable } from './tensor-table.js';
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
  /** Bounds on what the header may claim (see README, "Hostile files"); LIMIT_EXCEEDED past them. */
  limits?: ParseLimits;
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
  private readonly table: TensorTable;
  /** GgufTensor objects, made when first asked for: a header's tensor infos stay compact until then. */
  private readonly made: Array<GgufTensor | undefined> = [];
  private all: readonly GgufTensor[] | undefined;

  constructor(
    private readonly source: ByteSource,
    limits: ParseLimits = {},
  ) {
    const { view, layout } = readHeader(source, limits);
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
    this.table = layout.tensors;
  }

  /** Number of tensors, without making their objects. */
  get tensorCount(): number {
    return this.table.count;
  }

  /** Tensors in file order (every GgufTensor object is made on first use). */
  get tensors(): readonly GgufTensor[] {
    this.all ??= Object.freeze(Array.from({ length: this.table.count }, (_, i) => this.tensorAt(i)));
    return this.all;
  }

  /** The tensor with this name, or undefined. */
  tensor(name: string): GgufTensor | undefined {
    const i = this.table.find(name);
    return i < 0 ? undefined : this.tensorAt(i);
  }

  private tensorAt(i: number): GgufTensor {
    let t = this.made[i];
    if (t === undefined) {
      t = new GgufTensor(this.table.record(i), this.dataOffset, this.source, this.endian === 'little');
      this.made[i] = t;
    }
    return t;
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
   * Lets go of the file. Views handed out before (tensor bytes, typed views, metadata arrays that
   * were views) keep their length but read zeros from then on, so nothing that still reads one
   * (yours, or Node's own async work) can fault; the memory goes when the last of them is
   * garbage. Access through this object throws CLOSED. Calling close() again does nothing.
   */
  close(): void {
    this.source.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Parses the header through the source's head window, growing it while the header runs past. */
function readHeader(source: ByteSource, limits: ParseLimits): { view: DataView; layout: GgufLayout } {
  let view = source.head()!;
  for (;;) {
    try {
      return { view, layout: parseLayout(view, source.size, limits) };
    } catch (error) {
      // Grown by 4x, or at once to twice the least the header's counts need (the error's offset;
      // real names and shapes take about that).
      const longer = error instanceof GgufError && error.code === 'HEADER_TOO_LARGE' ? source.head(Math.max(view.byteLength * 4, error.offset * 2)) : undefined;
      if (longer === undefined) throw error;
      view = longer;
    }
  }
}

/** Parses a GGUF file held in memory. The tensors view `bytes`; nothing is copied. */
export function parseGguf(bytes: ArrayBuffer | ArrayBufferView, options: Pick<OpenOptions, 'limits'> = {}): GgufFile {
  return new GgufFile(new MemorySource(bytes), options.limits);
}

/** A path as fs takes it (string, Buffer, file: URL), made absolute; NUL bytes are refused as fs refuses them. */
function toFilePath(path: string | URL | Buffer): string {
  let text: string;
  if (typeof path === 'string') text = path;
  else if (path instanceof URL) text = fileURLToPath(path);
  else if (Buffer.isBuffer(path)) text = new TextDecoder('utf-8', { fatal: true }).decode(path);
  else throw new TypeError(`openGguf: path must be a string, Buffer or file: URL, not ${path === null ? 'null' : typeof path}`);
  if (text.includes('\0')) {
    throw Object.assign(new TypeError(`openGguf: path must not contain NUL bytes: ${JSON.stringify(text)}`), { code: 'ERR_INVALID_ARG_VALUE' });
  }
  return resolve(text);
}

/**
 * Maps the file at `path` and parses its header. I/O problems throw the system error (code
 * ENOENT, EISDIR, ...); invalid contents throw a GgufError. The file is let go by close() (or
 * `using`), or once the file and every view of it are garbage.
 */
export function openGguf(path: string | URL | Buffer, options: OpenOptions = {}): GgufFile {
  const source = new MappedSource(toFilePath(path), options.maxWindowBytes);
  try {
    return new GgufFile(source, options.limits);
  } catch (error) {
    source.close();
    throw error;
  }
}
