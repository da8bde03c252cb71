// The viewer's page in a real browser (Debian's chromium through playwright-core), one browser
// for the file. Without chromium these tests are skipped with a message, except under CI (env CI
// set), where they fail: CI must run them.
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatBytes } from '../../lib/cli/inspect.js';
import { encodeGguf, openGguf, openGgufRemote, writeGgufFile, type GgufFile } from '../../lib/index.js';
import { startViewServer, type ViewServer } from '../../lib/view/server.js';
import { CHROMIUM_MISSING, launchChromium } from '../../scripts/chromium.js';
import { useHubImitation } from '../helpers/hub.js';
import { tempDir } from '../helpers/tmp.js';
import { expectedStats, MARKUP_NAME, MARKUP_TENSOR, MILLION, millionName, millionTensorFile, viewModelSpec } from './view-model.js';
import { SAMPLE_CONVERSATION } from '../../lib/view/text-features.js';

const imitation = useHubImitation();

if (CHROMIUM_MISSING !== undefined) {
  if (process.env.CI) {
    it('chromium is installed (CI runs the browser tests)', () => {
      throw new Error(CHROMIUM_MISSING);
    });
  } else {
    console.warn(`gguf-mmap view tests: browser tests skipped: ${CHROMIUM_MISSING}`);
  }
}

/** The page's number format (view.js num()). */
const num = (x: number) => (Number.isInteger(x) ? x.toLocaleString('en-US') : Number(x.toPrecision(6)).toString());

