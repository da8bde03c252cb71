// file.summary(): what a model is, from its header alone.
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openGguf, writeGgufFile } from '../../lib/index.js';
import { ensureTinyllamaShaped } from '../../scripts/tinyllama-shape.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';
import { writeInspectJson } from '../../lib/cli/inspect.js';

const dir = tempDir();

describe('summary', () => {
  it('a TinyLlama-shaped Q4_K_M file: the figures llama.cpp prints for the real model', () => {
    // llama.cpp loading tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf prints "model params = 1.10 B" and
    // "model size = 636.18 MiB (4.85 BPW)"; the shaped file has the real model's tensor shapes and types.
    using g = openGguf(ensureTinyllamaShaped(join(dir, 'tinyllama-shaped.gguf')));
    const s = g.summary();
    expect(s.architecture).toBe('llama');
    expect(s.parameters).toBe(1_100_048_384);
    expect((s.bytes / 2 ** 20).toFixed(2)).toBe('636.18');
    expect(s.bitsPerWeight.toFixed(2)).toBe('4.85');
    expect(s.fileType).toBe(15); // LLAMA_FTYPE_MOSTLY_Q4_K_M
    expect(s.vocabularySize).toBe(32000);
    expect(s.hyperparameters).toMatchObject({
      context_length: 2048,
      embedding_length: 2048,
      block_count: 22,
      feed_forward_length: 5632,
      'attention.head_count': 32,
      'attention.head_count_kv': 4,
      'rope.freq_base': 10000,
    });
    expect(s.hyperparameters['attention.layer_norm_rms_epsilon']).toBe(Math.fround(1e-5));
    expect(s.byType.map((t) => t.type)).toEqual(['Q4_K', 'Q6_K', 'F32']);
    expect(s.byType.reduce((n, t) => n + t.tensors, 0)).toBe(201);
    expect(s.byType.find((t) => t.type === 'F32')).toMatchObject({ tensors: 45, parameters: 45 * 2048, bitsPerWeight: 32 });
    expect(s.byType.find((t) => t.type === 'Q4_K')!.bitsPerWeight).toBe(4.5);
    expect(s.byType.find((t) => t.type === 'Q6_K')!.bitsPerWeight).toBe(6.5625);
    expect([s.parts, s.fileBytes]).toEqual([1, g.fileSize]);
  });

  it.skipIf(SKIP_SHARED)('a split set sums every part, as ggml sees them, and agrees with the unsplit file', () => {
    const parts = [1, 2, 3].map((n) => sharedPath('fixtures/split', `tiny-llama-q4_k_m-0000${n}-of-00003.gguf`));
    type GgmlView = { tensors: { ne: number[]; size: number }[] };
    const views = parts.map((p) => readJson<GgmlView>(sharedPath('fixtures/split/expected', basename(p).replace('.gguf', '.ggml.json'))));
    const tensors = views.flatMap((v) => v.tensors);
    using set = openGguf(parts[1]!);
    using whole = openGguf(sharedPath('fixtures/quantized', 'tiny-llama-q4_k_m.gguf'));
    const s = set.summary();
    expect(s.parameters).toBe(tensors.reduce((n, t) => n + t.ne.reduce((a, b) => a * b, 1), 0));
    expect(s.bytes).toBe(tensors.reduce((n, t) => n + t.size, 0));
    expect([s.parts, s.fileBytes]).toEqual([3, set.parts.reduce((n, p) => n + p.size, 0)]);
    const w = whole.summary();
    expect({ ...s, parts: 0, fileBytes: 0 }).toEqual({ ...w, parts: 0, fileBytes: 0 });
  });

  it('hyperparameters: numbers and number arrays under the architecture, 64-bit as numbers, odd keys kept, other types left out', () => {
    const path = join(dir, 'odd.gguf');
    writeGgufFile(path, {
      metadata: {
        'general.architecture': { type: 'STRING', value: 'x' },
        'x.block_count': { type: 'UINT64', value: 40n },
        'x.__proto__': { type: 'UINT32', value: 7 },
        'x.attention.head_count': { type: 'ARRAY', arrayType: 'INT32', value: [4, 8, 16] },
        'x.name': { type: 'STRING', value: 'not a number' },
        'x.flag': { type: 'BOOL', value: true },
        'y.context_length': { type: 'UINT32', value: 99 },
      },
      tensors: [{ name: 'w', type: 'Q8_0', shape: [64, 2] }],
    });
    using g = openGguf(path);
    const s = g.summary();
    expect(Object.keys(s.hyperparameters)).toEqual(['block_count', '__proto__', 'attention.head_count']);
    expect(s.hyperparameters.block_count).toBe(40);
    expect(s.hyperparameters['__proto__']).toBe(7);
    expect(s.hyperparameters['attention.head_count']).toEqual([4, 8, 16]);
    expect(JSON.parse(JSON.stringify(s)).hyperparameters.__proto__).toBe(7);
    expect([s.parameters, s.bytes, s.bitsPerWeight]).toEqual([128, 136, 8.5]);
    expect([s.name, s.fileType, s.vocabularySize]).toEqual([undefined, undefined, undefined]);
  });

  it('works after close(); inspect --json spells hyperparameters as the metadata (64-bit exact, NaN by name, -0 kept); long arrays are left out', () => {
    const path = join(dir, 'json.gguf');
    writeGgufFile(path, {
      metadata: {
        'general.architecture': { type: 'STRING', value: 'x' },
        'x.big': { type: 'UINT64', value: 2n ** 60n + 1n },
        'x.nan': { type: 'FLOAT32', value: Number.NaN },
        'x.negz': { type: 'FLOAT32', value: -0 },
        'x.per_layer': { type: 'ARRAY', arrayType: 'UINT32', value: [1, 2] },
        'x.long': { type: 'ARRAY', arrayType: 'FLOAT32', value: new Array(4097).fill(1) },
      },
      tensors: [],
    });
    const g = openGguf(path);
    let json = '';
    writeInspectJson(g, (chunk) => (json += chunk));
    g.close();
    expect(Object.keys(g.summary().hyperparameters)).toEqual(['big', 'nan', 'negz', 'per_layer']);
    expect(g.summary().hyperparameters.per_layer).toEqual([1, 2]);
    expect(json).toContain('"hyperparameters":{"big":"1152921504606846977","nan":"NaN","negz":-0,"per_layer":[1,2]}');
    expect(JSON.parse(json).summary).toMatchObject({ architecture: 'x', name: null, parameters: 0 });
  });

  it('no architecture, or one that is not a string: no hyperparameters, no error', () => {
    const path = join(dir, 'noarch.gguf');
    writeGgufFile(path, { metadata: { 'general.architecture': { type: 'UINT8', value: 1 } }, tensors: [] });
    using g = openGguf(path);
    expect(g.summary()).toMatchObject({ architecture: undefined, parameters: 0, bytes: 0, bitsPerWeight: 0, byType: [], hyperparameters: {} });
  });
});
