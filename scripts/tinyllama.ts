// Where the real TinyLlama model comes from: the Hugging Face cache (the one pullModel,
// huggingface_hub and llama.cpp share), filled by `npm run fetch:tinyllama`; or GGUF_TINYLLAMA.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { hubCacheDir } from '../lib/cache/hf-cache.js';

export const TINYLLAMA_REPO = 'TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF';
export const TINYLLAMA_FILE = 'tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf';
export const TINYLLAMA_URI = `hf:${TINYLLAMA_REPO}/${TINYLLAMA_FILE}`;

/** The real model if one is at hand: GGUF_TINYLLAMA, or any snapshot of it in the Hugging Face cache. */
export function findTinyllama(): string | undefined {
  const named = process.env.GGUF_TINYLLAMA;
  if (named !== undefined && named !== '' && existsSync(named)) return named;
  const snapshots = join(hubCacheDir(), `models--${TINYLLAMA_REPO.replace('/', '--')}`, 'snapshots');
  let commits: string[];
  try {
    commits = readdirSync(snapshots);
  } catch {
    return undefined;
  }
  return commits.map((commit) => join(snapshots, commit, TINYLLAMA_FILE)).find((p) => existsSync(p));
}
