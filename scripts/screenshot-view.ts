// The README's picture of `gguf-mmap view`: the real page, served by the real server, in the
// browser the tests use (Debian's chromium), written to docs/view.png.
//
//   npm run build:ts && node dist/scripts/screenshot-view.js [MODEL.gguf] [--out docs/view.png]
//
// Without MODEL it pictures a file shaped like TinyLlama's Q4_K_M (scripts/tinyllama-shape.ts:
// same metadata, tensors and types; the tensors hold zeros but for the one the page opens,
// blk.0.attn_q.weight, whose Q4_K blocks are random with scales of a trained model's size).
// The image is a palette PNG of 64 colours (pngquant), about 70 KiB.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openGguf, writeGgufFile } from '../lib/index.js';
import { packageRoot } from '../lib/package-root.js';
import { mulberry32 } from '../lib/prng.js';
import { startViewServer } from '../lib/view/server.js';
import { CHROMIUM_MISSING, launchChromium } from './chromium.js';
import { findTinyllama } from './tinyllama.js';
import { tinyllamaShapedSpec } from './tinyllama-shape.js';

async function main(): Promise<void> {
  if (CHROMIUM_MISSING !== undefined) throw new Error(CHROMIUM_MISSING);
  const args = process.argv.slice(2);
  const outAt = args.indexOf('--out');
  const out = outAt >= 0 ? args[outAt + 1]! : join(packageRoot(), 'docs', 'view.png');
  const given = args.find((a, i) => !a.startsWith('--') && i !== outAt + 1);
  const path = given ?? findTinyllama() ?? pictureModel();
  using g = openGguf(path);
  const server = await startViewServer(g, { source: given ?? 'tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf' });
  const browser = await launchChromium({ width: 1100, height: 1000 });
  try {
    const page = await browser.context.newPage();
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready=all]');
    // A tensor opened: its facts, statistics and histogram under the map and the table.
    const opened = 'blk.0.attn_q.weight';
    await page.locator(`.layer-cell[data-name="${opened}"]`).click();
    await page.waitForSelector('#histogram rect');
    await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    // Summary, layer map, the table's top and the opened tensor; not the metadata below.
    const bottom = await page.locator('#tensor').evaluate((e) => e.getBoundingClientRect().bottom + (globalThis as unknown as { scrollY: number }).scrollY);
    const raw = join(tmpdir(), `gguf-mmap-view-${process.pid}.png`);
    await page.screenshot({ path: raw, fullPage: true, clip: { x: 0, y: 0, width: 1100, height: Math.ceil(bottom) + 10 } });
    shrink(raw, out);
    process.stdout.write(`${out}: ${(statSync(out).size / 1024).toFixed(0)} KiB\n`);
  } finally {
    await browser.close();
    await server.close();
  }
}

/** The TinyLlama-shaped file with random Q4_K blocks in blk.0.attn_q.weight (d about 0.01, dmin about 0.005). */
function pictureModel(): string {
  const path = join(tmpdir(), 'gguf-mmap-view-picture.gguf');
  const spec = tinyllamaShapedSpec();
  const tensors = spec.tensors!.map((t) => {
    if (t.name !== 'blk.0.attn_q.weight') return t;
    // Seeded: the same picture on every run (no churn of the committed PNG).
    const next = mulberry32(29);
    const data = new Uint8Array(((t.shape[0]! * t.shape[1]!) / 256) * 144).map(() => next() & 255);
    for (let b = 0; b < data.length; b += 144) data.set([0x1f, 0x21, 0x1f, 0x1d], b);
    return { ...t, data };
  });
  writeGgufFile(path, { ...spec, tensors });
  return path;
}

/** Quantizes the screenshot to a 64-colour palette with pngquant (Debian: apt-get install pngquant); without it, copies it as it is, and says so. */
function shrink(raw: string, out: string): void {
  if (existsSync('/usr/bin/pngquant')) {
    execFileSync('/usr/bin/pngquant', ['--force', '--strip', '64', '--speed=1', '--output', out, raw]);
    return;
  }
  process.stderr.write('screenshot-view: no pngquant (apt-get install pngquant): the picture is kept unquantized, several times larger\n');
  copyFileSync(raw, out);
}

main().catch((error: unknown) => {
  process.stderr.write(`screenshot-view: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
