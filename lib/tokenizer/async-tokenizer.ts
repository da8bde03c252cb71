/**
 * Tokenizer.encodeAsync / decodeAsync: encode and decode run on a pool of worker threads shared by
 * the whole process, so a long text (megabytes take seconds) never holds the event loop. A worker
 * runs the very same encode/decode on its own Tokenizer, built once per vocabulary from a copy of
 * the header's metadata bytes (a SharedArrayBuffer made once per tokenizer and shared by every
 * worker): no worker reads the file's mapping, so closing the file cannot leave one reading
 * unmapped memory. Short inputs are done on the calling thread (a worker's round trip costs more).
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { GgufError, type GgufErrorCode } from '../errors.js';
import type { KvRecord } from '../format/parse.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './tokenizer.js';

/** What a worker builds a Tokenizer from: the metadata records and the header bytes they point into. @internal */
export interface VocabularyCopy {
  readonly records: readonly KvRecord[];
  /** The header from file offset 0 to the end of its last array value. */
  readonly bytes: SharedArrayBuffer;
  readonly fileSize: number;
  readonly littleEndian: boolean;
  readonly wideCounts: boolean;
  readonly name: string;
}

/** Where a tokenizer's vocabulary comes from (GgufFile.tokenizer() registers it). @internal */
export interface VocabularySource {
  readonly records: readonly KvRecord[];
  /** The header window the records' offsets point into (from file offset 0). */
  readonly view: DataView;
  readonly fileSize: number;
  readonly littleEndian: boolean;
  readonly wideCounts: boolean;
  readonly name: string;
  /** Whether the file was closed (its bytes read as zeros from then on): calls then reject with CLOSED. */
  closed(): boolean;
}

/**
 * Messages to a worker: a request, the text of an encode coming first in `part`s; and `more`,
 * asking for the next part of a long decoded text. @internal
 */
export type TokenizeRequest = WorkRequest | { id: number; part: string } | { id: number; more: true };
/** @internal */
export type WorkRequest = {
  id: number;
  vocab: number;
  /** Sent with a worker's first request for this vocabulary. */
  vocabulary?: VocabularyCopy;
  /** A vocabulary the worker can let go of (it keeps at most WORKER_VOCABULARIES). */
  evict?: number;
} & Work;
/** A worker's messages: ready (its module loaded), an answer, or a part of a long decoded text. @internal */
export type TokenizeAnswer = { ready: true } | ({ id: number } & ({ ids: Int32Array } | { text: string } | { part: string } | { error: SerializedError }));
export interface SerializedError {
  name: string;
  message: string;
  code?: GgufErrorCode;
  offset?: number;
}

/**
 * Long texts cross between threads in parts of this many UTF-16 units, one per turn of the event
 * loop (copying one is well under a millisecond): a 4 MB text never holds the loop for its whole
 * copy. Parts may split a surrogate pair; joined, they are the same string.
 */
export const PART_LENGTH = 1 << 18;
/** The header is copied for the workers in slices of this many bytes, one per turn. */
const COPY_SLICE = 1 << 20;

/**
 * Inputs this short are done on the calling thread: at the slowest vocabulary measured (UGM,
 * about 4 µs per character) 256 characters take about 1 ms, less than a worker's round trip.
 */
const INLINE_LENGTH = 256;
/** Vocabularies a worker keeps built (each is its index tables over the shared header copy). */
const WORKER_VOCABULARIES = 8;
/** A worker idle this long exits (its vocabularies with it); the next call starts one again. */
const IDLE_MS = 10_000;

const WORKER_URL = new URL('./tokenize-worker.js', import.meta.url);

interface Registered {
  readonly vocab: number;
  readonly source: VocabularySource;
  /** The workers' copy of the header, made once, on the first call that needs a worker. */
  copy?: Promise<VocabularyCopy>;
}

const registered = new WeakMap<Tokenizer, Registered>();
let nextVocab = 1;

/** Lets a tokenizer's async calls run on the workers, from this source. @internal */
export function registerVocabularySource(tokenizer: Tokenizer, source: VocabularySource): void {
  registered.set(tokenizer, { vocab: nextVocab++, source });
}

/**
 * The header bytes the metadata reads, copied into shared memory a slice per turn of the event
 * loop (a large vocabulary's header is tens of MB): from offset 0 to the end of the last array
 * value (scalars and strings are decoded at open and live in the records). A file closed
 * meanwhile read zeros into it: CLOSED, then.
 */
