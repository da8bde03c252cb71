import { GgufMetadata } from './metadata.js';
import { hyperparametersOf, summarize, type ModelSummary } from './summary.js';
import { readHyperparameters, type ModelHyperparameters } from './hyperparameters.js';
import { GgufError } from '../errors.js';
import { parseLayout, type GgufLayout, type ParseLimits } from '../format/parse.js';
import type { TensorTable } from '../format/tensor-table.js';
import { addonFix, addonUnavailableReason, canMap } from '#platform/native';
import type { PageAdvice } from '../native.js';
import { PageCache, type PrefetchOptions, type TensorSelection } from './page-cache.js';
import { ReadSource } from '#platform/read-source';
import { MappedSource, MemorySource, type ByteSource } from './source.js';
import { BlobSource } from './blob-source.js';
import { toFilePath } from '#platform/path';
import { GgufTensor } from './tensor.js';
import { checkNotAPart, checkSplitSet, partMissing, splitSetOf } from './split.js';
import { verifySource } from '#platform/verify';
import type { VerifyOptions } from './verify.js';
import { applyChatTemplate, chatTemplateTokens, type ApplyChatTemplateOptions } from '../chat/apply.js';
import type { ChatMessage } from '../chat/render.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import { registerVocabularySource } from '#platform/async-tokenizer';

/**
 * How a file's bytes are reached: 'mmap' maps it (views of the file, no copies; needs the addon);
 * 'read' reads it with fs (the header once, each tensor's bytes into a copy when first asked for).
 */
export type OpenMode = 'mmap' | 'read';

export interface OpenOptions {
  /**
   * 'mmap' or 'read'; by default (and with 'auto') mmap where the addon loads and the runtime
   * allows ArrayBuffers over external memory, read elsewhere. GGUF_MMAP_MODE sets the default.
   */
  mode?: OpenMode | 'auto';
  /**
   * Largest ArrayBuffer to create over the mapping (a tensor longer than this is TENSOR_TOO_LARGE);
   * defaults to buffer.constants.MAX_LENGTH. Shared windows are 32 MiB or this, if smaller (see
   * README, "Large files"). At least 64 KiB.
   */
  maxWindowBytes?: number;
  /** Bounds on what the header may claim (see README, "Hostile files"); LIMIT_EXCEEDED past them. */
  limits?: ParseLimits;
  /**
   * A file named as a part of a split model (`PREFIX-00002-of-00005.gguf`) opens the whole set
   * (default true); false opens that one file alone.
   */
  split?: boolean;
  /**
   * Views over SharedArrayBuffers where the runtime can make them over the mapping (default true;
   * Node 22.23, 24.22, 26.12 and later): no garbage collection for any tensor size, and a view
   * posted to a worker shares the pages instead of copying them. False: ArrayBuffers everywhere.
   * See `sharedArrayBuffers` and README, "Memory and the garbage collector".
   */
  sharedArrayBuffers?: boolean;
  /**
   * Ask for 2 MiB pages (Linux: MADV_HUGEPAGE on the mapping, before anything reads it; default
   * false). File pages read from then on come in 2 MiB folios where the kernel and filesystem make
   * them (ext4 on Linux 6.18 here), each mapped by one page-table entry: random row lookups miss
   * the TLB far less. Pages already in the page cache stay as they were read; resident memory
   * grows 2 MiB at a time. `file.hugePages` tells whether the advice was taken.
   */
  hugePages?: boolean;
}

/** One file of a model split into parts (a file not split is its own single part). */
export interface GgufPart {
  readonly path: string | undefined;
  readonly size: number;
  /** File offset of this part's data section. */
  readonly dataOffset: number;
  readonly tensorCount: number;
}

/** A part's bytes and header, and where its tensors start among all parts' tensors. */
interface FilePart {
  readonly path: string | undefined;
  readonly source: ByteSource;
  readonly layout: GgufLayout;
  readonly first: number;
}

/**
 * An opened GGUF file: its header fields, metadata and tensors. Opening reads only the header;
 * tensor data is touched when a tensor's bytes are read.
 */
