import { join } from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';
import { modelForTests, openGguf, type Q4KBlock } from '../../lib/index.js';
import { ensureTinyllamaShaped, N_MERGES, N_VOCAB } from '../../scripts/tinyllama-shape.js';
import { findTinyllama, TINYLLAMA_URI } from '../../scripts/tinyllama.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';
import { tempDir } from '../helpers/tmp.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';

// The real model when one is at hand (GGUF_TINYLLAMA, or the Hugging Face cache that `npm run
// fetch:tinyllama` fills, downloaded there with GGUF_MMAP_DOWNLOAD=1); otherwise a generated
// file of the same shape.
const fromHub = await modelForTests(TINYLLAMA_URI, { path: findTinyllama(), download: process.env.GGUF_MMAP_DOWNLOAD === '1', required: false });
const real = findTinyllama() ?? fromHub.path;
let path: string;

beforeAll(() => {
  if (real === undefined) {
    console.warn(`TinyLlama not found (set GGUF_TINYLLAMA, run npm run fetch:tinyllama, or GGUF_MMAP_DOWNLOAD=1 to pull it; ${fromHub.skip}): using a generated file of its shape`);
    path = ensureTinyllamaShaped(join(tempDir(), 'tinyllama-shaped.gguf'));
  } else {
    path = real;
  }
});

const PER_BLOCK = ['attn_norm', 'attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_norm', 'ffn_gate', 'ffn_up', 'ffn_down'];

describe(`TinyLlama 1.1B Q4_K_M (${real === undefined ? 'generated shape' : 'real file'})`, () => {
  it('has the structure of the model', () => {
    using g = openGguf(path);
    expect(g.fileSize).toBeGreaterThan(660e6);
    expect(g.fileSize).toBeLessThan(680e6);
    expect(g.metadata.get('general.architecture')).toBe('llama');
    expect(g.metadata.get('llama.block_count')).toBe(22);
    expect(g.metadata.get('llama.embedding_length')).toBe(2048);
    expect(g.metadata.get('llama.attention.head_count_kv')).toBe(4);
    expect(g.metadata.get('general.file_type')).toBe(15);
    expect(g.metadata.array('tokenizer.ggml.tokens')!.length).toBe(N_VOCAB);
    expect(g.metadata.array('tokenizer.ggml.merges')!.length).toBe(N_MERGES);
    expect(g.metadata.array('tokenizer.ggml.tokens')!.at(1)).toBe('<s>');
    expect((g.metadata.get('tokenizer.ggml.scores') as Float32Array).length).toBe(N_VOCAB);

    expect(g.tensors).toHaveLength(201);
    expect(g.tensor('token_embd.weight')).toMatchObject({ type: 'Q4_K', shape: [2048, 32000] });
    expect(g.tensor('output.weight')).toMatchObject({ type: 'Q6_K', shape: [2048, 32000] });
    expect(g.tensor('output_norm.weight')).toMatchObject({ type: 'F32', shape: [2048] });
    for (let i = 0; i < 22; i++) {
      for (const part of PER_BLOCK) {
        const t = g.tensor(`blk.${i}.${part}.weight`);
        expect(t, `blk.${i}.${part}`).toBeDefined();
        expect(part.endsWith('norm') ? ['F32'] : ['Q4_K', 'Q6_K'], `blk.${i}.${part}`).toContain(t!.type);
      }
    }
    const q6 = g.tensors.filter((t) => t.type === 'Q6_K').map((t) => t.name);
    expect(q6.length).toBeGreaterThan(1);
    expect(q6.every((n) => n === 'output.weight' || /attn_v|ffn_down/.test(n))).toBe(true);
  });

  it.skipIf(READ_MODE)(mmapOnly('tensor views are windows of one mapping, with nothing copied'), () => {
    using g = openGguf(path);
    // Node's own ArrayBuffer allocations (what a copy would take) do not grow; windows are external.
    const before = process.memoryUsage().arrayBuffers;
    for (const t of g.tensors) expect(t.bytes.length, t.name).toBe(t.nbytes);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1 << 20);
    // Neighbouring small tensors share a window; no window is longer than 32 MiB or its tensor.
    const norms = g.tensors.filter((t) => t.name.endsWith('norm.weight'));
    expect(new Set(norms.map((t) => t.bytes.buffer)).size).toBeLessThan(norms.length);
    for (const t of g.tensors) expect(t.bytes.buffer.byteLength, t.name).toBeLessThanOrEqual(Math.max(32 << 20, t.nbytes));
    const norm = g.tensor('output_norm.weight')!.view() as Float32Array;
    expect(norm).toBeInstanceOf(Float32Array);
    expect(norm.buffer).toBe(g.tensor('output_norm.weight')!.bytes.buffer);
    expect(norm.every(Number.isFinite)).toBe(true);
    if (real === undefined) expect(norm.every((v) => v === 1)).toBe(true);
    const embedding = g.tensor('token_embd.weight')!;
    const block = embedding.block(31999 * 8) as Q4KBlock;
    expect([block.scales.length, block.qs.length, block.qs.buffer === embedding.bytes.buffer]).toEqual([12, 128, true]);
    expect(Number.isFinite(block.d) && Number.isFinite(block.dmin)).toBe(true);
  });

  it('opening grows memory by a few MB at most', () => {
    const r = runChild(
      `
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const settle = () => { globalThis.gc(); globalThis.gc(); };
      openGguf(${JSON.stringify(path)}).close(); // load the addon and warm up
      settle();
      const before = process.memoryUsage();
      const g = openGguf(${JSON.stringify(path)});
      const kept = [g.tensors.length, g.metadata.size];
      settle();
      const after = process.memoryUsage();
      // process.memoryUsage().external counts the mapped length (V8 accounts external ArrayBuffers
      // by size); it is address space, not memory. Resident memory and the JS heap are what grow.
      console.log(JSON.stringify({ kept, rss: (after.rss - before.rss) / 2 ** 20, heap: (after.heapUsed - before.heapUsed) / 2 ** 20 }));
      g.close();
    `,
      ['--expose-gc'],
    );
    expect(r.status, r.stderr).toBe(0);
    const { kept, rss, heap } = r.result as { kept: number[]; rss: number; heap: number };
    expect(kept[0]).toBe(201);
    // Measured: ~1 MiB each; the bounds are 4x and more, and far below the file's 660 MB.
    expect(rss).toBeLessThan(32);
    expect(heap).toBeLessThan(16);
  });
});

