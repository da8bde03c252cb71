import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const created: string[] = [];

// Registered when a test file first imports this module, so it runs after all of that file's
// tests, wherever tempDir() was called from (a test, a hook or the file's top level).
afterAll(() => {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A temporary directory, removed after the test file's tests. */
export function tempDir(prefix = 'gguf-mmap-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}
