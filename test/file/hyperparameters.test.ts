// file.hyperparameters(): the values llama.cpp's load_hparams settles on, typed by family. Truth:
// the real files' own keys (as an independent reader saw them, ../shared/fixtures/real/expected)
// with llama.cpp's defaults, and the memory estimate's shape (exact against llama.cpp) over the
// 44 recorded headers (../shared/memory/headers).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeGguf, estimateMemory, GgufError, openGguf, parseGguf, type GgufFile, type GgufWriteValue } from '../../lib/index.js';
import { blockValue } from '../../lib/file/hyperparameters.js';
import { readModelShape } from '../../lib/estimate/model-shape.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';
import { remakeMemoryModel } from '../helpers/memory-models.js';

const u32 = (value: number) => ({ type: 'UINT32', value }) as const;
const f32 = (value: number) => ({ type: 'FLOAT32', value }) as const;
const str = (value: string) => ({ type: 'STRING', value }) as const;
const u32s = (...value: number[]) => ({ type: 'ARRAY', arrayType: 'UINT32', value }) as const;

function header(arch: string, keys: Record<string, GgufWriteValue>, extra: Record<string, GgufWriteValue> = {}): GgufFile {
  return parseGguf(encodeGguf({
    metadata: { 'general.architecture': str(arch), ...Object.fromEntries(Object.entries(keys).map(([k, v]) => [`${arch}.${k}`, v])), ...extra },
    tensors: [],
  }));
}

const LLAMA = { context_length: u32(4096), block_count: u32(4), embedding_length: u32(256), 'attention.head_count': u32(8) };

