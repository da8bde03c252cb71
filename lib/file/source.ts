import { bufferConstants } from '#platform/buffer';
import { GgufError } from '../errors.js';
import { mapFile } from '#platform/native';
import type { FileIdentity, NativeMapping } from '../native.js';

/** Where a byte range of the file lives: inside `buffer`, starting at `byteOffset`. */
export interface Located {
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
}

/** The bytes of one GGUF file: an in-memory buffer or a mapping exposed through windows. */
export interface ByteSource {
  readonly size: number;
  /**
   * The file from offset 0, `minLength` bytes of it (default a few MiB) where the file and the
   * window size allow; undefined when it cannot be longer than what it gave last. The header must
   * lie inside it.
   */
  head(minLength?: number): DataView | undefined;
  /** A buffer holding all of [offset, offset + length); the range is inside the file. */
  locate(offset: number, length: number): Located;
  /** Ranges up to this long that start at a multiple of it never need a window of their own. */
  readonly sliceLength: number;
  /** Whether locate() hands out views of the file's memory (else each range is read into a copy). */
  readonly zeroCopy: boolean;
  close(): void;
  readonly closed: boolean;
  /** Throws CLOSED after close(), FILE_CHANGED once pages of the file were lost; `offset` is for the error. */
  check(offset: number): void;
  /**
   * Throws FILE_CHANGED once pages of the file were lost, closed or not: work that had the
   * mapping pinned through a close() read them as zeros all the same.
   */
  checkPages?(offset: number): void;
  /** For a file read with fs (read mode): its open descriptor (CLOSED after close()). */
  descriptor?(): number;
  /** For a mapped file: what verify() compares (see GgufFile.verify). */
  readonly origin?: MappedOrigin;
  /** For a remote file (where locate() is REMOTE_FILE): bytes fetched asynchronously. */
  fetch?(offset: number, length: number, options?: { signal?: AbortSignal; onProgress?: (done: number, total: number) => void }): Promise<Uint8Array>;
}

export interface MappedOrigin {
  readonly path: string;
  /** The file when it was mapped. */
  readonly identity: FileIdentity;
  /** The mapped file now, read from the file itself (a rename or chdir does not change which). */
  current(): FileIdentity | null;
}

/**
 * Each window carries its source under this key, so that a view handed to a module-level
 * function (dequantize(type, tensor.bytes)) is still checked for CLOSED and FILE_CHANGED. (A
 * WeakMap from windows to sources grew V8's heap with every file opened and closed.)
 */
const SOURCE = Symbol('gguf-mmap source');
type Tagged = ArrayBufferLike & { [SOURCE]?: ByteSource };

/** Throws as the source of `buffer` would (CLOSED, FILE_CHANGED) if it is a window over a mapping. */
export function checkBuffer(buffer: ArrayBufferLike, offset: number): void {
  (buffer as Tagged)[SOURCE]?.check(offset);
}

/** Throws FILE_CHANGED if `buffer` is a window over a mapping that lost pages, closed or not. */
export function checkBufferPages(buffer: ArrayBufferLike, offset: number): void {
  (buffer as Tagged)[SOURCE]?.checkPages?.(offset);
}

export class MemorySource implements ByteSource {
  readonly closed = false;
  readonly zeroCopy = true;
  private readonly bytes: Uint8Array;

  constructor(input: ArrayBuffer | ArrayBufferView) {
    this.bytes = ArrayBuffer.isView(input)
      ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength)
      : new Uint8Array(input);
  }

  get size(): number {
    return this.bytes.byteLength;
  }
  private headGiven = false;
  /** All of the bytes, once: they cannot grow. */
  head(): DataView | undefined {
    if (this.headGiven) return undefined;
    this.headGiven = true;
    return new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }
  locate(offset: number): Located {
    return { buffer: this.bytes.buffer as ArrayBuffer, byteOffset: this.bytes.byteOffset + offset };
  }
  get sliceLength(): number {
    return this.bytes.byteLength;
  }
  close(): void {}
  check(): void {}
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
 * Shared windows are this long. V8 counts each new ArrayBuffer's length as external memory: 64 MiB
 * of them since the last full GC starts an incremental one (and, while it runs, each new buffer
 * pays a marking step), and half the old generation's limit (about 2 GiB) forces a full
 * mark-compact at once, which took 100-400 ms per window with a 360 MiB heap when windows spanned
 * whole files. 32 MiB keeps the first read of a model under the first threshold; smaller windows
 * made reading a whole model pay more steps (bench/first-access.ts). Node-API offers no
 * ArrayBuffer V8 leaves uncounted (README: Memory and the garbage collector).
 */
