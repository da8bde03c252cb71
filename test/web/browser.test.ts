// The browser build in Debian's chromium (issue 37): a page bundled from the package as a user's
// app would be (test/web/app, esbuild under the browser condition), served from 127.0.0.1 with
// range requests. Its answers are checked against independent truth where there is one
// (llama.cpp's token ids, jinja2's renders) and against the Node build's on the same bytes (the
// header, the dequantized floats bit for bit, the estimate). Without chromium these tests are
// skipped with a message, except under CI (env CI set), where they fail.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateMemory, fitGpuLayers, largestContext, openGguf, writeGgufFile, type GgufWriteSpec, type GgufWriteTensor } from '../../lib/index.js';
import { ggmlTypeByName } from '../../lib/format/ggml-types.js';
import { CHROMIUM_MISSING, launchChromium } from '../../scripts/chromium.js';
import { tinyllamaShapedSpec } from '../../scripts/tinyllama-shape.js';
import { SKIP_SHARED, readJson, sharedPath } from '../helpers/shared.js';
import { randomBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';
import { bundle } from '../../scripts/bundle-package.js';
import { startStaticServer, type StaticServer } from '../../scripts/static-server.js';

if (CHROMIUM_MISSING !== undefined) {
  if (process.env.CI) {
    it('chromium is installed (CI runs the browser tests)', () => {
      throw new Error(CHROMIUM_MISSING);
    });
  } else {
    console.warn(`gguf-mmap browser-build tests: skipped: ${CHROMIUM_MISSING}`);
  }
}

/**
 * Random bytes a tensor of `type` can hold with no NaN or infinity among its fp16/bf16/f32 fields
 * (a 16-bit word with an all-ones exponent loses its bit 14), so that floats compare by their bits
 * whatever a kernel does with NaN payloads.
 */
function finiteBytes(n: number, seed: number): Uint8Array {
  const bytes = randomBytes(n, seed);
  for (let i = 0; i + 1 < n; i += 2) {
    const w = bytes[i]! | (bytes[i + 1]! << 8);
    if ((w & 0x7c00) === 0x7c00 || (w & 0x7f80) === 0x7f80) bytes[i + 1]! &= ~0x40;
  }
  return bytes;
}

function tensorOf(name: string, type: string, shape: readonly number[], seed: number): GgufWriteTensor {
  const t = ggmlTypeByName(type)!;
  const n = shape.reduce((a, b) => a * b, 1);
  return { name, type, shape: [...shape], data: finiteBytes((n / t.blockSize) * t.typeSize, seed) };
}

/** The TinyLlama-shaped file with real (random) bytes in a few tensors: the remote file. */
function remoteSpec(): GgufWriteSpec {
  const spec = tinyllamaShapedSpec();
  const filled: Record<string, GgufWriteTensor> = {};
  for (const [i, name] of ['blk.0.attn_k.weight', 'blk.0.attn_v.weight'].entries()) {
    const t = spec.tensors!.find((x) => x.name === name)!;
    filled[name] = tensorOf(name, String(t.type), t.shape, 10 + i);
  }
  return { ...spec, tensors: spec.tensors!.map((t) => filled[t.name] ?? t) };
}

/** A small file of many types, the file a person picks or drops. */
function pickedSpec(): GgufWriteSpec {
  const types = ['F32', 'F16', 'BF16', 'Q4_0', 'Q8_0', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_NL', 'IQ2_XXS', 'IQ3_S', 'TQ1_0'];
  return {
    metadata: [['general.architecture', { type: 'STRING', value: 'llama' }]],
    tensors: types.map((type, i) => tensorOf(`t.${type.toLowerCase()}`, type, [256, 6], 100 + i)),
  };
}

/** The README's "In a web page" example: its index.html and main.js. */
function readmeExample(): { html: string; js: string } {
  const text = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('## In a web page'), text.indexOf('## Documentation'));
  return { html: /```html\n([\s\S]*?)```/.exec(section)![1]!, js: /```js\n([\s\S]*?)```/.exec(section)![1]! };
}

const sha256 = (view: ArrayBufferView) => createHash('sha256').update(new Uint8Array(view.buffer, view.byteOffset, view.byteLength)).digest('hex');
const ESTIMATE = { contextSize: 2048, cpuFeatures: [] as string[] };
const plain = (value: unknown) => JSON.parse(JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)));

