/** The logical processors the page may use (navigator.hardwareConcurrency), at least 1. */
export function availableParallelism(): number {
  const n = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency;
  return typeof n === 'number' && n >= 1 ? Math.floor(n) : 1;
}
