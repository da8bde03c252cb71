import { optionalAddon } from '../native.js';

// How often a held lock is tried again (Python's filelock polls every 50 ms too).
const POLL_MS = 50;

/** Waits for `promise` (settled either way), or rejects at once when `signal` aborts. */
function waitOrAbort(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return promise.catch(() => {});
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.catch(() => {}).then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/** Locks held by this thread, by path: a second holder here waits without asking the OS. */
const held = new Map<string, Promise<void>>();

/**
 * Runs `work` holding the lock file `path` as Python's filelock takes it (flock, through the
 * addon): huggingface_hub in another process, another process of ours, and another thread wait
 * for it, and it waits for them. Without the addon the lock is this thread's only (downloads
 * stay safe: bytes are renamed into place only once complete and checked).
 */
export async function withFileLock<T>(path: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  // This thread's holders queue first (flock locks of one process on separate opens also
  // exclude each other, but a queue wakes the next at once).
  while (held.has(path)) {
    signal?.throwIfAborted();
    await waitOrAbort(held.get(path)!, signal);
  }
  let release!: () => void;
  held.set(path, new Promise<void>((resolve) => (release = resolve)));
  let fd = -1;
  try {
    const addon = optionalAddon();
    if (addon !== undefined) {
      for (;;) {
        signal?.throwIfAborted();
        fd = addon.tryLockFile(path);
        if (fd >= 0) break;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    }
    return await work();
  } finally {
    if (fd >= 0) optionalAddon()!.unlockFile(fd);
    held.delete(path);
    release();
  }
}