describe.skipIf(CHROMIUM_MISSING !== undefined)('gguf-mmap view in chromium', () => {
  let browser: { context: BrowserContext; close(): Promise<void> };
  let g: GgufFile;
  let server: ViewServer;
  const errors: string[] = [];

  beforeAll(async () => {
    const path = join(tempDir('gguf-mmap-view-page-'), 'model.gguf');
    writeGgufFile(path, viewModelSpec());
    g = openGguf(path);
    server = await startViewServer(g, { source: path });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    g?.close();
  });

  // The tests of the main model share one tab (each page load costs about a second on a loaded machine).
  let mainTab: Page | undefined;
  const mainPage = async () => (mainTab ??= await open(server.url));

  /** A new tab at `url`, console errors and page errors collected, once the summary is drawn. */
  async function open(url: string): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${url}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`${url}: ${e.message}`));
    await page.goto(url);
    await page.waitForSelector('body[data-ready=all]');
    return page;
  }

  it('loads without a console error; the summary says what the library says; file strings stay text', async () => {
    const page = await mainPage();
    const s = g.summary();
    const fact = (label: string) => page.locator('#facts div', { has: page.locator(`dt:text-is("${label}")`) }).locator('dd').textContent();
    expect(await page.locator('#model-name').textContent()).toBe(MARKUP_NAME);
    expect(await fact('name')).toBe(MARKUP_NAME);
    expect(await fact('architecture')).toBe('llama');
    expect(await fact('parameters')).toBe(`${s.parameters.toLocaleString('en-US')} (${s.parameters.toLocaleString('en-US')})`);
    expect(await fact('file size')).toBe(formatBytes(s.fileBytes));
    expect(await fact('bits per weight')).toBe(s.bitsPerWeight.toFixed(2));
    expect(await fact('context length')).toBe('2,048');
    expect(await fact('tensors')).toBe(String(g.tensorCount));
    // The hyperparameter cards: file.hyperparameters() first (no heads: 0; rope base from the file), then the raw keys.
    const cards = await page.locator('#hyper div').evaluateAll((list) => list.map((e) => `${e.querySelector('dt')!.textContent}=${e.querySelector('dd')!.textContent}`));
    expect(cards.slice(0, 6)).toEqual(['family=transformer', 'blocks=2', 'embedding length=64', 'heads (KV heads)=0 (0)', 'key / value head size=0 / 0', 'rope=0 dims, base 10,000, linear ×1']);
    expect(cards).toContain('context_length=2,048');
    expect(await page.locator('#quant-bar span').evaluateAll((spans) => spans.map((e) => e.getAttribute('data-type')))).toEqual(s.byType.map((t) => t.type));
    // The token is moved from the address bar to the cookie.
    expect(new URL(page.url()).search).toBe('');
    // Markup from the file (the model's name, a tensor's name, a token) never became elements.
    expect(await page.locator('#model-name b, #model-name script, img, main script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#tokenizer-absent').isVisible()).toBe(typeof (g as { tokenizer?: unknown }).tokenizer !== 'function');
    expect(errors).toEqual([]);
  });

  it('the layer map: a cell per block and kind; hovering names the tensor, clicking opens it', async () => {
    const page = await mainPage();
    const cells = page.locator('.layer-cell');
    expect(await cells.count()).toBe(2 * 4);
    const names = await cells.evaluateAll((list) => list.map((e) => e.getAttribute('data-name')));
    expect(names.sort()).toEqual(g.tensors.filter((t) => t.name.startsWith('blk.')).map((t) => t.name).sort());
    const cell = page.locator('.layer-cell[data-name="blk.1.ffn_down.weight"]');
    await cell.hover();
    expect(await page.locator('#tooltip').textContent()).toContain('blk.1.ffn_down.weight');
    await cell.click();
    await page.waitForSelector('#histogram rect');
    expect(await page.locator('#tensor-name').textContent()).toBe('blk.1.ffn_down.weight');
    expect(errors).toEqual([]);
  });

  it('filtering and sorting the table', async () => {
    const page = await mainPage();
    const rowNames = () => page.locator('#tensor-spacer .trow .tname').allTextContents();
    expect(await rowNames()).toEqual(g.tensors.map((t) => t.name));
    expect(await page.locator(`.trow[data-name="${MARKUP_TENSOR.replace(/"/g, '\\"')}"] .tname`).textContent()).toBe(MARKUP_TENSOR);
    await page.fill('#tensor-filter', 'ATTN_Q');
    await expect.poll(rowNames).toEqual(['blk.0.attn_q.weight', 'blk.1.attn_q.weight']);
    await page.fill('#tensor-filter', 'blk.');
    await page.click('#tensor-head button[data-sort="size"]');
    await page.click('#tensor-head button[data-sort="size"]');
    const bySize = g.tensors.filter((t) => t.name.includes('blk.')).map((t, i) => ({ t, i })).sort((a, b) => b.t.nbytes - a.t.nbytes || b.i - a.i).map(({ t }) => t.name);
    await expect.poll(rowNames).toEqual(bySize);
    expect(await page.locator('#tensor-count').textContent()).toBe(`${bySize.length} of ${g.tensorCount} match`);
    expect(errors).toEqual([]);
  });

  it('opening a tensor draws its histogram and shows the statistics of its dequantized values', async () => {
    const page = await mainPage();
    await page.click('.trow[data-name="blk.0.ffn_down.weight"]');
    await page.waitForSelector('#histogram rect');
    const want = expectedStats(g.tensor('blk.0.ffn_down.weight')!.dequantize());
    const stat = (key: string) => page.locator(`#tensor-stats [data-stat="${key}"] dd`).textContent();
    expect(await stat('min')).toBe(num(want.min));
    expect(await stat('max')).toBe(num(want.max));
    expect(await stat('mean')).toBe(num(want.mean));
    expect(await stat('std')).toBe(num(want.std));
    expect(await stat('nan')).toBe('1');
    expect(await stat('inf')).toBe('3 (+2, −1)');
    expect(await page.locator('#tensor-status').textContent()).toBe(`All ${(64 * 16).toLocaleString('en-US')} values.`);
    const bars = await page.locator('#histogram rect').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-count'))));
    expect(bars).toEqual(want.counts);
    // The tallest bar is the fullest bin.
    const heights = await page.locator('#histogram rect').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height'))));
    expect(heights.indexOf(Math.max(...heights))).toBe(bars.indexOf(Math.max(...bars)));
    expect(await page.locator('#tensor-facts').textContent()).toContain('[64, 16]');
    expect(errors).toEqual([]);
  });

  it('metadata: long arrays paged and searchable; the chat template as text', async () => {
    const page = await mainPage();
    await page.locator('tr[data-key="tokenizer.ggml.tokens"] button').click();
    await page.waitForSelector('#array-items li');
    expect(await page.locator('#array-items li').count()).toBe(100);
    await page.fill('#array-filter', 'pwned');
    await expect.poll(() => page.locator('#array-items li').allTextContents()).toEqual([JSON.stringify('<script>window.__pwned=1</script>')]);
    expect(await page.locator('#chat-template').textContent()).toBe(g.metadata.getString('tokenizer.chat_template'));
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('the tokenizer box and the rendered chat template, where the library has them', async () => {
    using file = openGguf(g.parts[0]!.path!);
    const capable = file as unknown as Record<string, unknown>;
    // Stand-ins where this build has neither (the lead's merge brings them); pieces with markup in them.
    if (typeof capable.tokenizer !== 'function') {
      capable.tokenizer = () => ({ encode: (text: string) => Int32Array.from(text.split(' ').map((w) => w.length)), tokenToPiece: (id: number) => `<i>${id}</i>` });
    }
    if (typeof capable.applyChatTemplate !== 'function') {
      capable.applyChatTemplate = (messages: { role: string; content: string }[]) => messages.map((m) => `<${m.role}>${m.content}`).join('');
    }
    const tokenizer = (capable.tokenizer as () => { encode(t: string, o: object): ArrayLike<number>; tokenToPiece(id: number, o: object): string })();
    const s = await startViewServer(file);
    try {
      const page = await open(s.url);
      const text = 'one three seventeen';
      await page.fill('#tokenizer-input', text);
      const ids = Array.from(tokenizer.encode(text, { addSpecial: true, parseSpecial: false }));
      await expect.poll(() => page.locator('#token-count').textContent()).toBe(`${ids.length} tokens`);
      expect(await page.locator('#tokens > span').evaluateAll((spans) => spans.map((e) => e.firstChild!.textContent))).toEqual(ids.map((id) => tokenizer.tokenToPiece(id, { special: true })));
      expect(await page.locator('#tokens i').count()).toBe(0);
      await expect.poll(() => page.locator('#chat-rendered').textContent()).not.toBe('');
      const rendered = await page.locator('#chat-rendered').textContent();
      // What the library renders for the page's sample conversation, shown as text.
      const applied = (capable.applyChatTemplate as (m: typeof SAMPLE_CONVERSATION, o: object) => string).call(file, SAMPLE_CONVERSATION, { addGenerationPrompt: true });
      expect(rendered).toBe(applied);
      expect(await page.locator('#chat-rendered *').count()).toBe(0);
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      await s.close();
    }
  });

  it('a million tensors: the first rows, scrolling to the middle and a filter', async () => {
    using big = openGguf(millionTensorFile());
    const s = await startViewServer(big);
    try {
      const page = await browser.context.newPage();
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(s.url);
      await page.waitForSelector('.trow');
      expect(await page.locator('.trow .tname').first().textContent()).toBe(millionName(0));
      await page.locator('#tensor-scroll').evaluate((e) => (e.scrollTop = 500_000 * 24));
      await expect.poll(() => page.locator('.trow .tname').allTextContents()).toContain(millionName(500_005));
      await page.fill('#tensor-filter', '.t999.');
      await expect.poll(() => page.locator('#tensor-count').textContent()).toBe(`1,000 of ${MILLION.toLocaleString('en-US')} match`);
      expect(await page.locator('.trow .tname').first().textContent()).toBe(millionName(999));
      await page.close();
    } finally {
      await s.close();
    }
    expect(errors).toEqual([]);
  });

  it('a remote model (the Hub imitation): the byte count first, then the statistics', async () => {
    const bytes = encodeGguf(viewModelSpec());
    imitation.hub.files.set('org/view-page/model.gguf', { bytes });
    const remote = await openGgufRemote('hf:org/view-page/model.gguf', { backoffMs: 1 });
    // A slow server, so the page's "fetching" line can be seen before the statistics arrive.
    const s = await startViewServer(remote, { source: 'hf:org/view-page/model.gguf' });
    try {
      const page = await open(s.url);
      expect(await page.locator('#model-source').textContent()).toBe('hf:org/view-page/model.gguf (remote)');
      const t = remote.tensor('output.weight')!;
      imitation.hub.latencyMs = 300;
      await page.click('.layer-other[data-name="output.weight"]');
      await expect.poll(() => page.locator('#tensor-status').textContent()).toBe(`Fetching ${formatBytes(t.nbytes)} over HTTP (${t.nbytes.toLocaleString('en-US')} bytes)…`);
      await page.waitForSelector('#histogram rect');
      const want = expectedStats(g.tensor('output.weight')!.dequantize());
      expect(await page.locator('#tensor-stats [data-stat="mean"] dd').textContent()).toBe(num(want.mean));
      await page.close();
    } finally {
      await s.close();
      remote.close();
    }
    expect(errors).toEqual([]);
  });
});