export class GgufFile implements Disposable {
  readonly version: number;
  readonly endian: 'little' | 'big';
  readonly alignment: number;
  /** File offset of the (first part's) data section. For a file with no tensors it may lie past the end. */
  readonly dataOffset: number;
  /** Bytes of the file; of all parts together for a split model. */
  readonly fileSize: number;
  /** The (first part's) metadata, split.* keys included for a split model. */
  readonly metadata: GgufMetadata;
  /** The files of the model, in order: one for a file not split. */
  readonly parts: readonly GgufPart[];
  private readonly fileParts: readonly FilePart[];
  /** GgufTensor objects, made when first asked for: a header's tensor infos stay compact until then. */
  private readonly made: Array<GgufTensor | undefined> = [];
  private all: readonly GgufTensor[] | undefined;

  /**
   * `whole`: how a single file was asked for when it must be a whole model (openGguf without
   * `{ split: false }`): by its name, or as a list of one part.
   */
  constructor(list: ReadonlyArray<{ source: ByteSource; path?: string }>, limits: ParseLimits = {}, whole?: 'named' | 'listed') {
    // Parts after the first of a split model hold their split keys and tensor infos only: a small
    // first window (grown if needed) spares V8 megabytes of new ArrayBuffers per part.
    const headers = list.map(({ source }, i) => readHeader(source, limits, i === 0 ? undefined : PART_HEAD_BYTES));
    if (list.length > 1) checkSplitSet(headers.map((h) => h.layout), list.map((p) => p.path ?? '(memory)'));
    else if (whole !== undefined) checkNotAPart(headers[0]!.layout, list[0]!.path ?? '(memory)', whole === 'listed');
    let first = 0;
    this.fileParts = list.map(({ source, path }, i) => {
      const part = { path, source, layout: headers[i]!.layout, first };
      first += part.layout.tensors.count;
      return part;
    });
    this.parts = Object.freeze(
      this.fileParts.map((p) => Object.freeze({ path: p.path, size: p.layout.fileSize, dataOffset: p.layout.dataOffset, tensorCount: p.layout.tensors.count })),
    );
    const { view, layout } = headers[0]!;
    const source = list[0]!.source;
    this.headerView = view;
    this.version = layout.version;
    this.endian = layout.littleEndian ? 'little' : 'big';
    this.alignment = layout.alignment;
    this.dataOffset = layout.dataOffset;
    this.fileSize = this.fileParts.reduce((sum, p) => sum + p.layout.fileSize, 0);
    this.metadata = new GgufMetadata(layout.kvs, {
      view,
      fileSize: layout.fileSize,
      littleEndian: layout.littleEndian,
      wideCounts: layout.version >= 2,
      closed: () => source.closed,
    });
    this.hyperparameterTable = hyperparametersOf(this.metadata);
    this.hyperparametersRead = readKept(() => readHyperparameters(this.metadata));
  }

  private summaryMade: ModelSummary | undefined;
  private readonly hyperparameterTable: ModelSummary['hyperparameters'];
  /**
   * Architecture, parameter count, bytes and bits per weight by tensor type, the architecture's
   * hyperparameters as numbers; across every part of a split model. From the header alone.
   */
  summary(): ModelSummary {
    this.summaryMade ??= summarize(this.metadata, this.hyperparameterTable, this.fileParts.map((p) => p.layout.tensors), this.fileSize);
    return this.summaryMade;
  }

  private readonly hyperparametersRead: { value: ModelHyperparameters } | { error: unknown };
  /**
   * The model's hyperparameters as llama.cpp uses them after loading (its defaults filled in),
   * typed by architecture family (narrow on `family`); read at open (a few keys), so this works
   * after close() too. BAD_HYPERPARAMETER, naming the key, for a value missing or malformed.
   */
  hyperparameters(): ModelHyperparameters {
    if ('error' in this.hyperparametersRead) throw this.hyperparametersRead.error;
    return this.hyperparametersRead.value;
  }