describe.skipIf(CHROMIUM_MISSING !== undefined)('the browser build in chromium', () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let server: StaticServer;
  let page: Page;
  let dir: string;
  const errors: string[] = [];

  beforeAll(async () => {
    dir = tempDir('gguf-mmap-web-');
    writeGgufFile(join(dir, 'tinyllama-shaped.gguf'), remoteSpec());
    writeGgufFile(join(dir, 'picked.gguf'), pickedSpec());
    const app = await bundle(readFileSync(join(import.meta.dirname, 'app', 'main.js'), 'utf8'));
    const readme = readmeExample();
    server = await startStaticServer({
      '/': join(import.meta.dirname, 'app', 'index.html'),
      '/app.js': { body: app.code, type: 'text/javascript' },
      '/favicon.ico': { body: '', type: 'image/x-icon' },
      '/readme/': { body: readme.html, type: 'text/html' },
      '/readme/app.js': { body: (await bundle(readme.js)).code, type: 'text/javascript' },
      '/files/': dir,
      ...(SKIP_SHARED ? {} : { '/vocab/': sharedPath('tokenizer', 'vocab') }),
    });
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => (globalThis as unknown as { ready?: boolean }).ready === true);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('a remote TinyLlama-shaped file (through a redirect, by ranges): the header, tensors bit for bit, the estimate and the template as in Node', async () => {
    const names = ['blk.0.attn_k.weight', 'blk.0.attn_v.weight', 'output_norm.weight'];
    server.log.length = 0;
    const got = await page.evaluate(([url, names]) => (globalThis as any).checks.remote(url, names), [`${server.url}/redirect/files/tinyllama-shaped.gguf`, names] as const);
    using local = openGguf(join(dir, 'tinyllama-shaped.gguf'));
    expect(got.mode).toBe('remote');
    expect(got.fileSize).toBe(local.fileSize);
    expect(got.tensorCount).toBe(201);
    expect(got.summary).toEqual(plain(local.summary()));
    expect(got.hyperparameters).toEqual(plain(local.hyperparameters()));
    for (const t of got.tensors) {
      const tensor = local.tensor(t.name)!;
      expect(t.type, t.name).toBe(tensor.type);
      expect(t.bytes, t.name).toBe(sha256(tensor.bytes));
      // Node's floats (the addon's kernels where it loads) and the page's (WebAssembly), bit for bit.
      expect(t.floats, t.name).toBe(sha256(tensor.dequantize()));
      expect(t.rows, t.name).toBe(tensor.rows >= 3 ? sha256(tensor.gatherRows([0, 2, 1])) : null);
    }
    expect(got.estimate).toEqual(plain(estimateMemory(local, ESTIMATE)));
    expect(got.largest).toBe(largestContext(local, 2 ** 31, { cpuFeatures: [] }));
    expect(got.gpuEstimate).toEqual(plain(estimateMemory(local, { ...ESTIMATE, gpu: 'cuda', gpuLayers: 11 })));
    expect(got.gpuLayers).toBe(fitGpuLayers(local, 2 ** 29, { ...ESTIMATE, gpu: 'cuda' }));
    expect(got.chat).toBe(local.applyChatTemplate([{ role: 'user', content: 'Hello there' }], { addGenerationPrompt: true }));
    expect(got.chatIds).toEqual(Array.from(local.applyChatTemplate([{ role: 'user', content: 'Hello there' }], { addGenerationPrompt: true, tokenize: true })));
    // Ranges only: the 669 MB file was never fetched whole.
    const gets = server.log.filter((l) => l.startsWith('GET /files/tinyllama-shaped.gguf'));
    expect(gets.length).toBeGreaterThan(0);
    expect(gets.every((l) => /bytes=\d+-\d+$/.test(l))).toBe(true);
    expect(errors.join('\n')).toBe('');
  }, 120_000);

  it('a picked file (a File): every tensor read by slices and dequantized bit for bit as in Node, IQ and ternary types included', async () => {
    await page.setInputFiles('#file', join(dir, 'picked.gguf'));
    const got = await page.evaluate(() => (globalThis as any).checks.picked());
    using local = openGguf(join(dir, 'picked.gguf'));
    expect(got.mode).toBe('blob');
    expect(got.tensors.map((t: { name: string }) => t.name)).toEqual(local.tensors.map((t) => t.name));
    for (const t of got.tensors) {
      const tensor = local.tensor(t.name)!;
      expect(t.bytes, t.name).toBe(sha256(tensor.bytes));
      expect(t.floats, t.name).toBe(sha256(tensor.dequantize()));
      expect(t.rows, t.name).toBe(tensor.rows >= 3 ? sha256(tensor.gatherRows([0, 2, 1])) : null);
    }
    // The page's own handler showed the file's summary.
    await page.waitForFunction(() => (globalThis as any).document.getElementById('out').textContent.includes('"architecture"'));
    // parseGguf over the bytes in memory: the synchronous dequantize() in the page.
    expect(await page.evaluate(([url]) => (globalThis as any).checks.memory(url, 't.q4_k'), [`${server.url}/files/picked.gguf`])).toBe(sha256(local.tensor('t.q4_k')!.dequantize()));
    expect(errors.join('\n')).toBe('');
  }, 120_000);

  // Every vocabulary of llama.cpp's test set: SPM, BPE (each pre-tokenizer), WPM, UGM.
  const VOCABS = SKIP_SHARED ? [] : readdirSync(sharedPath('tokenizer', 'expected')).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5));
  it.skipIf(SKIP_SHARED)('has the vocabularies', () => expect(VOCABS.length).toBeGreaterThanOrEqual(19));
  it.skipIf(SKIP_SHARED).each(VOCABS)("%s: the page's token ids are llama.cpp's (../shared/tokenizer)", async (name) => {
    const expected = readJson<Array<{ text: string; special: number[]; plain: number[]; detok: string }>>(sharedPath('tokenizer', 'expected', `${name}.json`));
    const got = await page.evaluate(([url, texts]) => (globalThis as any).checks.tokenize(url, texts), [`${server.url}/vocab/${name}.gguf`, expected.map((e) => e.text)] as const);
    const failures = expected.flatMap((e, i) => (['special', 'plain', 'detok'] as const).filter((k) => JSON.stringify(got[i][k]) !== JSON.stringify(e[k])).map((k) => `${k} ${JSON.stringify(e.text)}`));
    expect(failures.slice(0, 5), `${name}: ${failures.length} of ${expected.length * 3} differ`).toEqual([]);
    expect(errors.join('\n')).toBe('');
  }, 120_000);

  it.skipIf(SKIP_SHARED)('chat templates render as jinja2 renders them (../shared/chat-templates)', async () => {
    const cases = readJson<unknown[]>(sharedPath('chat-templates', 'cases.json'));
    const expected = readJson<Array<{ ok: boolean; text?: string; error?: string }>>(sharedPath('chat-templates', 'expected.json'));
    // The reference renders strftime_now on 2024-07-26 (local time).
    const got = await page.evaluate(([cases, day]) => (globalThis as any).checks.render(cases, day), [cases, new Date(2024, 6, 26).getTime()] as const);
    expect(got.length).toBe(expected.length);
    for (const [i, e] of expected.entries()) {
      if (e.ok) expect(got[i], `case ${i}`).toEqual({ ok: true, text: e.text });
      else {
        expect(got[i].code, `case ${i}`).toBe('CHAT_TEMPLATE_ERROR');
        expect(got[i].error, `case ${i}`).toContain(e.error);
      }
    }
    expect(errors.join('\n')).toBe('');
  }, 120_000);

  it("the README's example page runs: a picked file's summary, tokens, prompt and estimate", async () => {
    const readmePage = await browser.context.newPage();
    const pageErrors: string[] = [];
    readmePage.on('pageerror', (e) => pageErrors.push(e.message));
    await readmePage.goto(`${server.url}/readme/`);
    await readmePage.setInputFiles('#file', join(dir, 'tinyllama-shaped.gguf'));
    await readmePage.waitForFunction(() => ((globalThis as any).document.getElementById('out').textContent as string).length > 0);
    const text = await readmePage.evaluate(() => (globalThis as any).document.getElementById('out').textContent as string);
    using local = openGguf(join(dir, 'tinyllama-shaped.gguf'));
    const ids = Array.from(local.tokenizer().encode('Hello from a web page')).join(' ');
    expect(text).toContain(`llama, ${local.summary().parameters} parameters`);
    expect(text).toContain(`tokens: ${ids}`);
    expect(text).toContain('prompt: <|user|>\nHi!</s>');
    expect(text).toMatch(/needs \d+\.\d\d GiB at 4,096 tokens of context/);
    expect(pageErrors).toEqual([]);
    await readmePage.close();
  }, 120_000);
});
