// The browser build in Chromium beside Node, in one run (issue 37): opening a remote 8 MB header
// (ggml-vocab-llama-bpe, 7.8 MB, over HTTP from 127.0.0.1 by ranges), the tokenizer's ready time
// and a 1 MB encode, and dequantizing a Q4_K tensor of 50M values (the page: WebAssembly; Node:
// the addon's kernel, and WebAssembly as well). Medians of a few rounds. Needs chromium, ../shared
// and `npm run build:ts`. Run: node dist/bench/browser.js
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dequantize, dequantizeAsync, openGgufRemote, writeGgufFile } from '../lib/index.js';
import { median } from './stats.js';
import { bundle } from '../scripts/bundle-package.js';
import { CHROMIUM_MISSING, launchChromium } from '../scripts/chromium.js';
import { startStaticServer } from '../scripts/static-server.js';
import { packageRoot } from '../lib/package-root.js';

const SHARED = process.env.GGUF_MMAP_SHARED ?? join(packageRoot(), '..', 'shared');
const VOCAB = 'ggml-vocab-llama-bpe';
const ROUNDS = 5;
const Q4K_VALUES = 50 * (1 << 20); // 52,428,800: 204,800 blocks, 28.1 MB

const PAGE = `
import { dequantize, dequantizeAsync, openGgufRemote } from 'gguf-mmap';
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
window.bench = {
  async open(url, rounds) {
    const t = [];
    for (let i = 0; i < rounds; i++) { const s = performance.now(); await openGgufRemote(url); t.push(performance.now() - s); }
    return median(t);
  },
  async tokenizer(url, text, rounds) {
    const ready = [], encode = [];
    let n = 0;
    for (let i = 0; i < rounds; i++) {
      const file = await openGgufRemote(url);
      let s = performance.now();
      const tok = file.tokenizer();
      tok.encode('Hello');
      ready.push(performance.now() - s);
      s = performance.now();
      n = tok.encode(text).length;
      encode.push(performance.now() - s);
    }
    return { ready: median(ready), encode: median(encode), n };
  },
  async dequant(url, rounds) {
    const file = await openGgufRemote(url);
    const t = file.tensor('q4k');
    const bytes = await t.fetchBytes();
    const out = new Float32Array(t.nelements);
    const sync = [], async = [];
    for (let i = 0; i < rounds; i++) {
      let s = performance.now(); dequantize(t.type, bytes, out); sync.push(performance.now() - s);
      s = performance.now(); await dequantizeAsync(t.type, bytes, out); async.push(performance.now() - s);
    }
    return { sync: median(sync), async: median(async) };
  },
};
window.ready = true;
`;

async function nodeFigures(base: string, text: string) {
  const open: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const s = performance.now();
    await openGgufRemote(`${base}/vocab/${VOCAB}.gguf`);
    open.push(performance.now() - s);
  }
  const ready: number[] = [];
  const encode: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const file = await openGgufRemote(`${base}/vocab/${VOCAB}.gguf`);
    let s = performance.now();
    const tok = file.tokenizer();
    tok.encode('Hello');
    ready.push(performance.now() - s);
    s = performance.now();
    tok.encode(text);
    encode.push(performance.now() - s);
  }
  const file = await openGgufRemote(`${base}/files/q4k.gguf`);
  const t = file.tensor('q4k')!;
  const bytes = await t.fetchBytes();
  const out = new Float32Array(t.nelements);
  const native: number[] = [];
  const wasm: number[] = [];
  const nativeAsync: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    let s = performance.now();
    dequantize(t.type, bytes, out);
    native.push(performance.now() - s);
    s = performance.now();
    dequantize(t.type, bytes, out, { backend: 'wasm' });
    wasm.push(performance.now() - s);
    s = performance.now();
    await dequantizeAsync(t.type, bytes, out);
    nativeAsync.push(performance.now() - s);
  }
  return { open: median(open), ready: median(ready), encode: median(encode), native: median(native), wasm: median(wasm), nativeAsync: median(nativeAsync) };
}