const GRID_WINDOW = 32 << 20;
// Windows of ranges across a window's end kept for reuse, in bytes (the newest is always kept).
const OWN_WINDOWS_BYTES = 64 << 20;

/**
 * A file mapped by the addon, seen through windows (ArrayBuffers over parts of the mapping) created
 * when first needed: the file cut into windows of `windowSize` bytes, side by side, so that reading
 * a whole model makes about its size in windows; a range across a window's end, or longer than
 * one, gets a window of exactly its own bytes, up to `maxRange` (buffer.constants.MAX_LENGTH, 4
 * GiB on Node 20, or `maxWindowBytes`).
 */
export class MappedSource implements ByteSource {
  readonly size: number;
  readonly zeroCopy = true;
  readonly windowSize: number;
  readonly maxRange: number;
  private readonly mapping: NativeMapping;
  /**
   * Bit 0 set by the addon's SIGBUS handler when a read hit a page the file no longer has. Made at
   * the first check after the header is read: the buffer costs 5-8 us, and most parts of a split
   * set are opened and never read.
   */
  private status: Uint32Array | undefined;
  private readonly windows = new Map<string, ArrayBufferLike>();
  private readonly ownWindows = new Map<string, ArrayBufferLike>();
  private ownBytes = 0;
  private headLength = 0;

  constructor(
    private readonly path: string,
    maxWindowBytes = bufferConstants.MAX_LENGTH,
    sharedArrayBuffers = true,
    hugePages = false,
  ) {
    if (!(maxWindowBytes >= MIN_WINDOW)) throw new RangeError(`maxWindowBytes must be at least ${MIN_WINDOW}`);
    const limit = Math.min(maxWindowBytes, bufferConstants.MAX_LENGTH);
    this.mapping = mapFile(path, limit, sharedArrayBuffers, hugePages);
    this.size = this.mapping.size;
    this.maxRange = Math.min(limit, this.size);
    // A whole small file, else page multiples, so that windows start on pages.
    const grid = Math.min(limit, GRID_WINDOW);
    this.windowSize = this.size > 0 && this.size <= grid ? this.size : Math.max(PAGE, Math.floor(grid / PAGE) * PAGE);
  }

  /** Asked for by verify() only, so opening does not pay for it. */
  get origin(): MappedOrigin {
    const mapping = this.mapping;
    return { path: this.path, identity: mapping.identity, current: () => mapping.currentIdentity() };
  }

  get sliceLength(): number {
    return this.windowSize;
  }

  /** False when the kernel refused a writable private mapping (strict overcommit): see README. */
  get copyOnWrite(): boolean {
    return this.mapping.copyOnWrite;
  }

  get hugePages(): boolean {
    return this.mapping.hugePages;
  }

  /** Whether the windows are SharedArrayBuffers (no GC accounting; shared with workers, not copied). */
  get sharedArrayBuffers(): boolean {
    return this.mapping.sharedArrayBuffers;
  }

  // Kept in JS: checked on every tensor access, where a call into the addon would cost more.
  private isClosed = false;
  get closed(): boolean {
    return this.isClosed;
  }

  check(offset: number): void {
    this.checkOpen(offset);
    this.status ??= new Uint32Array(this.mapping.status());
    this.checkPages(offset);
  }

