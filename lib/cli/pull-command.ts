import { listCache, hubCacheDir } from '../cache/hf-cache.js';
import { GgufError } from '../errors.js';
import { pullModel, type PulledModel } from '../cache/pull.js';
import { formatBytes, printable } from './inspect.js';

/** `gguf-mmap pull URI`: a progress bar on a terminal (per part for a split model), else one summary line; the path last on stdout. */
export async function runPull(uri: string, options: { revision?: string; cacheDir?: string }, tty: NodeJS.WriteStream | undefined): Promise<PulledModel> {
  const start = performance.now();
  let lastDraw = 0;
  const pulled = await pullModel(uri, {
    ...options,
    onProgress: (done, total, parts) => {
      const now = performance.now();
      if (tty === undefined || (now - lastDraw < 100 && done < total)) return;
      lastDraw = now;
      const seconds = Math.max(1e-3, (now - start) / 1000);
      const rate = done / seconds;
      const eta = rate > 0 && total > done ? `ETA ${Math.ceil((total - done) / rate)} s` : '';
      const width = 30;
      const filled = total === 0 ? width : Math.round((done / total) * width);
      const each = parts.length > 1 ? `  parts ${parts.map((p) => `${p.total === 0 ? 0 : Math.floor((p.done / p.total) * 100)}%`).join(' ')}` : '';
      tty.write(`\r\x1b[K[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${formatBytes(done)} of ${formatBytes(total)}  ${(rate / 1e6).toFixed(1)} MB/s  ${eta}${each}`);
    },
  });
  tty?.write('\r\x1b[K');
  const seconds = (performance.now() - start) / 1000;
  const what = pulled.downloaded === 0 ? 'cached' : `downloaded ${formatBytes(pulled.downloaded)} in ${seconds.toFixed(1)} s (${(pulled.downloaded / 1e6 / Math.max(1e-3, seconds)).toFixed(1)} MB/s)`;
  const parts = pulled.parts.length > 1 ? `, ${pulled.parts.length} parts` : '';
  process.stderr.write(`${printable(pulled.repo)}@${printable(pulled.revision)} (${pulled.commit.slice(0, 10)}${parts}): ${what}\n`);
  // The path comes from the server's file name (hf:ORG/REPO:QUANT): escaped as inspect escapes,
  // so no byte of it drives the terminal and the path stays one line, the last.
  process.stdout.write(`${printable(pulled.path)}\n`);
  return pulled;
}

/**
 * Codes of a pull that mean the transfer failed (exit 1, as the other transfer failures), not
 * that a file is invalid: the bytes did not match, changed, or a part of the set is not there.
 */
export const PULL_TRANSFER_FAILED: ReadonlySet<string> = new Set(['CHECKSUM_MISMATCH', 'FILE_CHANGED', 'SPLIT_PART_MISSING']);

/** The exit status `report()` gave `error`, corrected for a pull's transfer failures. */
export function pullExitStatus(error: unknown, reported: number): number {
  return error instanceof GgufError && PULL_TRANSFER_FAILED.has(error.code) ? 1 : reported;
}

/** `gguf-mmap cache`: the cached repositories, their files and sizes. */
export function cacheListing(json: boolean, root = hubCacheDir()): string {
  const repos = listCache(root);
  if (json) return JSON.stringify({ root, repos }) + '\n';
  const lines = [`cache ${printable(root)}`];
  if (repos.length === 0) lines.push('  (empty)');
  for (const r of repos) {
    lines.push(`  ${printable(r.repo)}  ${formatBytes(r.bytes)}`);
    for (const f of r.files) lines.push(`    ${printable(f.path)}  ${formatBytes(f.bytes)}  ${printable(f.revision)}${f.revision === f.commit ? '' : ` (${f.commit.slice(0, 10)})`}`);
  }
  return lines.join('\n') + '\n';
}
