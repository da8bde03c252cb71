// The compute buffer of a trunk with long runs of identical layers, replayed with a few copies of
// each run once the allocator's state is shown to repeat (issue 34, item 23): byte for byte the
// whole graph's buffer, and a 512-block MiniMax-M3 at 256 sequences no longer takes minutes.
import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { editMetadata, estimateMemory, largestContext, openGguf, type EstimateOptions, type GgufFile } from '../../lib/index.js';
import { graphModelled, reserveShape } from '../../lib/estimate/compute.js';
import { ComputeGraph } from '../../lib/estimate/compute-graph.js';
import { estimateKvCache } from '../../lib/estimate/kv-cache.js';
import { readModelShape } from '../../lib/estimate/model-shape.js';
import { resolveOptions } from '../../lib/estimate/options.js';
import { transformerGraph } from '../../lib/estimate/transformer-graph.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';
import { remakeMemoryModel } from '../helpers/memory-models.js';

/** The buffer of the whole graph, every layer replayed. */
function wholeGraph(file: GgufFile, options: EstimateOptions): number {
  const shape = readModelShape(file);
  const settings = resolveOptions(options, shape.trainedContext);
  return transformerGraph(shape, reserveShape(shape, settings, estimateKvCache(shape, settings))).allocate();
}

describe.skipIf(SKIP_SHARED)('runs of identical layers', () => {
  const dir = tempDir('gguf-mmap-repeating-');
  const opened: GgufFile[] = [];
  afterAll(() => {
    for (const file of opened) file.close();
  });
  /** A recorded model's header, with `blocks` blocks when given (the added ones have no tensors). */
  const files = new Map<string, GgufFile>();
  const open = (model: string, blocks?: number): GgufFile => {
    const path = join(dir, `${blocks ?? 'as-is'}-${model}`);
    const known = files.get(path);
    if (known !== undefined) return known;
    remakeMemoryModel(model, path);
    if (blocks !== undefined) editMetadata(path, { set: [[`${model.replace(/-moe\.gguf$/, '')}.block_count`, { type: 'UINT32', value: blocks }]] });
    const file = openGguf(path);
    opened.push(file);
    files.set(path, file);
    return file;
  };

  it('every recorded row: the buffer is the whole graph\'s, to the byte', () => {
    const rows = readJson<{ model: string; settings: EstimateOptions }[]>(sharedPath('memory', 'expected.json'));
    let compared = 0;
    for (const row of rows) {
      const file = open(row.model);
      if (!graphModelled(readModelShape(file))) continue;
      expect(estimateMemory(file, { ...row.settings, cpuFeatures: [] }).compute, `${row.model} ${JSON.stringify(row.settings)}`).toBe(wholeGraph(file, row.settings));
      compared++;
    }
    expect(compared).toBe(334);
  });

  it('MiniMax-M3 of 64 blocks, sparse layers in many settings: the whole graph\'s buffer', () => {
    const file = open('minimax-m3-moe.gguf', 64);
    const settings: EstimateOptions[] = [
      { contextSize: 4096 },
      { contextSize: 8192, sequences: 8 },
      { contextSize: 8192, sequences: 8, unifiedKv: true },
      { contextSize: 4096, flashAttention: false },
      { contextSize: 4096, typeK: 'q8_0', typeV: 'q8_0' },
      { contextSize: 1000, ubatchSize: 100, sequences: 3 },
      { contextSize: 16384, sequences: 16, ubatchSize: 256 },
    ];
    for (const options of settings) expect(estimateMemory(file, { ...options, cpuFeatures: [] }).compute, JSON.stringify(options)).toBe(wholeGraph(file, options));
  });

  it('the work does not grow with the blocks: 512 blocks build about the tensors 64 do (8 times as many before)', () => {
    const options = { contextSize: 16_384, sequences: 16, cpuFeatures: [] };
    const ops = vi.spyOn(ComputeGraph.prototype, 'op');
    const tensors = (blocks: number) => {
      const file = open('minimax-m3-moe.gguf', blocks);
      ops.mockClear();
      estimateMemory(file, options);
      return ops.mock.calls.length;
    };
    const at64 = tensors(64);
    const at512 = tensors(512);
    ops.mockRestore();
    expect(at64).toBeGreaterThan(1000);
    expect(at512).toBeLessThan(at64 * 1.5);
  }, 120_000);

  it('MiniMax-M3 of 512 blocks at 256 sequences: an estimate and largestContext replay a few blocks, not all', () => {
    // the whole graph is millions of tensors: 35 s an estimate and minutes for largestContext
    // before; the buffer is the one the whole graph gives (9324544 bytes, replayed once to check)
    const file = open('minimax-m3-moe.gguf', 512);
    const options = { sequences: 256, cpuFeatures: [] };
    const e = estimateMemory(file, { ...options, contextSize: 65_536 });
    expect(e.compute).toBe(9_324_544);
    expect(largestContext(file, e.total, { ...options, beyondTrained: true })).toBe(65_536);
  }, 120_000);
});
