// estimateMemory with a CUDA device against what llama.cpp v0.5.0's CUDA backend allocates
// (../shared/memory/gpu-expected.json: 463 settings of the 44 shared models, per buffer type),
// each model remade as its header followed by zeros (a sparse file).
import { copyFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { estimateMemory, openGguf, type GgufFile } from '../../lib/index.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

type BufferName = 'CUDA0' | 'CUDA_Host' | 'CPU';
interface GpuRow {
  model: string;
  gpuLayers: number;
  settings: { contextSize: number; ubatchSize: number; sequences: number; unifiedKv: boolean; typeK: 'f16'; typeV: 'f16'; flashAttention: boolean; swaFull: boolean };
  buffers: Partial<Record<BufferName, { weights: number; kvCache: number; compute: number }>>;
  outputMiB: number;
  outputBuffer: 'CUDA_Host' | 'CPU';
}

const BUFFERS: readonly BufferName[] = ['CUDA0', 'CUDA_Host', 'CPU'];
const rel = (actual: number, expected: number) => (expected === 0 ? (actual === 0 ? 0 : Infinity) : Math.abs(actual - expected) / expected);

describe.skipIf(SKIP_SHARED)('estimateMemory with a CUDA device against llama.cpp v0.5.0', () => {
  const rows = SKIP_SHARED ? [] : readJson<GpuRow[]>(sharedPath('memory', 'gpu-expected.json'));
  const sizes = SKIP_SHARED ? {} : readJson<Record<string, number>>(sharedPath('memory', 'sizes.json'));
  const dir = tempDir('gguf-mmap-gpu-estimate-');
  const opened = new Map<string, GgufFile>();
  const open = (model: string): GgufFile => {
    let file = opened.get(model);
    if (file === undefined) {
      const path = join(dir, model);
      copyFileSync(sharedPath('memory', 'headers', `${model}.head`), path);
      truncateSync(path, sizes[model]!);
      file = openGguf(path);
      opened.set(model, file);
    }
    return file;
  };
  // Closed before the folder is removed (Windows cannot delete a mapped file).
  afterAll(() => {
    for (const file of opened.values()) file.close();
  });
  const estimate = (row: GpuRow) => estimateMemory(open(row.model), { ...row.settings, gpu: 'cuda', gpuLayers: row.gpuLayers });

  it('covers 463 settings of the 44 models, the 8B shape at 0, 8, 16, 24 and all layers', () => {
    expect(rows.length).toBe(463);
    expect(new Set(rows.map((r) => r.model)).size).toBe(44);
    expect([...new Set(rows.filter((r) => r.model === 'llama-3.1-8b-shaped.gguf').map((r) => r.gpuLayers))].sort((a, b) => a - b)).toEqual([0, 8, 16, 24, 999]);
  });

  it('weights and KV cache match to the byte in every buffer type, on every row; the output buffer is where llama.cpp puts it', () => {
    for (const row of rows) {
      const e = estimate(row);
      const what = `${row.model} gpuLayers ${row.gpuLayers} ${JSON.stringify(row.settings)}`;
      for (const name of BUFFERS) {
        const expected = row.buffers[name] ?? { weights: 0, kvCache: 0, compute: 0 };
        expect(e.buffers![name].weights, `${what} ${name} weights`).toBe(expected.weights);
        expect(e.buffers![name].kvCache, `${what} ${name} KV cache`).toBe(expected.kvCache);
      }
      expect(e.outputBuffer, what).toBe(row.outputBuffer);
      expect(Math.abs(e.output / 1048576 - row.outputMiB), what).toBeLessThanOrEqual(0.005);
      // the totals are the buffers' sums
      expect(e.weights).toBe(BUFFERS.reduce((a, n) => a + e.buffers![n].weights, 0));
      expect(e.compute).toBe(BUFFERS.reduce((a, n) => a + e.buffers![n].compute, 0));
      expect(e.total).toBe(e.weights + e.kvCache + e.output + e.compute);
    }
  });

  it('the compute buffers: the scheduler replayed gives llama.cpp\'s to the byte on the 8B shape at every layer count', () => {
    let exact = 0;
    for (const row of rows.filter((r) => r.model === 'llama-3.1-8b-shaped.gguf')) {
      const e = estimate(row);
      if (BUFFERS.every((n) => e.buffers![n].compute === (row.buffers[n]?.compute ?? 0))) exact++;
    }
    expect(exact).toBe(90);
  });

  it('the compute buffers over every row: how many are exact, how close the rest', () => {
    let exact = 0;
    let within = 0;
    let worst = 0;
    for (const row of rows) {
      const e = estimate(row);
      const errors = BUFFERS.map((n) => {
        const expected = row.buffers[n]?.compute ?? 0;
        // a buffer under 1 MiB: within 1 MiB (small models' pinned buffers)
        return expected < 1048576 ? (Math.abs(e.buffers![n].compute - expected) <= 1048576 ? 0 : Infinity) : rel(e.buffers![n].compute, expected);
      });
      if (BUFFERS.every((n) => e.buffers![n].compute === (row.buffers[n]?.compute ?? 0))) exact++;
      const error = Math.max(...errors);
      if (error <= 0.15) within++;
      worst = Math.max(worst, error);
    }
    console.log(`GPU compute: ${exact} of ${rows.length} rows exact, ${within} within 15%, worst ${(worst * 100).toFixed(1)}%`);
    expect(exact).toBeGreaterThanOrEqual(EXACT_AT_LEAST);
    expect(within).toBeGreaterThanOrEqual(WITHIN_AT_LEAST);
  });

  it('without gpu the answer is the CPU one, without buffers', () => {
    const row = rows[0]!;
    const file = open(row.model);
    const cpu = estimateMemory(file, { ...row.settings, cpuFeatures: ['avx2', 'avx512f'] });
    expect(cpu.buffers).toBeUndefined();
    const ignored = estimateMemory(file, { ...row.settings, cpuFeatures: ['avx2', 'avx512f'], gpuLayers: 999 });
    expect([ignored.weights, ignored.kvCache, ignored.compute, ignored.total]).toEqual([cpu.weights, cpu.kvCache, cpu.compute, cpu.total]);
  });
});

/** Measured (the test prints them): raise as the replay gets closer. */
const EXACT_AT_LEAST = 184;
const WITHIN_AT_LEAST = 380;
