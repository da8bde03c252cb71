import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** URL of the compiled library, for scripts run in child processes (npm test builds it first). */
export const DIST_INDEX = pathToFileURL(join(import.meta.dirname, '../../dist/lib/index.js')).href;

/**
 * Runs an ES module script in a fresh node process (so a crash cannot take the test runner with
 * it) and returns its exit status, signal and the JSON it printed last on stdout.
 */
export function runChild(script: string, nodeArgs: string[] = []) {
  const r = spawnSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  const lastLine = r.stdout.trim().split('\n').pop() ?? '';
  let result: unknown;
  try {
    result = JSON.parse(lastLine);
  } catch {
    result = undefined;
  }
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, result };
}