async function main(): Promise<void> {
  if (CHROMIUM_MISSING !== undefined || !existsSync(join(SHARED, 'tokenizer', 'vocab', `${VOCAB}.gguf`))) {
    console.log(`bench/browser: skipped (${CHROMIUM_MISSING ?? `no ${SHARED}/tokenizer`})`);
    return;
  }
  const dir = join(packageRoot(), '.cache', 'bench-browser');
  const q4k = join(dir, 'q4k.gguf');
  mkdirSync(dir, { recursive: true });
  if (!existsSync(q4k)) {
    const bytes = new Uint8Array((Q4K_VALUES / 256) * 144);
    // Blocks with finite scales (d, dmin = 1/16) and varied quants.
    for (let b = 0; b < bytes.length; b += 144) {
      bytes[b + 1] = 0x2c;
      bytes[b + 3] = 0x2c;
      for (let i = 4; i < 144; i++) bytes[b + i] = (b * 31 + i * 17) & 0xff;
    }
    writeGgufFile(q4k, { metadata: [['general.architecture', { type: 'STRING', value: 'llama' }]], tensors: [{ name: 'q4k', type: 'Q4_K', shape: [4096, Q4K_VALUES / 4096], data: bytes }] });
  }
  const texts = (JSON.parse(readFileSync(join(SHARED, 'tokenizer', 'expected', `${VOCAB}.json`), 'utf8')) as Array<{ text: string }>).map((e) => e.text);
  let text = '';
  for (let i = 0; text.length < 1 << 20; i++) text += `${texts[i % texts.length]} `;
  text = text.slice(0, 1 << 20);
  const app = await bundle(PAGE, 'browser', true);
  const server = await startStaticServer({
    '/': { body: '<!doctype html><meta charset="utf-8"><script type="module" src="app.js"></script>', type: 'text/html' },
    '/app.js': { body: app.code, type: 'text/javascript' },
    '/favicon.ico': { body: '', type: 'image/x-icon' },
    '/files/': dir,
    '/vocab/': join(SHARED, 'tokenizer', 'vocab'),
  });
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/`);
    await page.waitForFunction(() => (globalThis as { ready?: boolean }).ready === true);
    const call = <T>(fn: string, ...args: unknown[]) => page.evaluate(([fn, args]) => (globalThis as any).bench[fn as string](...(args as unknown[])), [fn, args] as const) as Promise<T>;
    const web = {
      open: await call<number>('open', `${server.url}/vocab/${VOCAB}.gguf`, ROUNDS),
      ...(await call<{ ready: number; encode: number }>('tokenizer', `${server.url}/vocab/${VOCAB}.gguf`, text, ROUNDS)),
      ...(await call<{ sync: number; async: number }>('dequant', `${server.url}/files/q4k.gguf`, ROUNDS)),
    };
    const node = await nodeFigures(server.url, text);
    const ms = (x: number) => `${x.toFixed(1)} ms`.padStart(10);
    console.log(`browser build in ${await browser.context.browser()?.version() ?? 'chromium'} beside Node ${process.version} (medians of ${ROUNDS}):`);
    console.log(`                                               chromium       node`);
    console.log(`  openGgufRemote, 7.8 MB header (${VOCAB})  ${ms(web.open)} ${ms(node.open)}`);
    console.log(`  tokenizer ready (tokenizer() + first encode)      ${ms(web.ready)} ${ms(node.ready)}`);
    console.log(`  encode 1 MB of text                               ${ms(web.encode)} ${ms(node.encode)}`);
    console.log(`  dequantize Q4_K 50M values, sync                  ${ms(web.sync)} ${ms(node.native)} (node: addon)  ${ms(node.wasm)} (node: wasm)`);
    console.log(`  dequantizeAsync Q4_K 50M values                   ${ms(web.async)} ${ms(node.nativeAsync)} (node: addon, threads)`);
  } finally {
    await browser.close();
    await server.close();
  }
}

await main();