  /** The first part's header window (what the metadata reads). */
  private readonly headerView: DataView;
  private tokenizerMade: Tokenizer | undefined;
  /**
   * The model's tokenizer, built from the metadata (tokenizer.ggml.*) when first asked for: needs
   * the header only, so it works for remote files too. UNSUPPORTED_TOKENIZER for a vocabulary
   * llama.cpp would not load (or one not implemented here).
   */
  tokenizer(): Tokenizer {
    if (this.tokenizerMade === undefined) {
      const name = this.metadata.type('general.name') === 'STRING' ? this.metadata.getString('general.name')! : (this.parts[0]?.path ?? 'model');
      const tokenizer = new Tokenizer(this.metadata, name);
      // encodeAsync's workers build theirs from a copy of the header bytes, never from the mapping.
      const { kvs, fileSize, littleEndian, version } = this.fileParts[0]!.layout;
      registerVocabularySource(tokenizer, { records: kvs, view: this.headerView, fileSize, littleEndian, wideCounts: version >= 2, name, closed: () => this.closed });
      this.tokenizerMade = tokenizer;
    }
    return this.tokenizerMade;
  }

  /** Number of tensors (of all parts), without making their objects. */
  get tensorCount(): number {
    const last = this.fileParts.at(-1)!;
    return last.first + last.layout.tensors.count;
  }

  /** Tensors in file order, part after part (every GgufTensor object is made on first use). */
  get tensors(): readonly GgufTensor[] {
    this.all ??= Object.freeze(Array.from({ length: this.tensorCount }, (_, i) => this.tensorAt(i)));
    return this.all;
  }

  /** The tensor with this name, in whichever part holds it, or undefined. */
  tensor(name: string): GgufTensor | undefined {
    for (const part of this.fileParts) {
      const i = part.layout.tensors.find(name);
      if (i >= 0) return this.tensorAt(part.first + i);
    }
    return undefined;
  }

  private tensorAt(i: number): GgufTensor {
    let t = this.made[i];
    if (t === undefined) {
      let index = this.fileParts.length - 1;
      while (this.fileParts[index]!.first > i) index--;
      const part = this.fileParts[index]!;
      t = new GgufTensor(part.layout.tensors.record(i - part.first), part.layout.dataOffset, part.source, part.layout.littleEndian, index);
      this.made[i] = t;
    }
    return t;
  }

  private get source(): ByteSource {
    return this.fileParts[0]!.source;
  }

  get closed(): boolean {
    return this.source.closed;
  }

  /**
   * 'mmap' (views of a mapping), 'read' (copies read with fs), 'memory' (parseGguf: views of the
   * caller's bytes), 'remote' (openGgufRemote: tensor bytes fetched on demand) or 'blob'
   * (openGgufBlob: tensor bytes read from the Blob on demand).
   */
  get mode(): OpenMode | 'memory' | 'remote' | 'blob' {
    const source = this.source;
    if (source instanceof BlobSource) return 'blob';
    return source instanceof MappedSource ? 'mmap' : source instanceof ReadSource ? 'read' : source instanceof MemorySource ? 'memory' : 'remote';
  }

  /** The parts' sources and parsed headers, in order (for the tools that rewrite files). @internal */
  partLayouts(): ReadonlyArray<{ readonly source: ByteSource; readonly layout: GgufLayout; readonly path: string | undefined }> {
    return this.fileParts;
  }

  /** The parts' byte sources, in order (for the remote layer's statistics). @internal */
  partSources(): readonly ByteSource[] {
    return this.fileParts.map((p) => p.source);
  }

  /**
   * Whether tensor bytes and views lie over SharedArrayBuffers (mapped, where the runtime can make
   * them): a view posted to a worker (postMessage, structuredClone) is then the same memory there.
   */
  get sharedArrayBuffers(): boolean {
    return this.source instanceof MappedSource && this.source.sharedArrayBuffers;
  }

  /** Whether the mapping was advised to use 2 MiB pages (`{ hugePages: true }` on Linux). */
  get hugePages(): boolean {
    return this.source instanceof MappedSource && this.source.hugePages;
  }

  /** Whether tensor bytes and views are views of the file's memory (mmap and memory modes) rather than copies. */
  get zeroCopy(): boolean {
    return this.source.zeroCopy;
  }

