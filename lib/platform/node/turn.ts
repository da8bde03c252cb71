/** Resolves on a later turn of the event loop, after pending I/O (setImmediate). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
