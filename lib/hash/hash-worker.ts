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
  file.parts.forEach((part, i) => {
    if (part.size !== job.sizes[i] || identityOf(part.path!) !== job.identities[i]) {
      throw new GgufError('FILE_CHANGED', `${part.path} changed while it was being hashed`, part.size);
    }
  });
  answer = { lines: hashPass(file, job.kinds, job.name, tensorKinds(job.kinds), false, undefined, job.first, job.end) };
  file.verify();
} catch (error) {
  answer = error instanceof GgufError ? { error: { code: error.code, message: error.message, offset: error.offset } } : { error: { message: error instanceof Error ? error.message : String(error) } };
}
parentPort!.postMessage(answer);