async function copyVocabulary(source: VocabularySource): Promise<VocabularyCopy> {
  const { records, view } = source;
  let end = 0;
  for (const r of records) if (r.array !== undefined) end = Math.max(end, r.array.dataOffset + r.array.dataBytes);
  end = Math.min(end, view.byteLength);
  const bytes = new SharedArrayBuffer(end);
  const to = new Uint8Array(bytes);
  for (let at = 0; at < end; at += COPY_SLICE) {
    if (at > 0) await turn();
    to.set(new Uint8Array(view.buffer, view.byteOffset + at, Math.min(COPY_SLICE, end - at)), at);
  }
  if (source.closed()) throw closedError();
  return { records, bytes, fileSize: source.fileSize, littleEndian: source.littleEndian, wideCounts: source.wideCounts, name: source.name };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const closedError = () => new GgufError('CLOSED', 'tokenizer used after its file was closed', 0);

/** Tokenizer.encodeAsync. @internal */
export function encodeOffThread(tokenizer: Tokenizer, text: string, options: EncodeOptions): Promise<Int32Array> {
  const plain = { addSpecial: options.addSpecial, parseSpecial: options.parseSpecial };
  if (typeof text !== 'string' || text.length <= INLINE_LENGTH) return inline(() => tokenizer.encode(text, plain));
  return submit(tokenizer, () => tokenizer.encode(text, plain), { kind: 'encode', text, options: plain }) as Promise<Int32Array>;
}

/** Tokenizer.decodeAsync. @internal */
export function decodeOffThread(tokenizer: Tokenizer, ids: ArrayLike<number>, options: DecodeOptions): Promise<string> {
  const plain = { removeSpecial: options.removeSpecial, unparseSpecial: options.unparseSpecial };
  const here = () => tokenizer.decode(ids, plain);
  if (ids === null || typeof ids !== 'object' || ids.length <= INLINE_LENGTH) return inline(here);
  // The ids travel as a copy in an Int32Array, taken now (as decode reads them at the call); one
  // that is not a token id (a fraction, a string, out of range) is decode's RangeError, raised
  // here, where it checks the ids before anything else.
  let copy: Int32Array;
  if (ids instanceof Int32Array) copy = ids.slice();
  else {
    copy = new Int32Array(ids.length);
    const size = tokenizer.vocabSize;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!Number.isInteger(id) || id < 0 || id >= size) return inline(here);
      copy[i] = id;
    }
  }
  return submit(tokenizer, here, { kind: 'decode', ids: copy, options: plain }) as Promise<string>;
}

function inline<T>(run: () => T): Promise<T> {
  return new Promise((resolve) => resolve(run()));
}

export type Work = { kind: 'encode'; text: string; options: EncodeOptions } | { kind: 'decode'; ids: Int32Array; options: DecodeOptions };

interface Job {
  readonly entry: Registered;
  readonly vocabulary: VocabularyCopy;
  readonly work: Work;
  /** The same work on this thread, where no worker can run. */
  readonly here: () => Int32Array | string;
  readonly resolve: (value: Int32Array | string) => void;
  readonly reject: (error: unknown) => void;
}

class PoolWorker {
  readonly worker: Worker;
  /** Vocabularies the worker has built, least recently used first (as the worker keeps them). */
  readonly known = new Set<number>();
  job: { id: number; job: Job; sentVocabulary: boolean; parts: string[] } | undefined;
  idleTimer: NodeJS.Timeout | undefined;
  /** Its module loaded: a failure from then on is its call's, not the worker script's. */
  private ready = false;

  constructor(path: string) {
    this.worker = new Worker(path);
    this.worker.unref();
    this.worker.on('message', (answer: TokenizeAnswer) => this.answered(answer));
    this.worker.on('error', (error) => this.failed(error));
    this.worker.on('exit', (status) => this.failed(new Error(`a tokenizer worker exited (${status}) during a call`)));
  }

