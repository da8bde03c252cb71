// `gguf-mmap estimate` and inspect's memory line, on the embedded sample model.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeGguf, estimateMemory, fitGpuLayers, openGguf } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const SAMPLE = join(import.meta.dirname, '../../dist/sample.gguf');

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('gguf-mmap estimate', () => {
  it('--json gives estimateMemory figures for each --ctx', () => {
    const r = cli(['estimate', SAMPLE, '--ctx', '1000', '--ctx', '8192', '--parallel', '2', '-ctk', 'q8_0', '--no-flash-attn', '--json']);
    expect(r.status).toBe(0);
    const rows = JSON.parse(r.stdout) as { contextSize: number; kvCache: number; total: number }[];
    using file = openGguf(SAMPLE);
    const options = { sequences: 2, typeK: 'q8_0', flashAttention: false } as const;
    expect(rows.map((x) => x.contextSize)).toEqual([1024, 8192]);
    expect(rows[0]!.kvCache).toBe(estimateMemory(file, { ...options, contextSize: 1000 }).kvCache);
    expect(rows[1]!.total).toBe(estimateMemory(file, { ...options, contextSize: 8192 }).total);
  });

  it('without --ctx, a table up to the trained context; bad options are usage errors', () => {
    const r = cli(['estimate', SAMPLE]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^context +weights +KV cache +output +compute +total$/m);
    // the sample's trained context is 64 tokens, which llama.cpp pads to 256
    expect(r.stdout).toMatch(/^ +256 +\d/m);
    // the sample is a Llama: its compute buffer is replayed, and the table says so
    expect(r.stdout).toMatch(/compute: its graph allocator replayed/);
    expect(cli(['estimate', SAMPLE, '--cache-type-k', 'q9']).status).toBe(1);
    expect(cli(['estimate']).status).toBe(1);
  });

  it('a context past llama.cpp\'s uint32 n_ctx is a usage error, not an answer', () => {
    for (const ctx of ['4294967296', '1099511627776', '4294967041']) {
      const r = cli(['estimate', SAMPLE, '--ctx', ctx]);
      expect(r.status, ctx).toBe(1);
      expect(r.stderr).toMatch(/--ctx must be at most 4294967040 \(llama.cpp keeps it in a uint32\)/);
    }
    expect(cli(['estimate', SAMPLE, '--ubatch', '4294967296']).status).toBe(1);
    expect(cli(['estimate', SAMPLE, '--ctx', '4294967040', '--json']).status).toBe(0);
  });

  it('a valid file of an architecture the estimate does not know is exit 3 (not possible here), not 2 (invalid)', () => {
    const path = `${tempDir('gguf-mmap-estimate-cli-')}/unknown.gguf`;
    writeFileSync(path, encodeGguf({ metadata: { 'general.architecture': { type: 'STRING', value: 'no-such-arch' } }, tensors: [] }));
    const r = cli(['estimate', path]);
    expect(r.stderr).toMatch(/UNSUPPORTED_ARCHITECTURE/);
    expect(r.status).toBe(3);
  });

  it('inspect shows one memory line, and one for a CUDA GPU with every layer', () => {
    const out = cli(['inspect', SAMPLE]).stdout;
    expect(out).toMatch(/^memory +[\d.]+ MiB at 4096 tokens on the CPU/m);
    using file = openGguf(SAMPLE);
    const gpu = estimateMemory(file, { contextSize: 4096, gpu: 'cuda', gpuLayers: 999 });
    expect(out).toContain(`gpu        ${(gpu.gpuTotal! / 1048576).toFixed(1)} MiB on a CUDA GPU with every layer at 4096 tokens`);
  });

  it('--gpu SIZE: per device at each context, at the most layers that fit (fitGpuLayers)', () => {
    using file = openGguf(SAMPLE);
    // a budget between two layer counts' totals at 1024 tokens
    const at = (n: number) => estimateMemory(file, { contextSize: 1024, gpu: 'cuda', gpuLayers: n }).gpuTotal!;
    const budget = at(1);
    const r = cli(['estimate', SAMPLE, '--gpu', String(budget), '--ctx', '1024', '--ctx', '256', '--json']);
    expect(r.status).toBe(0);
    const rows = JSON.parse(r.stdout) as { contextSize: number; gpuLayers: number; gpuTotal: number; gpuBudget: number; fits: boolean; buffers: Record<string, { weights: number }> }[];
    expect(rows.map((x) => x.gpuLayers)).toEqual([1024, 256].map((contextSize) => fitGpuLayers(file, budget, { contextSize, gpu: 'cuda' })));
    for (const row of rows) {
      expect(row.gpuBudget).toBe(budget);
      expect(row.fits).toBe(row.gpuTotal <= budget);
      expect(row.gpuTotal).toBe(estimateMemory(file, { contextSize: row.contextSize, gpu: 'cuda', gpuLayers: row.gpuLayers }).gpuTotal);
    }
    const text = cli(['estimate', SAMPLE, '--gpu', '24GiB', '--ctx', '1024']);
    expect(text.stdout).toMatch(/^context +layers +GPU weights +GPU KV +GPU compute +GPU total +pinned host +host +fits$/m);
    expect(text.stdout).toMatch(/one CUDA GPU of 24576\.0 MiB/);
    expect(text.stdout).toMatch(/not counted: the CUDA context/);
  });

  it('--gpu-layers N: per device at N layers; bad sizes and counts are usage errors', () => {
    using file = openGguf(SAMPLE);
    const r = cli(['estimate', SAMPLE, '--gpu-layers', '1', '--ctx', '512', '--json']);
    expect(r.status).toBe(0);
    const [row] = JSON.parse(r.stdout) as { gpuLayers: number; gpuTotal: number; fits?: boolean }[];
    expect(row!.gpuLayers).toBe(1);
    expect(row!.gpuTotal).toBe(estimateMemory(file, { contextSize: 512, gpu: 'cuda', gpuLayers: 1 }).gpuTotal);
    expect(row!.fits).toBeUndefined();
    for (const bad of [['--gpu', '24XB'], ['--gpu', '-1'], ['--gpu'], ['--gpu-layers', 'all'], ['-ngl', '-2']]) {
      const e = cli(['estimate', SAMPLE, ...bad]);
      expect(e.status, bad.join(' ')).toBe(1);
    }
  });
});
