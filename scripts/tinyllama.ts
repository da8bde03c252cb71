// Where the real TinyLlama model comes from and where it is kept once fetched.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const TINYLLAMA_FILE = 'tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf';
export const TINYLLAMA_URL = `https://huggingface.co/TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF/resolve/main/${TINYLLAMA_FILE}`;

/** GGUF_MMAP_CACHE, else $XDG_CACHE_HOME/gguf-mmap, else ~/.cache/gguf-mmap. */
export function cacheDir(): string {
  if (process.env.GGUF_MMAP_CACHE) return process.env.GGUF_MMAP_CACHE;
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'gguf-mmap');
}

/** The real model if one is at hand: GGUF_TINYLLAMA, or the cache `fetch:tinyllama` fills. */
export function findTinyllama(): string | undefined {
  const candidates = [process.env.GGUF_TINYLLAMA, join(cacheDir(), TINYLLAMA_FILE)];
  return candidates.find((p): p is string => p !== undefined && p !== '' && existsSync(p));
}
