import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const created: string[] = [];

// Registered when a test file first imports this module, so it runs after all of that file's
// tests, wherever tempDir() was called from (a test, a hook or the file's top level).
// Asynchronous, with retries: Node closes a file-backed Blob's handle (fs.openAsBlob) a turn of the
// event loop after its read resolves, and Windows cannot remove a folder while a file in it is open.
afterAll(async () => {
  for (const dir of created.splice(0)) await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
});

/** A temporary directory, removed after the test file's tests. */
export function tempDir(prefix = 'gguf-mmap-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}
