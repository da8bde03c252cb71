// hashTensors with the per-tensor lines computed on worker threads while this thread computes
// the model's lines (one stream over every byte, which cannot be split): on 2 cores --all went
// 1.78x and --sha256 1.41x faster (bench/hash.ts); xxh64 alone stays on one thread. Each worker opens the same files itself
// (cheap: a mapping, or reads in read mode) and hashes a run of tensors of about equal bytes.
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { GgufError, type GgufErrorCode } from '../errors.js';
import type { GgufFile } from '../file/gguf-file.js';
import { DEFAULT_LIMITS } from '../format/parse.js';
import { hashPass, resolved, tensorKinds, type HashLine, type HashOptions } from './tensor-hashes.js';

export interface ParallelHashOptions extends HashOptions {
  /**
   * Worker threads for the per-tensor lines (default: the cores but one, at most 4, when sha1 or
   * sha256 is asked for; none for xxh64 alone, which one thread hashes at memory speed).
   */
  threads?: number;
}

/** What a worker is asked to hash, and what it answers. @internal */
export interface HashJob {
  /** Absolute: the worker's directory is the process's now, perhaps not the one the file was opened in. */
  paths: string[];
  mode: 'mmap' | 'read';
  /** Each part's size, device and inode as this thread sees them: a file replaced meanwhile is FILE_CHANGED. */
  sizes: number[];
  identities: string[];
  /** What this thread's open accepted (a file opened with raised limits opens there too). */
  limits: { maxTensors: number; maxKeys: number };
  kinds: HashLine['kind'][];
  name: string;
  first: number;
  end: number;
}
export type HashAnswer = { lines: HashLine[] } | { renamed: true } | { error: { code?: GgufErrorCode; message: string; offset?: number } };

/** A worker found another file under a part's path: the open file is hashed on this thread instead. */
class PathReplaced extends Error {}

const WORKER = new URL('./hash-worker.js', import.meta.url);

/** As hashTensors, the same lines; per-tensor lines on worker threads where that helps. */
export async function hashTensorsAsync(file: GgufFile, options: ParallelHashOptions = {}): Promise<HashLine[]> {
  const { kinds, layers, name } = resolved(file, options);
  const perTensor = layers ? tensorKinds(kinds) : [];
  const paths = file.parts.map((p) => p.path);
  // xxh64 alone runs at memory speed on one thread (measured: a worker made it 0.77x, its start
  // and the page faults of a second thread over the same pages cost more than the hashing saved).
  const slow = perTensor.some((k) => k !== 'xxh64');
  const threads = Math.min(options.threads ?? (slow ? Math.min(4, availableParallelism() - 1) : 0), file.tensors.length);
  const mode = file.mode;
  // One thread does it all: no per-tensor lines, no files to open again, no worker script (the
  // library run from its TypeScript sources).
  const workerPath = WORKER.protocol === 'file:' ? fileURLToPath(WORKER) : undefined;
  if (perTensor.length === 0 || threads < 1 || (mode !== 'mmap' && mode !== 'read') || paths.some((p) => p === undefined) || workerPath === undefined || !existsSync(workerPath)) {
    return hashPass(file, kinds, name, perTensor, true, options.onProgress);
  }
  const parts = file.partLayouts();
  const limits = {
    maxTensors: Math.max(DEFAULT_LIMITS.maxTensors, ...parts.map((p) => p.layout.tensors.count)),
    maxKeys: Math.max(DEFAULT_LIMITS.maxKeys, ...parts.map((p) => p.layout.kvs.length)),
  };
  const jobs = runsOfEqualBytes(file, threads).map(([first, end]): HashJob => ({
    paths: (paths as string[]).map((p) => resolve(p)),
    mode,
    sizes: file.parts.map((p) => p.size),
    // The files this thread has open (their identity when opened), not what the paths name now.
    identities: parts.map((p) => (p.source.origin === undefined ? identityOf(p.path!) : identityKey(p.source.origin.identity))),
    limits,
    kinds: perTensor,
    name,
    first,
    end,
  }));
  // Workers open the files by path: where a path names another file by now (replaced by a
  // rename), the open file is hashed here, on this thread, rather than failing.
  if (jobs[0]!.paths.some((path, i) => identityOrNull(path) !== jobs[0]!.identities[i])) {
    return hashPass(file, kinds, name, perTensor, true, options.onProgress);
  }
  const workers = jobs.map((job) => runWorker(workerPath, job));
  // Each answer's rejection is handled when it is awaited; until then, none is unhandled.
  for (const { answer } of workers) answer.catch(() => {});
  try {
    const model = hashPass(file, kinds, name, [], true, options.onProgress);
    let tensorLines: HashLine[];
    try {
      tensorLines = (await Promise.all(workers.map((w) => w.answer))).flat();
    } catch (error) {
      // Replaced between the check above and a worker's open: this thread's pass, then.
      if (!(error instanceof PathReplaced)) throw error;
      tensorLines = hashPass(file, kinds, name, perTensor, false);
    }
    return [...tensorLines, ...model];
  } finally {
    // Done, or failed here or in one of them: none is left running.
    for (const { worker } of workers) void worker.terminate();
  }
}

/** A file's device and inode, as `dev:ino` (what a worker compares its open file with). @internal */
export function identityOf(path: string): string {
  return identityKey(statSync(path, { bigint: true }));
}

function identityOrNull(path: string): string | null {
  try {
    return identityOf(path);
  } catch {
    return null;
  }
}

function identityKey(id: { dev: bigint | string; ino: bigint | string }): string {
  return `${id.dev}:${id.ino}`;
}

/** Tensor index runs [first, end) of about equal bytes, one per thread. */
function runsOfEqualBytes(file: GgufFile, threads: number): Array<[number, number]> {
  const total = file.tensors.reduce((n, t) => n + t.nbytes, 0);
  const runs: Array<[number, number]> = [];
  let first = 0;
  let bytes = 0;
  file.tensors.forEach((t, i) => {
    bytes += t.nbytes;
    if (bytes >= (total * (runs.length + 1)) / threads && runs.length < threads - 1) {
      runs.push([first, i + 1]);
      first = i + 1;
    }
  });
  runs.push([first, file.tensors.length]);
  return runs.filter(([a, b]) => b > a);
}

function runWorker(path: string, job: HashJob): { worker: Worker; answer: Promise<HashLine[]> } {
  const worker = new Worker(path, { workerData: job });
  const answer = new Promise<HashLine[]>((resolve, reject) => {
    worker.once('message', (answer: HashAnswer) => {
      if ('lines' in answer) resolve(answer.lines);
      else if ('renamed' in answer) reject(new PathReplaced());
      else {
        const { code, message, offset } = answer.error;
        reject(code !== undefined ? new GgufError(code, message, offset ?? 0) : new Error(message));
      }
    });
    worker.once('error', reject);
    worker.once('exit', (status) => reject(new Error(`a hashing worker exited (${status}) without an answer`)));
  });
  return { worker, answer };
}
