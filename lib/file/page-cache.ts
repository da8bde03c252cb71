import { GgufError } from '../errors.js';
import type { NativeMapping, PageAdvice } from '../native.js';
import type { GgufTensor } from './tensor.js';
import { MappedSource, type ByteSource } from './source.js';

/** Which bytes of a file: every byte (undefined), or those of the named tensors. */
export type TensorSelection = ReadonlyArray<GgufTensor | string>;

export interface PrefetchOptions {
  /** Only these tensors' bytes (default: the whole file). */
  tensors?: TensorSelection;
  /** Called after each slice with the bytes brought in so far and the total. */
  onProgress?: (done: number, total: number) => void;
  /** Stops between slices; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
}

// Prefetch works in slices of this many bytes: progress and abort between them.
const PREFETCH_SLICE = 32 << 20;
const ADVICE: readonly PageAdvice[] = ['normal', 'random', 'sequential', 'willneed', 'dontneed'];

interface Range {
  source: ByteSource;
  offset: number;
  length: number;
}

/** The source's mapping; NOT_MAPPED for read mode and memory, CLOSED after close(). */
function mapped(source: ByteSource): NativeMapping {
  if (!(source instanceof MappedSource)) {
    throw new GgufError('NOT_MAPPED', 'the page cache is controlled for mapped files only (this file was opened in read mode or from memory)', 0);
  }
  return source.pages();
}

/** The page cache of a mapped file: residency, advice, locking and prefetching of byte ranges. */
export class PageCache {
  constructor(
    /** The file's sources: one, or one per part of a split model. */
    private readonly sources: readonly ByteSource[],
    private readonly tensorNamed: (name: string) => GgufTensor | undefined,
  ) {}

  residency(tensors?: TensorSelection): { resident: number; total: number } {
    let resident = 0;
    let total = 0;
    for (const r of this.ranges(tensors)) {
      resident += mapped(r.source).residency(r.offset, r.length);
      total += r.length;
    }
    return { resident, total };
  }

  advise(advice: PageAdvice, tensors?: TensorSelection): void {
    if (!ADVICE.includes(advice)) throw new TypeError(`advise: advice is one of ${ADVICE.join(', ')}, not '${String(advice)}'`);
    for (const r of this.ranges(tensors)) mapped(r.source).advise(r.offset, r.length, advice);
  }

  lock(tensors?: TensorSelection): void {
    for (const r of this.ranges(tensors)) mapped(r.source).lock(r.offset, r.length);
  }

  unlock(tensors?: TensorSelection): void {
    for (const r of this.ranges(tensors)) mapped(r.source).unlock(r.offset, r.length);
  }

  async prefetch(options: PrefetchOptions = {}): Promise<{ bytes: number }> {
    const ranges = this.ranges(options.tensors);
    for (const r of ranges) mapped(r.source);
    const total = ranges.reduce((sum, r) => sum + r.length, 0);
    let done = 0;
    for (const r of ranges) {
      for (let at = 0; at < r.length; at += PREFETCH_SLICE) {
        options.signal?.throwIfAborted();
        const length = Math.min(PREFETCH_SLICE, r.length - at);
        try {
          await mapped(r.source).prefetch(r.offset + at, length);
        } catch (error) {
          r.source.check(r.offset + at); // FILE_CHANGED when the pages were past the file's end
          throw error;
        }
        // Closed meanwhile (the slice in flight ran to its end): CLOSED, not warmed.
        r.source.check(r.offset + at);
        done += length;
        options.onProgress?.(done, total);
      }
    }
    options.signal?.throwIfAborted();
    return { bytes: done };
  }

  private ranges(tensors: TensorSelection | undefined): Range[] {
    if (tensors === undefined) return this.sources.map((source) => ({ source, offset: 0, length: source.size }));
    return tensors.map((t) => {
      const tensor = typeof t === 'string' ? this.tensorNamed(t) : t;
      if (tensor === undefined) throw new TypeError(`no tensor named '${String(t)}'`);
      // A tensor of another file would name bytes of this one at its offset.
      if (typeof t !== 'string' && this.tensorNamed(tensor.name) !== tensor) throw new TypeError(`tensor '${tensor.name}' is not a tensor of this file`);
      return { source: this.sources[tensor.part]!, offset: tensor.fileOffset, length: tensor.nbytes };
    });
  }
}
