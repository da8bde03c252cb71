import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** The installed package's root folder (the one whose package.json names gguf-mmap). */
export function packageRoot(): string {
  if (cached !== undefined) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'gguf-mmap') return (cached = dir);
    const parent = dirname(dir);
    if (parent === dir) throw new Error('gguf-mmap: cannot find the package root');
    dir = parent;
  }
}
