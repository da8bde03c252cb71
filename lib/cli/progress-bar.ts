// The one progress bar of the CLI's commands: on a terminal only, shown once the work has taken a
// second (short work prints nothing), redrawn at most every 100 ms, with MB/s for byte counts.

export interface ProgressBar {
  /** `done` of `total` (bytes, or elements when `rate` is off). */
  update(done: number, total: number): void;
  /** Clears the bar's line. */
  end(): void;
}

const NONE: ProgressBar = { update: () => {}, end: () => {} };

export function progressBar(stream: NodeJS.WriteStream | undefined, options: { rate?: boolean; afterMs?: number } = {}): ProgressBar {
  if (stream === undefined) return NONE;
  const start = performance.now();
  const afterMs = options.afterMs ?? 1000;
  let drawnAt = -Infinity;
  let drawn = false;
  return {
    update(done, total) {
      const now = performance.now();
      if (now - start < afterMs || (now - drawnAt < 100 && done < total)) return;
      drawnAt = now;
      drawn = true;
      const share = total > 0 ? Math.min(1, done / total) : 1;
      const rate = options.rate === false ? '' : `  ${(done / 1e6 / Math.max(1e-3, (now - start) / 1000)).toFixed(0)} MB/s`;
      stream.write(`\r[${'#'.repeat(Math.round(share * 30)).padEnd(30, '.')}] ${Math.floor(share * 100)}%${rate}`);
    },
    end() {
      if (drawn) stream.write('\r\x1b[K');
    },
  };
}