  private cache: PageCache | undefined;
  private get pages(): PageCache {
    this.cache ??= new PageCache(this.fileParts.map((p) => p.source), (name) => this.tensor(name));
    return this.cache;
  }

  /**
   * How much of the file (or of these tensors) is in memory now, in bytes (mincore): for
   * readiness checks. NOT_MAPPED for a file opened in read mode or from memory.
   */
  residency(tensors?: TensorSelection): { resident: number; total: number } {
    return this.pages.residency(tensors);
  }

  /**
   * Tells the kernel how the file (or these tensors) will be read (madvise): 'random' turns
   * read-ahead off (one cold row costs one page, not megabytes), 'sequential' reads further
   * ahead, 'willneed' starts reading now, 'dontneed' lets this process's pages go (they are read
   * again when touched; writes made into views are lost), 'normal' undoes the others.
   */
  advise(advice: PageAdvice, tensors?: TensorSelection): void {
    this.pages.advise(advice, tensors);
  }

  /**
   * Keeps the file (or these tensors) resident (mlock) until unlock() or close(). Needs enough
   * RLIMIT_MEMLOCK (`ulimit -l`) or CAP_IPC_LOCK: otherwise a Node-style EPERM/ENOMEM error.
   */
  lock(tensors?: TensorSelection): void {
    this.pages.lock(tensors);
  }

  unlock(tensors?: TensorSelection): void {
    this.pages.unlock(tensors);
  }

  /**
   * Brings the file (or these tensors) into memory off the event loop, in 32 MiB slices on a
   * libuv thread (MADV_POPULATE_READ, else a read per page), with progress in bytes and an
   * AbortSignal checked between slices. Resolves with the bytes brought in.
   */
  prefetch(options: PrefetchOptions = {}): Promise<{ bytes: number }> {
    return this.pages.prefetch(options);
  }

  /**
   * Checks that the file on disk is still the one mapped: throws GgufError FILE_CHANGED if it was
   * truncated (reading the lost pages would raise SIGBUS) or modified in place since it was
   * opened; with `sha256`, also hashes every byte and throws CHECKSUM_MISMATCH on a difference.
   * A file replaced by rename passes: the mapping keeps serving the old file.
   */
  verify(options: VerifyOptions = {}): void {
    if (options.sha256 !== undefined && this.fileParts.length > 1) {
      throw new TypeError('verify({ sha256 }) checks one file; for a split model, verify each part (openGguf(part, { split: false }))');
    }
    for (const part of this.fileParts) verifySource(part.source, options);
  }

  /**
   * The file's chat template (`tokenizer.chat_template`, or `tokenizer.chat_template.<name>`)
   * rendered with these messages as transformers' apply_chat_template renders it, with the
   * vocabulary's BOS/EOS text; from the header alone (remote files too). With `tokenize: true`,
   * the token ids llama.cpp's server feeds the model for this chat (one BOS whether or not the
   * template writes it). See docs/api.md, "Chat templates".
   */
  applyChatTemplate(messages: readonly ChatMessage[], options: ApplyChatTemplateOptions & { tokenize: true }): Int32Array;
  applyChatTemplate(messages: readonly ChatMessage[], options?: ApplyChatTemplateOptions & { tokenize?: false }): string;
  applyChatTemplate(messages: readonly ChatMessage[], options?: ApplyChatTemplateOptions): string | Int32Array;
  applyChatTemplate(messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): string | Int32Array {
    if (options.tokenize === true) return chatTemplateTokens(this.metadata, () => this.tokenizer(), messages, options);
    return applyChatTemplate(this.metadata, messages, options);
  }

