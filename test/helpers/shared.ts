import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `../shared` beside the repository root, where the team's fixtures live; undefined if absent. */
export const SHARED_DIR: string | undefined = (() => {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const dir = process.env.GGUF_MMAP_SHARED ?? join(root, '../shared');
  return existsSync(dir) ? dir : undefined;
})();

export const SKIP_SHARED = SHARED_DIR === undefined;
if (SKIP_SHARED) {
  console.warn('gguf-mmap tests: ../shared not found beside the repository; fixture tests are skipped');
}

export function sharedPath(...parts: string[]): string {
  if (SHARED_DIR === undefined) throw new Error('../shared is absent');
  return join(SHARED_DIR, ...parts);
}

export function readJson<T = unknown>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}
