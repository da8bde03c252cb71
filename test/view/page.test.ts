// The viewer's page in a real browser (Debian's chromium through playwright-core), one browser
// for the file. Without chromium these tests are skipped with a message, except under CI (env CI
// set), where they fail: CI must run them.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatBytes } from '../../lib/cli/inspect.js';
import { writeLaunchPage } from '../../lib/cli/view-command.js';
import { encodeGguf, openGguf, openGgufRemote, writeGgufFile, type GgufFile, type GgufWriteSpec, type GgufWriteValue } from '../../lib/index.js';
import { startViewServer, type ViewServer } from '../../lib/view/server.js';
import { CHROMIUM_MISSING, launchChromium } from '../../scripts/chromium.js';
import { useHubImitation } from '../helpers/hub.js';
import { tempDir } from '../helpers/tmp.js';
import { expectedStats, MARKUP_NAME, MARKUP_TENSOR, MILLION, millionName, millionTensorFile, dotNamesSpec, noVocabularySpec, textModelSpec, viewModelSpec } from './view-model.js';
import { ARRAY_SCAN_BUDGET } from '../../lib/view/metadata-api.js';
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
    expect(await page.locator('#tokenizer-absent').isVisible()).toBe(false);
    expect(errors).toEqual([]);
  });

  it('--open\'s page (a file) sends the browser on to the viewer, which loads', async () => {
    const launch = writeLaunchPage(server.url);
    const page = await browser.context.newPage();
    try {
      await page.goto(pathToFileURL(launch.path).href);
      await page.waitForSelector('body[data-ready=all]');
      expect(new URL(page.url()).origin).toBe(new URL(server.url).origin);
      expect(await page.locator('#model-name').textContent()).toBe(MARKUP_NAME);
    } finally {
      await page.close();
      launch.remove();
    }
    expect(errors).toEqual([]);
  });

  it('the layer map: a cell per block and kind; hovering names the tensor, clicking opens it', async () => {
    const page = await mainPage();
    const cells = page.locator('.layer-cell');
    expect(await cells.count()).toBe(2 * 4);
    const names = await cells.evaluateAll((list) => list.map((e) => e.getAttribute('data-name')));
    expect(names.sort()).toEqual(g.tensors.filter((t) => t.name.startsWith('blk.')).map((t) => t.name).sort());
    // Blocks down, kinds across: block 1's cell of a kind right below block 0's.
    const box = (name: string) => page.locator(`.layer-cell[data-name="${name}"]`).boundingBox();
    const [q0, q1, k0] = [await box('blk.0.attn_q.weight'), await box('blk.1.attn_q.weight'), await box('blk.0.attn_k.weight')];
    expect(q1!.x).toBe(q0!.x);
    expect(q1!.y).toBeGreaterThan(q0!.y);
    expect(k0!.y).toBe(q0!.y);
    expect(k0!.x).toBeGreaterThan(q0!.x);
    const cell = page.locator('.layer-cell[data-name="blk.1.ffn_down.weight"]');
    await cell.hover();
    expect(await page.locator('#tooltip').textContent()).toContain('blk.1.ffn_down.weight');
    await cell.click();
    await page.waitForSelector('#histogram rect');
    expect(await page.locator('#tensor-name').textContent()).toBe('blk.1.ffn_down.weight');
    expect(errors).toEqual([]);
  });

  it('the layer map of unusual names (a kind per block): an element per tensor, none per empty slot; each in its block\'s row and its kind\'s column', async () => {
    const n = 400;
    const f32 = new Uint8Array(new Float32Array([1]).buffer);
    await using m = await serveSpec({ metadata: [], tensors: Array.from({ length: n }, (_, i) => ({ name: `blk.${i}.kind${i}.weight`, type: 'F32', shape: [1], data: f32 })) }, 'unusual.gguf');
    const { page } = m;
    // A corner-less grid: n kind headings, n block headings, n cells (one element per slot would be n * n).
    expect(await page.locator('#layer-map > *').count()).toBe(3 * n);
    expect(await page.locator('.layer-cell').count()).toBe(n);
    const placed = await page.locator('.layer-cell[data-name="blk.7.kind7.weight"]').evaluate((e) => {
      const style = (globalThis as unknown as { getComputedStyle(e: unknown): { gridRowStart: string; gridColumnStart: string } }).getComputedStyle(e);
      return [style.gridRowStart, style.gridColumnStart];
    });
    expect(placed).toEqual(['9', '9']);
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
    await expect.poll(() => page.locator('#chat-template').textContent()).toBe(g.metadata.getString('tokenizer.chat_template'));
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(errors).toEqual([]);
  });

  /** `spec` written and served; its page open. */
  async function serveSpec(spec: GgufWriteSpec, name: string) {
    const p = join(tempDir('gguf-mmap-view-page-'), name);
    writeGgufFile(p, spec);
    const file = openGguf(p);
    const s = await startViewServer(file);
    const page = await open(s.url);
    return { file, page, [Symbol.asyncDispose]: async () => (await page.close(), await s.close(), file.close()) };
  }

  it('the tokenizer box: the library\'s tokens, an emoji\'s byte tokens as <0xF0>... (as the CLI shows them); the rendered chat template', async () => {
    await using m = await serveSpec(textModelSpec(), 'text.gguf');
    const { page, file } = m;
    const text = 'hi 😀 <b>bold</b>';
    await page.fill('#tokenizer-input', text);
    const ids = Array.from(file.tokenizer().encode(text, { addSpecial: true, parseSpecial: false }));
    await expect.poll(() => page.locator('#token-count').textContent()).toBe(`${ids.length} tokens`);
    const pieces = await page.locator('#tokens > span').evaluateAll((spans) => spans.map((e) => e.firstChild!.textContent));
    expect(pieces.filter((p) => p!.startsWith('<0x'))).toEqual(['<0xF0>', '<0x9F>', '<0x98>', '<0x80>']);
    expect(await page.locator('#tokens > span.bytes').count()).toBe(4);
    expect(pieces.join('')).not.toContain('\uFFFD');
    expect(pieces.join('')).toContain('<b>bold</b>');
    expect(await page.locator('#tokens b').count()).toBe(0);
    await expect.poll(() => page.locator('#chat-rendered').textContent()).not.toBe('');
    // What the library renders for the page's sample conversation, shown as text.
    expect(await page.locator('#chat-rendered').textContent()).toBe(file.applyChatTemplate(SAMPLE_CONVERSATION, { addGenerationPrompt: true }));
    expect(await page.locator('#chat-rendered *').count()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('a file without a vocabulary (mmproj, LoRA): no error, the tokenizer box hidden, a line saying there is none', async () => {
    await using m = await serveSpec(noVocabularySpec(), 'no-vocab.gguf');
    const { page } = m;
    expect(await page.locator('#error').isVisible()).toBe(false);
    expect(await page.locator('#tokenizer-box').isVisible()).toBe(false);
    expect(await page.locator('#tokenizer-absent').textContent()).toContain('no vocabulary');
    expect(await page.locator('#chat-absent').isVisible()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('tensors and arrays named . and .. open (the page names them by index, not in a URL path)', async () => {
    await using m = await serveSpec(dotNamesSpec(), 'dots.gguf');
    const { page, file } = m;
    for (const name of ['..', '.']) {
      await page.click(`.trow[data-name="${name}"]`);
      await expect.poll(() => page.locator('#tensor-stats [data-stat="max"] dd').textContent()).toBe(String(Math.max(...file.tensor(name)!.dequantize())));
      expect(await page.locator('#tensor-name').textContent()).toBe(name);
    }
    await page.locator('tr[data-key=".."] button').click();
    await expect.poll(() => page.locator('#array-items li').count()).toBe(20);
    expect(await page.locator('#array-items li').first().textContent()).toBe('"dotdot0"');
    expect(errors).toEqual([]);
  });

  it('a header of many large values: the metadata in pages (more keys on request); a search of a long array in slices', async () => {
    const n = ARRAY_SCAN_BUDGET * 2 + 10;
    const spec: GgufWriteSpec = {
      metadata: [
        ...Array.from({ length: 12 }, (_, i) => [`big.${i}`, { type: 'STRING', value: 'x'.repeat(300_000) }] as [string, GgufWriteValue]),
        ['long', { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: n }, (_, i) => (i === 5 || i >= n - 3 ? `needle${i}` : 'hay')) }],
      ],
      tensors: [],
    };
    await using m = await serveSpec(spec, 'big-header.gguf');
    const { page } = m;
    const rows = () => page.locator('#metadata-table tr[data-key]').count();
    const first = await rows();
    expect(first).toBeLessThan(13);
    expect(await page.locator('#metadata-count').textContent()).toBe(`${first} of 13 keys`);
    while (await page.locator('#metadata-more').isVisible()) {
      const before = await rows();
      await page.click('#metadata-more');
      await expect.poll(rows).toBeGreaterThan(before);
    }
    expect(await rows()).toBe(13);
    expect(await page.locator('#metadata-count').textContent()).toBe('13 keys');
    await page.locator('tr[data-key="long"] button').click();
    await page.fill('#array-filter', 'needle');
    // The matches from the first slice and the last, asked for one after another.
    await expect.poll(() => page.locator('#array-items li').allTextContents()).toEqual([5, n - 3, n - 2, n - 1].map((i) => JSON.stringify(`needle${i}`)));
    expect(await page.locator('#array-items li').evaluateAll((list) => list.map((li) => (li as unknown as { value: number }).value))).toEqual([5, n - 3, n - 2, n - 1]);
    expect(errors).toEqual([]);
  }, 60_000);

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
