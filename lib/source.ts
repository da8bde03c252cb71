import { constants as bufferConstants } from 'node:buffer';
import { GgufError } from './errors.js';
import { mapFile, type NativeMapping } from './native.js';

/** Where a byte range of the file lives: inside `buffer`, starting at `byteOffset`. */
export interface Located {
  readonly buffer: ArrayBuffer;
  readonly byteOffset: number;
}

/** The bytes of one GGUF file: an in-memory buffer or a mapping exposed through windows. */
export interface ByteSource {
  readonly size: number;
  /**
   * The file from offset 0, at least `minLength` bytes of it where the file and the window size
   * allow; undefined when it cannot be longer than `minLength` asks past. The header must lie
   * inside it.
   */
  head(minLength?: number): DataView | undefined;
  /** A buffer holding all of [offset, offset + length); the range is inside the file. */
  locate(offset: number, length: number): Located;
  close(): void;
  readonly closed: boolean;
  /** For a mapped file: its path and what it was when mapped (see GgufFile.verify). */
  readonly origin?: { path: string; identity: { dev: string; ino: string; mtimeNs: string } };
}

export class MemorySource implements ByteSource {
  readonly closed = false;
  private readonly bytes: Uint8Array;

  constructor(input: ArrayBuffer | ArrayBufferView) {
    this.bytes = ArrayBuffer.isView(input)
      ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength)
      : new Uint8Array(input);
  }

  get size(): number {
    return this.bytes.byteLength;
  }
  head(minLength = 0): DataView | undefined {
    if (minLength > this.bytes.byteLength) return undefined;
    return new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }
  locate(offset: number): Located {
    return { buffer: this.bytes.buffer as ArrayBuffer, byteOffset: this.bytes.byteOffset + offset };
  }
  close(): void {}
}

const PAGE = 4096;
const MIN_WINDOW = 64 * 1024;
/**
 * The header is read through a window of its own, a few MiB, grown when a header is longer.
 * V8 counts every ArrayBuffer's length as external memory and schedules full GCs by it, so a
 * window over the whole model at open would make every open pay for a mark-compact.
 */
const HEAD_BYTES = 4 << 20;

/**
 * A file mapped by the addon. One ArrayBuffer cannot exceed buffer.constants.MAX_LENGTH (4 GiB on
 * Node 20), so tensors are seen through windows, created when first needed: a grid of windows of `windowSize` bytes,
 * each starting half a window after the previous one, so that any range up to half a window lies
 * wholly inside one of them; a longer range gets a window of exactly its own bytes.
 */
export class MappedSource implements ByteSource {
  readonly size: number;
  readonly windowSize: number;
  private readonly stride: number;
  private readonly mapping: NativeMapping;
  private readonly windows = new Map<string, ArrayBuffer>();
  private headLength = 0;

  constructor(
    private readonly path: string,
    maxWindowBytes = bufferConstants.MAX_LENGTH,
  ) {
    if (!(maxWindowBytes >= MIN_WINDOW)) throw new RangeError(`maxWindowBytes must be at least ${MIN_WINDOW}`);
    const limit = Math.min(maxWindowBytes, bufferConstants.MAX_LENGTH);
    this.mapping = mapFile(path, limit);
    this.size = this.mapping.size;
    this.windowSize = this.size <= limit ? this.size : Math.floor(limit / PAGE) * PAGE;
    this.stride = Math.max(PAGE, Math.floor(this.windowSize / 2 / PAGE) * PAGE);
  }

  /** Asked for by verify() only, so opening does not pay for it. */
  get origin(): { path: string; identity: { dev: string; ino: string; mtimeNs: string } } {
    return { path: this.path, identity: this.mapping.identity };
  }

  // Kept in JS: checked on every tensor access, where a call into the addon would cost more.
  private isClosed = false;
  get closed(): boolean {
    return this.isClosed;
  }

  head(minLength = HEAD_BYTES): DataView | undefined {
    // An empty file has nothing mapped: the parser sees zero bytes and reports TRUNCATED.
    if (this.size === 0) return this.headLength++ === 0 ? new DataView(new ArrayBuffer(0)) : undefined;
    const length = Math.min(this.windowSize, this.size, Math.max(minLength, HEAD_BYTES));
    if (length <= this.headLength) return undefined; // cannot grow past what we have
    this.windows.delete(`head:0`);
    this.headLength = length;
    return new DataView(this.window('head', 0, length));
  }

  locate(offset: number, length: number): Located {
    if (length > this.windowSize) {
      throw new GgufError(
        'TENSOR_TOO_LARGE',
        `${length} bytes do not fit in one ArrayBuffer window (at most ${this.windowSize} bytes)`,
        offset,
      );
    }
    // The first grid window that reaches the range's end; it holds the range if it starts by its
    // start. A file that fits in one window always uses window 0.
    const gridStart = Math.max(0, Math.ceil((offset + length - this.windowSize) / this.stride)) * this.stride;
    if (gridStart <= offset) {
      const buffer = this.window('grid', gridStart, Math.min(this.windowSize, this.size - gridStart));
      return { buffer, byteOffset: offset - gridStart };
    }
    return { buffer: this.window('own', offset, length), byteOffset: 0 };
  }

  close(): void {
    this.isClosed = true;
    this.mapping.close();
    this.windows.clear();
  }

  private window(kind: string, start: number, length: number): ArrayBuffer {
    if (this.closed) throw new GgufError('CLOSED', 'the file has been closed', start);
    const key = `${kind}:${start}`;
    let buffer = this.windows.get(key);
    if (buffer === undefined) {
      buffer = this.mapping.window(start, length);
      this.windows.set(key, buffer);
    }
    return buffer;
  }
}