  run(job: Job): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const { vocab } = job.entry;
    const request: WorkRequest = { id: nextRequest++, vocab, ...job.work };
    const sentVocabulary = !this.known.has(vocab);
    if (sentVocabulary) {
      request.vocabulary = job.vocabulary;
      if (this.known.size >= WORKER_VOCABULARIES) {
        const oldest = this.known.values().next().value!;
        this.known.delete(oldest);
        request.evict = oldest;
      }
    } else this.known.delete(vocab);
    this.known.add(vocab);
    const id = request.id;
    this.job = { id, job, sentVocabulary, parts: [] };
    // Busy: it keeps the process alive as any pending I/O does; idle, it does not.
    this.worker.ref();
    if (request.kind === 'decode') {
      this.worker.postMessage(request, [request.ids.buffer as ArrayBuffer]);
      return;
    }
    // A long text goes in parts, one per turn; the request itself carries the last.
    const text = request.text;
    let at = 0;
    const next = () => {
      if (this.job?.id !== id) return; // the worker failed meanwhile
      if (text.length - at > PART_LENGTH) {
        this.worker.postMessage({ id, part: text.slice(at, at + PART_LENGTH) } satisfies TokenizeRequest);
        at += PART_LENGTH;
        setImmediate(next);
      } else this.worker.postMessage({ ...request, text: at === 0 ? text : text.slice(at) });
    };
    next();
  }

  private answered(answer: TokenizeAnswer): void {
    if ('ready' in answer) {
      this.ready = true;
      return;
    }
    const current = this.job;
    if (current === undefined || current.id !== answer.id) return;
    if ('part' in answer) {
      // A long decoded text comes in parts, each asked for when the last has arrived.
      current.parts.push(answer.part);
      this.worker.postMessage({ id: current.id, more: true } satisfies TokenizeRequest);
      return;
    }
    this.job = undefined;
    this.worker.unref();
    if ('error' in answer) {
      if (current.sentVocabulary) this.known.delete(current.job.entry.vocab);
      current.job.reject(revive(answer.error));
    } else {
      // Parts joined by +: V8 makes a rope of them (no copy here; flattened when first read).
      let text = '';
      for (const part of current.parts) text += part;
      current.job.resolve('ids' in answer ? answer.ids : text + answer.text);
    }
    pump();
    if (this.job === undefined) {
      this.idleTimer = setTimeout(() => retire(this), IDLE_MS);
      this.idleTimer.unref();
    }
  }

  private failed(error: unknown): void {
    const current = this.job;
    this.job = undefined;
    retire(this);
    if (!this.ready) {
      // A worker that cannot start (its script fails to load): this thread does the work from now on.
      workerPath = null;
      for (const job of [...(current === undefined ? [] : [current.job]), ...queue.splice(0)]) settleHere(job);
      return;
    }
    // Its call failed it (out of memory): that call fails; the others go on.
    current?.job.reject(error);
    pump();
  }
}

let nextRequest = 1;
const queue: Job[] = [];
const pool: PoolWorker[] = [];
let workerPath: string | null | undefined;
let poolSize: number | undefined;

/** The compiled worker script, or null where there is none (the library run from its TypeScript sources). */
function scriptPath(): string | null {
  if (workerPath === undefined) {
    const path = WORKER_URL.protocol === 'file:' ? fileURLToPath(WORKER_URL) : undefined;
    workerPath = path !== undefined && existsSync(path) ? path : null;
  }
  return workerPath;
}

async function submit(tokenizer: Tokenizer, here: () => Int32Array | string, work: Work): Promise<Int32Array | string> {
  const entry = registered.get(tokenizer);
  if (entry?.source.closed() === true) throw closedError();
  // Not from a file (nothing to build a worker's copy from) or no worker script: on this thread.
  if (entry === undefined || scriptPath() === null) return here();
  let vocabulary: VocabularyCopy;
  try {
    vocabulary = await (entry.copy ??= copyVocabulary(entry.source));
  } catch (error) {
    entry.copy = undefined;
    throw error;
  }
  if (scriptPath() === null) return here();
  return new Promise((resolve, reject) => {
    queue.push({ entry, vocabulary, work, here, resolve, reject });
    pump();
  });
}

/** Gives queued jobs to idle workers, starting workers (up to the pool's size) while jobs wait. */
function pump(): void {
  poolSize ??= Math.max(1, Math.min(4, availableParallelism() - 1));
  while (queue.length > 0) {
    let worker = pool.find((w) => w.job === undefined);
    if (worker === undefined && pool.length < poolSize) {
      try {
        worker = new PoolWorker(scriptPath()!);
      } catch {
        // No worker can start here: this thread does the waiting jobs.
        workerPath = null;
        for (const job of queue.splice(0)) settleHere(job);
        return;
      }
      pool.push(worker);
    }
    if (worker === undefined) return;
    worker.run(queue.shift()!);
  }
}

function settleHere(job: Job): void {
  try {
    job.resolve(job.here());
  } catch (error) {
    job.reject(error);
  }
}

function retire(worker: PoolWorker): void {
  if (worker.idleTimer !== undefined) clearTimeout(worker.idleTimer);
  const i = pool.indexOf(worker);
  if (i >= 0) pool.splice(i, 1);
  worker.worker.removeAllListeners('exit');
  worker.worker.on('exit', () => {});
  void worker.worker.terminate();
}

function revive(error: SerializedError): Error {
  if (error.code !== undefined) {
    const revived = new GgufError(error.code, '', error.offset ?? 0);
    revived.message = error.message;
    return revived;
  }
  const Kind = error.name === 'TypeError' ? TypeError : error.name === 'RangeError' ? RangeError : Error;
  return new Kind(error.message);
}

/** An error as it crosses to the calling thread. @internal */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof GgufError) return { name: error.name, message: error.message, code: error.code, offset: error.offset };
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}

/** Workers running now (for tests and the benchmark). @internal */
export function tokenizerWorkerCount(): number {
  return pool.length;
}