  /**
   * Lets go of the file. Views handed out before (tensor bytes, typed views, metadata arrays that
   * were views) keep their length but read zeros from then on, so nothing that still reads one
   * (yours, or Node's own async work) can fault; the memory goes when the last of them is
   * garbage. Access through this object throws CLOSED. Calling close() again does nothing.
   */
  close(): void {
    for (const part of this.fileParts) part.source.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** The value, or the error that says why there is none (thrown when asked for, not at open). */
function readKept<T>(read: () => T): { value: T } | { error: unknown } {
  try {
    return { value: read() };
  } catch (error) {
    return { error };
  }
}

// The first header window of a split model's parts after the first (split keys and tensor infos).
const PART_HEAD_BYTES = 64 << 10;

/** Parses the header through the source's head window, growing it while the header runs past. */
function readHeader(source: ByteSource, limits: ParseLimits, firstLength?: number): { view: DataView; layout: GgufLayout } {
  let view = source.head(firstLength)!;
  for (;;) {
    try {
      return { view, layout: parseLayout(view, source.size, limits) };
    } catch (error) {
      // Grown by 4x, or at once to 4x where the parse stopped (the first time: the least the
      // header's counts need; mixture-of-experts names take 2.75x that), so that a large header
      // is parsed twice at most, not three times.
      const longer = error instanceof GgufError && error.code === 'HEADER_TOO_LARGE' ? source.head(Math.max(view.byteLength * 4, error.offset * 4)) : undefined;
      if (longer === undefined) throw error;
      view = longer;
    }
  }
}

/**
 * Parses a GGUF file held in memory. The tensors view `bytes`; nothing is copied. One part of a
 * split model is SPLIT_MISMATCH (it would be half a model) unless `{ split: false }`.
 */
export function parseGguf(bytes: ArrayBuffer | ArrayBufferView, options: Pick<OpenOptions, 'limits'> & { split?: false } = {}): GgufFile {
  return new GgufFile([{ source: new MemorySource(bytes) }], options.limits, options.split === false ? undefined : 'listed');
}

const MODES = ['mmap', 'read', 'auto'] as const;

function chooseMode(asked: OpenOptions['mode']): OpenMode {
  const fromEnv = process.env.GGUF_MMAP_MODE;
  const mode = asked ?? (fromEnv === undefined || fromEnv === '' ? 'auto' : (fromEnv as OpenMode));
  if (!MODES.includes(mode)) throw new TypeError(`openGguf: mode is one of ${MODES.join(', ')}, not '${String(mode)}'`);
  if (mode === 'read') return 'read';
  if (canMap()) return 'mmap';
  if (mode === 'auto') return 'read';
  const why = addonUnavailableReason() ?? 'this runtime does not allow ArrayBuffers over external memory';
  throw new GgufError('ADDON_UNAVAILABLE', `cannot map the file: ${why}; ${addonFix(why)}`, 0);
}

/**
 * Maps the file at `path` (or reads it, see `options.mode`) and parses its header. A file named
 * as a part of a split model opens the whole set (see `options.split`); a list of paths opens
 * those parts, in order. I/O problems throw the system error (code ENOENT, EISDIR, ...); invalid
 * contents throw a GgufError. The files are let go by close() (or `using`), or once the file and
 * every view of it are garbage.
 */
export function openGguf(path: string | URL | Buffer | ReadonlyArray<string | URL | Buffer>, options: OpenOptions = {}): GgufFile {
  const named = Array.isArray(path) ? undefined : toFilePath(path as string, 'openGguf');
  const paths = named === undefined ? (path as ReadonlyArray<string | URL | Buffer>).map((p) => toFilePath(p, 'openGguf')) : options.split === false ? [named] : splitSetOf(named);
  if (paths.length === 0) throw new TypeError('openGguf: an empty list of parts');
  const mode = chooseMode(options.mode);
  const opened: Array<{ source: ByteSource; path: string }> = [];
  const open = (p: string): ByteSource => {
    try {
      return mode === 'mmap' ? new MappedSource(p, options.maxWindowBytes, options.sharedArrayBuffers ?? true, options.hugePages ?? false) : new ReadSource(p);
    } catch (error) {
      // A part of a set found by its name: absent is SPLIT_PART_MISSING (one open, no stat first).
      throw (paths.length > 1 && named !== undefined ? partMissing(p, named, error) : undefined) ?? error;
    }
  };
  try {
    for (const p of paths) opened.push({ source: open(p), path: p });
    const whole = options.split === false ? undefined : Array.isArray(path) ? 'listed' : 'named';
    return new GgufFile(opened, options.limits, whole);
  } catch (error) {
    for (const { source } of opened) source.close();
    throw error;
  }
}
