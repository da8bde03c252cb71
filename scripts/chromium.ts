// Debian's chromium driven by playwright-core, for the viewer's browser tests and its screenshot.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';

export const CHROMIUM_PATH = process.env.GGUF_MMAP_CHROMIUM ?? '/usr/bin/chromium';
/** Why the browser tests cannot run here, or undefined when they can. */
export const CHROMIUM_MISSING = existsSync(CHROMIUM_PATH)
  ? undefined
  : `no chromium at ${CHROMIUM_PATH}: install it (as root: apt-get update && apt-get install -y chromium) or point GGUF_MMAP_CHROMIUM at one`;

/** A headless chromium with a fresh profile (removed on close) that does nothing of its own on the network. */
export async function launchChromium(viewport = { width: 1280, height: 900 }): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'gguf-mmap-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport,
    // Not the sanitizer's preload (CI runs the suite with libasan preloaded for the addon's sake):
    // chromium is not built for it.
    env: Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !['LD_PRELOAD', 'ASAN_OPTIONS', 'UBSAN_OPTIONS'].includes(k))) as Record<string, string>,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
