/**
 * The suite runs twice in CI: files mapped (the default) and read with fs (GGUF_MMAP_MODE=read,
 * as where the addon cannot load). Tests of the mapping itself say so in their name when skipped.
 */
export const READ_MODE = process.env.GGUF_MMAP_MODE === 'read';

/** The test's name, with the reason it is skipped in a read-mode run. */
export function mmapOnly(name: string): string {
  return READ_MODE ? `${name} [skipped: tests the mapping; this run reads files (GGUF_MMAP_MODE=read)]` : name;
}
