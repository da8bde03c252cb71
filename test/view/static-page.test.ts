// gguf-mmap view --static DIR (issue 37): the viewer's page written to a folder, opened from
// file:// in Debian's chromium with no server behind it: a picked file, then a URL (CORS, ranges),
// each answered in the page by the browser build and the server's own API code. The page's
// answers must be the server's for the same file. Skipped without chromium, except under CI.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openGguf, writeGgufFile } from '../../lib/index.js';
import { createViewApi } from '../../lib/view/view-api.js';
import { parseViewArgs, ViewUsageError } from '../../lib/cli/view-command.js';
import { CHROMIUM_MISSING, launchChromium } from '../../scripts/chromium.js';
import { startStaticServer, type StaticServer } from '../../scripts/static-server.js';
import { tempDir } from '../helpers/tmp.js';
import { viewModelSpec } from './view-model.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');

if (CHROMIUM_MISSING !== undefined) {
  if (process.env.CI) {
    it('chromium is installed (CI runs the browser tests)', () => {
      throw new Error(CHROMIUM_MISSING);
    });
  } else {
    console.warn(`gguf-mmap view --static tests: browser tests skipped: ${CHROMIUM_MISSING}`);
  }
}

describe('view --static: arguments', () => {
  it('takes a folder and at most one URL, and no --port', () => {
    expect(parseViewArgs(['--static', 'out'])).toMatchObject({ staticDir: 'out', target: undefined });
    expect(parseViewArgs(['--static', 'out', 'https://example.com/m.gguf'])).toMatchObject({ staticDir: 'out', target: 'https://example.com/m.gguf' });
    expect(() => parseViewArgs(['--static'])).toThrow(ViewUsageError);
    expect(() => parseViewArgs(['--static', 'out', 'model.gguf'])).toThrow(ViewUsageError);
    expect(() => parseViewArgs(['--static', 'out', '--port', '8000'])).toThrow(ViewUsageError);
  });
});

describe.skipIf(CHROMIUM_MISSING !== undefined)('gguf-mmap view --static in chromium', () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let server: StaticServer;
  let dir: string;
  let model: string;
  let pageUrl: string;

  beforeAll(async () => {
    dir = tempDir('gguf-mmap-view-static-');
    model = join(dir, 'model.gguf');
    writeGgufFile(model, viewModelSpec());
    // Written by the CLI, as a user would.
    const r = spawnSync(process.execPath, [CLI, 'view', '--static', join(dir, 'page')], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    pageUrl = r.stdout.trim();
    expect(pageUrl).toBe(pathToFileURL(join(dir, 'page', 'index.html')).href);
    for (const f of ['index.html', 'view.css', 'view.js', 'static-app.js']) expect(existsSync(join(dir, 'page', f)), f).toBe(true);
    server = await startStaticServer({ '/files/': dir });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A tab on the static page, errors collected. */
  async function open(url: string): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(url);
    return { page, errors };
  }

  /** What the server's API answers for `path` over the file opened in Node. */
  async function serverAnswer(path: string, source: string): Promise<unknown> {
    using file = openGguf(model);
    const url = new URL(path, 'http://x/');
    return JSON.parse(await createViewApi(file, { source }).call(null, url.pathname, url));
  }

  it('a picked file: the page draws it, its API answers are the server code over the same file', async () => {
    const { page, errors } = await open(pageUrl);
    expect(await page.isVisible('#open')).toBe(true);
    await page.setInputFiles('#open-file', model);
    await page.waitForFunction(() => (globalThis as any).document.body.dataset.ready === 'all', undefined, { timeout: 60_000 });
    expect(await page.isVisible('#open')).toBe(false);
    const ask = (path: string) => page.evaluate((p) => (globalThis as any).ggufViewStatic.api(p), path);
    const summary = (await ask('/api/summary')) as { view: Record<string, unknown> };
    const expected = (await serverAnswer('/api/summary', 'model.gguf')) as { view: Record<string, unknown> };
    expect(summary.view.mode).toBe('blob');
    expect({ ...summary, view: { ...summary.view, mode: 'x', remote: 'x' } }).toEqual({ ...expected, view: { ...expected.view, mode: 'x', remote: 'x' } });
    for (const path of ['/api/tensors?limit=50', '/api/layers', '/api/metadata', '/api/tensor?index=0', '/api/tensor/stats?index=0', '/api/tokenize?text=Hello%20world', '/api/chat']) {
      const [got, want] = [await ask(path).catch((e: Error) => e.message), await serverAnswer(path, 'model.gguf').catch((e: Error) => e.message)];
      if (path === '/api/tensor?index=0') expect({ ...(got as object), remote: 0 }, path).toEqual({ ...(want as object), remote: 0 });
      else expect(got, path).toEqual(want);
    }
    expect(await page.textContent('#model-source')).toContain('model.gguf');
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('a URL given as ?url= (another origin: CORS and ranges), the tensors by range only', async () => {
    server.log.length = 0;
    const { page, errors } = await open(`${pageUrl}?url=${encodeURIComponent(`${server.url}/files/model.gguf`)}`);
    await page.waitForFunction(() => (globalThis as any).document.body.dataset.ready === 'all', undefined, { timeout: 60_000 });
    const stats = await page.evaluate(() => (globalThis as any).ggufViewStatic.api('/api/tensor/stats?index=0'));
    expect(stats).toEqual(await serverAnswer('/api/tensor/stats?index=0', 'x'));
    expect(await page.textContent('#model-source')).toContain('(remote)');
    const gets = server.log.filter((l) => l.startsWith('GET '));
    expect(gets.length).toBeGreaterThan(0);
    expect(gets.every((l) => / bytes=\d+-\d+$/.test(l))).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('the page written is the server page with the chooser and the in-page API first', () => {
    const html = readFileSync(join(dir, 'page', 'index.html'), 'utf8');
    expect(html.indexOf('static-app.js')).toBeLessThan(html.indexOf('src="view.js"'));
    expect(html).not.toContain('/assets/');
  });
});