  checkPages(offset: number): void {
    // The status buffer holds the mapping's slot, so it still says what happened after close();
    // without one, nothing was read through this source that could have found a page lost.
    if (this.status !== undefined && (this.status[0]! & 1) !== 0) {
      throw new GgufError('FILE_CHANGED', `'${this.path}' lost pages while mapped (truncated by another process?); they read as zeros`, offset);
    }
  }

  head(minLength = HEAD_BYTES): DataView | undefined {
    // An empty file has nothing mapped: the parser sees zero bytes and reports TRUNCATED.
    if (this.size === 0) return this.headLength++ === 0 ? new DataView(new ArrayBuffer(0)) : undefined;
    const length = Math.min(this.maxRange, minLength);
    if (length <= this.headLength) return undefined; // cannot grow past what we have
    this.windows.delete('head@0');
    // The first head window: nothing of the new mapping has been read, so no page can have been
    // found lost yet, and the check (which makes the status buffer) is left to the next window.
    const unread = this.headLength === 0;
    this.headLength = length;
    return new DataView(this.window('head', 0, length, unread));
  }

  locate(offset: number, length: number): Located {
    if (length > this.maxRange) {
      throw new GgufError(
        'TENSOR_TOO_LARGE',
        `${length} bytes do not fit in one ArrayBuffer window (at most ${this.maxRange} bytes)`,
        offset,
      );
    }
    // The window the range starts in holds it if it ends by the window's end. A file that fits
    // in one window always uses window 0.
    const start = offset - (offset % this.windowSize);
    if (offset + length <= start + this.windowSize) {
      const buffer = this.window('grid', start, Math.min(this.windowSize, this.size - start));
      return { buffer, byteOffset: offset - start };
    }
    return { buffer: this.ownWindow(offset, length), byteOffset: 0 };
  }

  /**
   * A window of exactly [offset, offset + length), for a range across a window's end. The most
   * recent ones are kept (up to OWN_WINDOWS_BYTES, and always the last), so that lookups repeated
   * over the same span make no new ArrayBuffer; keeping every one until close() grew external
   * memory without bound (16.7 GiB for 200 lookups).
   */
  private ownWindow(offset: number, length: number): ArrayBufferLike {
    this.check(offset);
    const key = `${offset}:${length}`;
    let buffer = this.ownWindows.get(key);
    if (buffer !== undefined) {
      this.ownWindows.delete(key); // most recent last
    } else {
      buffer = this.newWindow(offset, length);
      this.ownBytes += length;
      for (const [oldest, old] of this.ownWindows) {
        if (this.ownBytes <= OWN_WINDOWS_BYTES) break;
        this.ownWindows.delete(oldest);
        this.ownBytes -= old.byteLength;
      }
    }
    this.ownWindows.set(key, buffer);
    return buffer;
  }

  /** The mapping itself, for page-cache calls and row lookups; CLOSED or FILE_CHANGED first. */
  pages(): NativeMapping {
    this.check(0);
    return this.mapping;
  }

  close(): void {
    this.isClosed = true;
    this.mapping.close();
    this.windows.clear();
    this.ownWindows.clear();
    this.ownBytes = 0;
  }

  private checkOpen(offset: number): void {
    if (this.isClosed) throw new GgufError('CLOSED', 'the file has been closed', offset);
  }

  /** The shared window `kind` ('head', 'grid') at `start`, kept until close(); `unread`: nothing of the mapping read yet. */
  private window(kind: string, start: number, length: number, unread = false): ArrayBufferLike {
    if (unread) this.checkOpen(start);
    else this.check(start);
    const key = `${kind}@${start}`;
    let buffer = this.windows.get(key);
    if (buffer === undefined) {
      buffer = this.newWindow(start, length);
      this.windows.set(key, buffer);
    }
    return buffer;
  }

  /** A new window over [start, start + length), tagged with this source (see SOURCE). */
  private newWindow(start: number, length: number): ArrayBufferLike {
    const buffer = this.mapping.window(start, length);
    Object.defineProperty(buffer, SOURCE, { value: this });
    return buffer;
  }
}
