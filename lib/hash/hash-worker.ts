// A worker of hashTensorsAsync: opens the files it is given and hashes its run of tensors.
import { parentPort, workerData } from 'node:worker_threads';
import { GgufError } from '../errors.js';
import { openGguf } from '../file/gguf-file.js';
import { identityOf, type HashAnswer, type HashJob } from './parallel-hash.js';
import { hashPass, tensorKinds } from './tensor-hashes.js';

const job = workerData as HashJob;
let answer: HashAnswer;
try {
  const options = { mode: job.mode, limits: job.limits };
  using file = job.paths.length > 1 ? openGguf(job.paths, options) : openGguf(job.paths[0]!, { ...options, split: false });
  // Another file under a part's path (replaced by a rename since the caller opened it): the
  // caller hashes its open file itself.
  const replaced = file.parts.some((part, i) => identityOf(part.path!) !== job.identities[i]);
  if (!replaced) {
    file.parts.forEach((part, i) => {
      if (part.size !== job.sizes[i]) throw new GgufError('FILE_CHANGED', `${part.path} changed while it was being hashed`, part.size);
    });
  }
  answer = replaced ? { renamed: true } : { lines: hashPass(file, job.kinds, job.name, tensorKinds(job.kinds), false, undefined, job.first, job.end) };
  if (!replaced) file.verify();
} catch (error) {
  // The path gone since the caller checked it: the caller hashes its open file itself.
  answer = (error as NodeJS.ErrnoException).code === 'ENOENT' ? { renamed: true } : error instanceof GgufError ? { error: { code: error.code, message: error.message, offset: error.offset } } : { error: { message: error instanceof Error ? error.message : String(error) } };
}
parentPort!.postMessage(answer);
