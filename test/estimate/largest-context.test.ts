// largestContext against the estimate itself, brute force (issue 34, items 24-26): the largest
// multiple of 256 whose estimateMemory total fits, whatever the trained context's size, the dips
// of the compute buffer, or the sequences.
import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeGguf, estimateMemory, largestContext, openGguf, parseGguf, type EstimateOptions, type GgufFile } from '../../lib/index.js';
import { SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';
import { remakeMemoryModel } from '../helpers/memory-models.js';

const u32 = (value: number) => ({ type: 'UINT32', value }) as const;

/** A one-block Llama (64 wide, 4 heads, 2 KV heads), with the trained context given. */
function llama(trained: { type: 'UINT32' | 'UINT64'; value: number | bigint }): GgufFile {
  return parseGguf(encodeGguf({
    metadata: {
      'general.architecture': { type: 'STRING', value: 'llama' },
      'llama.block_count': u32(1), 'llama.embedding_length': u32(64), 'llama.attention.head_count': u32(4),
      'llama.attention.head_count_kv': u32(2), 'llama.context_length': trained,
    } as Parameters<typeof encodeGguf>[0]['metadata'],
    tensors: [],
  }));
}

/** The largest multiple of 256 up to `cap` whose total fits, trying every one. */
function bruteForce(file: GgufFile, bytes: number, cap: number, options: EstimateOptions): number {
  let best = 0;
  for (let n = 256; n <= cap; n += 256) if (estimateMemory(file, { ...options, contextSize: n }).total <= bytes) best = n;
  return best;
}

describe('largestContext', () => {
  it('a trained context past 2^32 does not wrap the search (it answered 256)', () => {
    const file = llama({ type: 'UINT64', value: 2n ** 40n });
    // a small ubatch: the mask (ubatch x cells) small beside the KV cache, few contexts to go down
    const options = { ubatchSize: 16, cpuFeatures: [] };
    const bytes = estimateMemory(file, { ...options, contextSize: 838_144 }).total;
    expect(estimateMemory(file, { ...options, contextSize: 838_400 }).total).toBeGreaterThan(bytes);
    expect(largestContext(file, bytes, options)).toBe(838_144);
  });

  it('with sequences, a context of 256 that fits is found (it answered 0)', () => {
    const file = llama({ type: 'UINT32', value: 4096 });
    const options = { sequences: 4, cpuFeatures: [] };
    const bytes = estimateMemory(file, { ...options, contextSize: 256 }).total;
    // 256 tokens over 4 sequences pad to 1024 cells, as 1024 asked does, but reserve a smaller ubatch
    expect(estimateMemory(file, { ...options, contextSize: 1024 }).total).toBeGreaterThan(bytes);
    expect(largestContext(file, bytes, options)).toBe(bruteForce(file, bytes, 4096, options));
    expect(largestContext(file, bytes, options)).toBe(256);
  });
});

describe.skipIf(SKIP_SHARED)('largestContext where the compute buffer dips (recorded models)', () => {
  const dir = tempDir('gguf-mmap-largest-');
  const opened: GgufFile[] = [];
  afterAll(() => {
    for (const file of opened) file.close();
  });
  const open = (model: string): GgufFile => {
    const path = join(dir, model);
    remakeMemoryModel(model, path);
    const file = openGguf(path);
    opened.push(file);
    return file;
  };

  // totals measured to fall with a larger context: granitehybrid at 768 -> 1024 and 1792 -> 2048,
  // qwen3tts at 3584 -> 3840 (the compute buffer's holes fall better)
  for (const [model, dips] of [['granitehybrid-dense.gguf', [1024, 2048]], ['qwen3tts-dense.gguf', [3840]]] as const) {
    it(`${model}: at a dip, the largest that fits, not the first bisection step below it`, () => {
      const file = open(model);
      const options = { cpuFeatures: [], beyondTrained: true };
      for (const dip of dips) {
        const bytes = estimateMemory(file, { ...options, contextSize: dip }).total;
        expect(estimateMemory(file, { ...options, contextSize: dip - 256 }).total, `${dip}`).toBeGreaterThan(bytes);
        const truth = bruteForce(file, bytes, dip + 4096, options);
        expect(truth).toBeGreaterThanOrEqual(dip);
        expect(largestContext(file, bytes, options), `${model} ${bytes}`).toBe(truth);
      }
    });
  }
});
