/**
 * CI also runs the suite on Windows (the Windows node.exe under wine, scripts/windows-smoke.sh).
 * Tests of what only POSIX systems do say so in their name when skipped there.
 */
export const WINDOWS = process.platform === 'win32';

/** The test's name, with the reason it is skipped on Windows. */
export function posixOnly(name: string, why: string): string {
  return WINDOWS ? `${name} [skipped on Windows: ${why}]` : name;
}

/** The Windows node.exe under wine (scripts/windows-smoke.sh), where fetch cannot reach a local server. */
export const UNDER_WINE = WINDOWS && process.env.WINEPREFIX !== undefined;