function refused(make: () => GgufFile, key: string): void {
  let error: unknown;
  try {
    make().hyperparameters();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(GgufError);
  expect((error as GgufError).code).toBe('BAD_HYPERPARAMETER');
  expect((error as GgufError).message).toContain(key);
}

describe('hyperparameters: llama.cpp defaults', () => {
  it('head_count_kv defaults to head_count, head sizes to embedding / heads, n_rot to the key length, rope base 10000, linear scaling by 1', () => {
    const h = header('llama', LLAMA).hyperparameters();
    expect(h).toMatchObject({
      architecture: 'llama', family: 'transformer', contextLength: 4096, blockCount: 4, embeddingLength: 256,
      headCount: 8, headCountKv: 8, keyLength: 32, valueLength: 32, feedForwardLength: undefined, vocabularySize: undefined,
      experts: undefined, slidingWindow: undefined, ssm: undefined, recurrentState: undefined,
    });
    expect(h.rope).toEqual({ dimensionCount: 32, freqBase: 10000, scaling: { type: 'linear', factor: 1, originalContextLength: 4096, attentionFactor: 1, finetuned: false } });
  });

  it('key_length, value_length and rope keys when given; the older rope.scale_linear; vocab_size without tokens', () => {
    const h = header('qwen3', {
      ...LLAMA, 'attention.key_length': u32(128), 'attention.value_length': u32(64), 'rope.dimension_count': u32(64), 'rope.freq_base': f32(1e6),
      'rope.scaling.type': str('yarn'), 'rope.scale_linear': f32(4), 'rope.scaling.original_context_length': u32(32768), vocab_size: u32(1000),
    }).hyperparameters();
    expect([h.keyLength, h.valueLength, h.vocabularySize]).toEqual([128, 64, 1000]);
    expect(h.rope).toMatchObject({ dimensionCount: 64, freqBase: 1e6, scaling: { type: 'yarn', factor: 4, originalContextLength: 32768 } });
  });

  it('no rope for an architecture without it (ALiBi, learned positions)', () => {
    expect(header('bloom', LLAMA).hyperparameters().rope).toBeUndefined();
    expect(header('mpt', LLAMA).hyperparameters().rope).toBeUndefined();
  });

  it('per-block head counts stay arrays of blockCount numbers', () => {
    const h = header('llama', { ...LLAMA, 'attention.head_count_kv': u32s(8, 0, 4, 2), feed_forward_length: u32s(1, 2, 3, 4) }).hyperparameters();
    expect(h.headCountKv).toEqual([8, 0, 4, 2]);
    expect(h.feedForwardLength).toEqual([1, 2, 3, 4]);
    expect(blockValue(h.headCountKv, 2)).toBe(4);
  });

  it('read at open: per-block arrays too are there after close()', () => {
    const path = join(tempDir(), 'per-block.gguf');
    writeFileSync(path, encodeGguf({ metadata: { 'general.architecture': str('llama'), ...Object.fromEntries(Object.entries({ ...LLAMA, 'attention.head_count_kv': u32s(8, 0, 4, 2) }).map(([k, v]) => [`llama.${k}`, v])) }, tensors: [] }));
    const file = openGguf(path);
    file.close();
    expect(file.hyperparameters().headCountKv).toEqual([8, 0, 4, 2]);
  });

  it('sliding windows: the architecture\'s period (Gemma 3: 5 of 6 slide), a period from the file, or a flag per block', () => {
    const gemma3 = header('gemma3', { ...LLAMA, block_count: u32(7), 'attention.sliding_window': u32(1024) }).hyperparameters();
    expect(gemma3.slidingWindow).toMatchObject({ size: 1024, pattern: 6, blocks: [true, true, true, true, true, false, true] });
    const period = header('gemma3', { ...LLAMA, 'attention.sliding_window': u32(512), 'attention.sliding_window_pattern': u32(2) }).hyperparameters();
    expect(period.slidingWindow).toMatchObject({ pattern: 2, blocks: [true, false, true, false] });
    const flags = header('gpt-oss', { ...LLAMA, 'attention.sliding_window': u32(128), 'attention.sliding_window_pattern': { type: 'ARRAY', arrayType: 'BOOL', value: [false, true, true, false] } }).hyperparameters();
    expect(flags.slidingWindow).toMatchObject({ size: 128, pattern: [false, true, true, false], blocks: [false, true, true, false] });
    // Gemma 2's window when the file names none
    expect(header('gemma2', LLAMA).hyperparameters().slidingWindow?.size).toBe(4096);
  });

  it('experts make a mixture of experts; Hunyuan dense counts one expert as none', () => {
    const h = header('qwen3moe', { ...LLAMA, expert_count: u32(64), expert_used_count: u32(8), expert_feed_forward_length: u32(768) }).hyperparameters();
    expect(h.family).toBe('mixture-of-experts');
    expect(h.experts).toEqual({ count: 64, used: 8, shared: 0, feedForwardLength: 768, sharedFeedForwardLength: undefined });
    expect(header('hunyuan-dense', { ...LLAMA, expert_count: u32(1), expert_used_count: u32(1) }).hyperparameters().family).toBe('transformer');
  });

  it('recurrent models: SSM sizes and llama.cpp\'s n_embd_r / n_embd_s; RWKV\'s token shift', () => {
    const mamba = header('mamba', { ...LLAMA, 'attention.head_count': u32(0), 'ssm.conv_kernel': u32(4), 'ssm.inner_size': u32(512), 'ssm.state_size': u32(16), 'ssm.time_step_rank': u32(16) }).hyperparameters();
    expect(mamba).toMatchObject({ family: 'recurrent', rope: undefined, slidingWindow: undefined, keyLength: 0, wkv: undefined });
    expect(mamba.ssm).toEqual({ convKernel: 4, innerSize: 512, stateSize: 16, timeStepRank: 16, groupCount: 0 });
    expect(mamba.recurrentState).toEqual({ convolution: 3 * 512, state: 16 * 512 });
    const rwkv = header('rwkv6', { ...LLAMA, 'wkv.head_size': u32(64) }).hyperparameters();
    expect(rwkv.wkv).toEqual({ headSize: 64, tokenShiftCount: 2 });
    expect(rwkv.recurrentState).toEqual({ convolution: 2 * 256, state: 256 * 64 });
  });
});

describe('hyperparameters: missing or malformed values are BAD_HYPERPARAMETER naming the key', () => {
  it('a key llama.cpp needs', () => {
    const { embedding_length: _, ...noEmbedding } = LLAMA;
    refused(() => header('llama', noEmbedding), 'llama.embedding_length');
    const { block_count: __, ...noBlocks } = LLAMA;
    refused(() => header('llama', noBlocks), 'llama.block_count');
    refused(() => parseGguf(encodeGguf({ metadata: {}, tensors: [] })), 'general.architecture');
  });

  it('a value of the wrong type, or no size', () => {
    refused(() => header('llama', { ...LLAMA, embedding_length: str('256') }), 'llama.embedding_length');
    refused(() => header('llama', { ...LLAMA, 'attention.key_length': f32(NaN) }), 'llama.attention.key_length');
    refused(() => header('llama', { ...LLAMA, context_length: f32(-1) }), 'llama.context_length');
    refused(() => header('llama', { ...LLAMA, 'rope.freq_base': f32(Infinity) }), 'llama.rope.freq_base');
    refused(() => header('llama', { ...LLAMA, block_count: u32(513) }), 'llama.block_count');
  });

  it('a per-block array of the wrong length (llama.cpp\'s get_key_or_arr: "wrong array length")', () => {
    refused(() => header('llama', { ...LLAMA, 'attention.head_count_kv': u32s(8, 8, 8) }), 'llama.attention.head_count_kv');
    refused(() => header('llama', { ...LLAMA, feed_forward_length: u32s(1, 2, 3, 4, 5) }), 'llama.feed_forward_length');
    refused(() => header('qwen3moe', { ...LLAMA, expert_count: u32(8), expert_used_count: u32s(2, 2) }), 'qwen3moe.expert_used_count');
  });

  it('an unknown rope scaling type, a rope llama refuses, experts out of llama.cpp\'s limits', () => {
    refused(() => header('llama', { ...LLAMA, 'rope.scaling.type': str('dynamic') }), 'llama.rope.scaling.type');
    refused(() => header('llama', { ...LLAMA, 'rope.dimension_count': u32(16) }), 'llama.rope.dimension_count');
    refused(() => header('qwen3moe', { ...LLAMA, expert_count: u32(8), expert_used_count: u32(9) }), 'qwen3moe.expert_used_count');
    refused(() => header('qwen3moe', { ...LLAMA, expert_count: u32(2048), expert_used_count: u32(2) }), 'qwen3moe.expert_count');
  });

  it('the estimate refuses a per-block array of the wrong length through the same reader', () => {
    const file = header('llama', { ...LLAMA, 'attention.head_count_kv': u32s(8, 8) });
    expect(() => estimateMemory(file, { cpuFeatures: [] })).toThrowError(expect.objectContaining({ code: 'BAD_HYPERPARAMETER' }) as GgufError);
  });
});

interface Expected {
  metadata: Record<string, { type: string; value?: unknown; length?: number }>;
}

describe.skipIf(SKIP_SHARED)('hyperparameters of real files', () => {
  const real = (name: string) => {
    const e = readJson<Expected>(sharedPath('fixtures', 'real', 'expected', `${name}.json`));
    const v = (key: string) => e.metadata[key]?.value as number | undefined;
    return { file: openGguf(sharedPath('fixtures', 'real', `${name}.gguf`)), v, tokens: e.metadata['tokenizer.ggml.tokens']?.length };
  };

  it('TinyStories 656K: grouped heads of 16, rope over them, the token count', () => {
    const { file, v, tokens } = real('tinystories656k-q8_0');
    using _ = file;
    const h = file.hyperparameters();
    expect(h).toMatchObject({
      family: 'transformer', contextLength: v('llama.context_length'), blockCount: v('llama.block_count'), embeddingLength: v('llama.embedding_length'),
      feedForwardLength: v('llama.feed_forward_length'), headCount: v('llama.attention.head_count'), headCountKv: v('llama.attention.head_count_kv'),
      keyLength: v('llama.embedding_length')! / v('llama.attention.head_count')!, vocabularySize: tokens, rmsNormEpsilon: v('llama.attention.layer_norm_rms_epsilon'),
    });
    expect(h.rope).toMatchObject({ dimensionCount: v('llama.rope.dimension_count'), freqBase: v('llama.rope.freq_base') });
  });

  it('Falcon (vocabulary file): one KV head, layer norm, head size 4544 / 71', () => {
    const { file, v } = real('vocab-falcon-v2');
    using _ = file;
    const h = file.hyperparameters();
    expect(h).toMatchObject({ headCount: 71, headCountKv: v('falcon.attention.head_count_kv'), keyLength: 64, layerNormEpsilon: v('falcon.attention.layer_norm_epsilon'), rmsNormEpsilon: undefined });
    expect(h.rope?.dimensionCount).toBe(64);
  });

  it('a file without an architecture is BAD_HYPERPARAMETER naming general.architecture', () => {
    using file = openGguf(sharedPath('fixtures', 'real', 'synthetic-align64.gguf'));
    expect(() => file.hyperparameters()).toThrowError(/general\.architecture/);
  });
});

describe.skipIf(SKIP_SHARED)('hyperparameters agree with the memory estimate over the 44 recorded headers', () => {
  const dir = tempDir('gguf-mmap-hyperparameters-');
  const sizes = SKIP_SHARED ? {} : readJson<Record<string, number>>(sharedPath('memory', 'sizes.json'));
  const opened: GgufFile[] = [];
  afterAll(() => {
    for (const file of opened) file.close();
  });

  it('none throws; blocks, heads, head sizes, windows, experts and recurrent state are the estimate\'s', () => {
    const families = new Map<string, string>();
    for (const model of Object.keys(sizes)) {
      const path = join(dir, model);
      remakeMemoryModel(model, path);
      const file = openGguf(path);
      opened.push(file);
      const h = file.hyperparameters();
      const shape = readModelShape(file);
      families.set(model, h.family);
      expect([h.blockCount, h.embeddingLength, h.vocabularySize, h.contextLength], model).toEqual([shape.layerCount, shape.embeddingLength, shape.vocabularySize, shape.trainedContext]);
      expect(h.slidingWindow?.size ?? 0, model).toBe(shape.slidingWindow);
      for (const layer of shape.layers) {
        const il = layer.index;
        expect([blockValue(h.headCount, il), blockValue(h.headCountKv, il), h.slidingWindow?.blocks[il] ?? false], `${model} block ${il}`).toEqual([layer.headCount, layer.headCountKv, layer.slidingWindow]);
      }
      // the estimate adds per-layer-embedding conv rows to n_embd_r
      const ple = (file.metadata.getNumber(`${h.architecture}.ple.heads_per_ngram`) ?? 0) > 0;
      expect([ple ? shape.recurrentR : h.recurrentState?.convolution ?? 0, h.recurrentState?.state ?? 0], model).toEqual([shape.recurrentR, shape.recurrentS]);
      if (shape.expertCount > 0) expect([h.experts?.count, h.experts && blockValue(h.experts.used, 0)], model).toEqual([shape.expertCount, shape.expertUsedCount]);
      if (h.ssm !== undefined) expect([h.ssm.convKernel, h.ssm.innerSize, h.ssm.stateSize, h.ssm.groupCount, h.ssm.timeStepRank], model).toEqual([shape.ssm.convKernel, shape.ssm.inner, shape.ssm.state, shape.ssm.groups, shape.ssm.heads]);
    }
    expect(families.size).toBe(44);
    expect(Object.fromEntries(['llama-3.1-8b-shaped.gguf', 'gpt-oss-moe.gguf', 'mamba2-dense.gguf', 'lfm2-dense.gguf', 'qwen35moe-moe.gguf'].map((m) => [m, families.get(m)]))).toEqual({
      'llama-3.1-8b-shaped.gguf': 'transformer', 'gpt-oss-moe.gguf': 'mixture-of-experts', 'mamba2-dense.gguf': 'recurrent', 'lfm2-dense.gguf': 'hybrid', 'qwen35moe-moe.gguf': 'hybrid',
    });
  }, 60_000);

  it('Llama 3.1 8B\'s header: 32 heads sharing 8 KV heads of 128, its rope', () => {
    const path = join(dir, 'llama-3.1-8b-shaped.gguf');
    const file = openGguf(path);
    opened.push(file);
    const meta = (key: string) => file.metadata.getNumber(key);
    const h = file.hyperparameters();
    expect(h).toMatchObject({ family: 'transformer', blockCount: 32, embeddingLength: 4096, headCount: 32, headCountKv: 8, keyLength: 128, valueLength: 128, contextLength: 131072 });
    expect(h.rope?.freqBase).toBe(meta('llama.rope.freq_base') ?? 10000);
  });
});
