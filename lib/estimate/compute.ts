import { GgufError } from '../errors.js';
import type { LayerShape, ModelShape } from './model-shape.js';
import type { ReserveShape } from './reserve-shape.js';
import { transformerGraph } from './transformer-graph.js';
import type { ResolvedOptions } from './options.js';
import type { KvCacheEstimate } from './context-geometry.js';
import { mlaDecompressedModelled, mlaModelled } from './mla-graph.js';
import { estimateFromMoments } from './compute-moments.js';
import { hadamardSide } from './hadamard.js';

/**
 * The compute (scratch) buffer llama.cpp reserves: ggml's graph allocator replayed
 * (graph-allocator.ts) over the worst-case graph as llama.cpp builds it (transformer-graph.ts and
 * the mixers it dispatches to); architectures whose graph is not written out yet go by their
 * largest moments (compute-moments.ts).
 */
export function estimateCompute(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate, cache?: Map<string, number>): number {
  const bytes = graphModelled(shape) ? replayed(shape, reserveShape(shape, options, kv), cache) : estimateFromMoments(shape, options, kv);
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new GgufError('BAD_HYPERPARAMETER', `${shape.architecture}: the header's sizes give no compute buffer (${bytes})`, 0);
  return bytes;
}

/**
 * The replayed graph's buffer; with `cache`, once per reserve shape (the graph is a function of
 * it: contexts padded alike, or past where the graph stops growing, share one replay).
 */
function replayed(shape: ModelShape, r: ReserveShape, cache: Map<string, number> | undefined): number {
  const key = cache === undefined ? '' : JSON.stringify(r);
  const known = cache?.get(key);
  if (known !== undefined) return known;
  const bytes = replayRepeating(shape, r) ?? transformerGraph(shape, r).allocate();
  cache?.set(key, bytes);
  return bytes;
}

/** Copies of a run of identical layers first replayed, to find where the state repeats. */
const FIRST_COPIES = 10;

/** A run of identical layers in the trunk: where it starts and how many layers it has. */
interface Run {
  readonly start: number;
  readonly length: number;
}

/**
 * The buffer of a graph whose trunk has long runs of identical layers (a 512-block MiniMax-M3 at
 * 256 sequences is millions of tensors), replayed with a few copies of each run; undefined where
 * that is not shown to be the whole graph's buffer. ggml's allocator is deterministic: when the
 * state at the start of copy c (free blocks, tensors held, readers left; named relative to the
 * copy) is the state at the start of copy c + p, copies c to c + p - 1 run again, placement for
 * placement, as long as later copies read what the copies share. So the copies left out, a
 * multiple of p, add nothing, and the rest runs as it would after them. Each run keeps as many
 * copies as it has, modulo p, and its repeat is checked in the replay that counts; a run whose
 * state does not repeat within the copies sends the whole graph to be replayed. A run's layers
 * are equal in all the graph builders read of them (the LayerShape, and whether the layer is a
 * leading dense one, which decides its rope); the trunk's last layer (which keeps the output rows
 * only) is in no run.
 */
function replayRepeating(shape: ModelShape, r: ReserveShape): number | undefined {
  const trunk = shape.layers.slice(0, shape.layers.length - shape.nextnLayers);
  const same = (l: LayerShape) => JSON.stringify({ ...l, index: 0, leadingDense: l.index < shape.leadingDenseBlocks });
  const runs: Run[] = [];
  for (let start = 0; start < trunk.length - 1; ) {
    let end = start + 1;
    const key = same(trunk[start]!);
    while (end < trunk.length - 1 && same(trunk[end]!) === key) end++;
    if (end - start > FIRST_COPIES) runs.push({ start, length: end - start });
    start = end;
  }
  if (runs.length === 0) return undefined;

  // replays with `copies[i]` copies of run i; per run, its first (copy, period) whose states repeat
  const replay = (copies: readonly number[]) => {
    const kept: LayerShape[] = [];
    const firsts: number[] = [];
    let at = 0;
    runs.forEach((run, i) => {
      kept.push(...trunk.slice(at, run.start));
      firsts.push(kept.length);
      kept.push(...trunk.slice(run.start, run.start + copies[i]!));
      at = run.start + run.length;
    });
    kept.push(...trunk.slice(at));
    const g = transformerGraph({ ...shape, layers: [...kept, ...shape.layers.slice(trunk.length)] }, r);
    if (g.marks.length !== kept.length) return undefined;
    const checkpoints = runs.flatMap((_, i) => Array.from({ length: copies[i]! }, (_, c) => ({
      node: g.marks[firsts[i]! + c]!.node,
      idBase: g.marks[firsts[i]! + c]!.id,
      sharedBelow: g.marks[firsts[i]!]!.id,
    })));
    const states: string[] = [];
    const bytes = g.allocate(undefined, checkpoints, (k, state) => void (states[k] = state));
    let offset = 0;
    const repeats = runs.map((_, i) => {
      const base = offset;
      const state = (c: number) => states[base + c];
      const n = copies[i]!;
      offset += n;
      // a copy after c + p must read what the copies share: c + p <= n - 1
      for (let p = 1; p < n; p++) {
        for (let c = 0; c + p < n; c++) if (state(c) !== undefined && state(c) === state(c + p)) return { c, p };
      }
      return undefined;
    });
    return { bytes, repeats };
  };

  const first = replay(runs.map(() => FIRST_COPIES));
  if (first === undefined || first.repeats.some((x) => x === undefined)) return undefined;
  // as many copies as the run has, modulo its period
  const copies = runs.map((run, i) => FIRST_COPIES + ((run.length - FIRST_COPIES) % first.repeats[i]!.p));
  if (copies.every((n) => n === FIRST_COPIES)) return first.bytes;
  const second = replay(copies);
  if (second === undefined) return undefined;
  const shown = runs.every((run, i) => {
    const again = second.repeats[i];
    return again !== undefined && (run.length - copies[i]!) % again.p === 0;
  });
  return shown ? second.bytes : undefined;
}

/**
 * Whether the compute buffer is replayed: every attention-cache architecture but those with a
 * sparse indexer or MLA outside the checked ones (mla-graph.ts, msa-graph.ts say which), the
 * recurrent and hybrid ones whose mixer is written out (architectures.ts `mixer`), and diffusion
 * decoders. An attention architecture goes through the generic decoder graph even where
 * llama.cpp's differs in ways not modelled (T5's encoder-decoder, Grok, Arctic, Gemma 3n's
 * shared-KV layers): unchecked. The rest (RWKV, encoders, PLaMo 2, Qwen4-exp, Kimi Linear/K3,
 * Bailing 3, Falcon-H1, MiniMax-01, Hunyuan v4, DeepSeek 4) go by the largest moments (compute-moments.ts).
 */
export function graphModelled(shape: ModelShape): boolean {
  // MLA (the latent cache, with or without a DSA indexer, or its weights over a plain cache) and MiniMax-M3's MSA
  if (shape.rule.memory === 'kv' && (mlaModelled(shape) || mlaDecompressedModelled(shape))) return true;
  if (shape.rule.memory === 'kv' && shape.architecture === 'minimax-m3') return true;
  if (shape.rule.indexer !== undefined || shape.kvLoraRank > 0 || shape.latentWidth > 0) return false;
  return shape.rule.memory === 'kv' || shape.rule.mixer !== undefined || shape.rule.diffusion === true;
}


const QUANTIZED_CACHE = new Set(['q8_0', 'q4_0', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1']);

/** The worst-case ubatch llama.cpp reserves its graph for, in the terms transformer-graph needs. */
export function reserveShape(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): ReserveShape {
  // with sliding-window layers their cache takes its rotation from the full-context cache's layers
  const withKv = shape.layers.filter((l) => l.attention && l.headCountKv > 0);
  const attention = withKv.some((l) => l.slidingWindow) ? withKv.filter((l) => !l.slidingWindow) : withKv;
  // one head size across the cache's layers, a multiple of 64: a quantized cache is rotated
  const sameHead = (width: (l: LayerShape) => number): number => {
    const sizes = new Set(attention.map((l) => width(l) / l.headCountKv));
    const [size] = sizes;
    return sizes.size === 1 && size !== undefined && size > 0 && size % 64 === 0 ? size : 0;
  };
  const headK = QUANTIZED_CACHE.has(options.typeK) ? sameHead((l) => l.kWidth) : 0;
  const headV = QUANTIZED_CACHE.has(options.typeV) ? sameHead((l) => l.vWidth) : 0;
  const kRotation = headK > 0 ? hadamardSide(headK) : 0;
  // min(n_ctx as asked, n_ubatch), rounded up to a multiple of the sequences; outputs: one per token asked
  const outputs = Math.min(options.ubatchSize, options.contextSize);
  return {
    tokens: Math.ceil(outputs / options.sequences) * options.sequences,
    outputs,
    streams: options.unifiedKv ? 1 : options.sequences,
    sequences: options.sequences,
    fullCells: kv.cells,
    swaCells: kv.swaCells,
    flash: options.flashAttention && !shape.attentionSoftcap,
    kF32: options.typeK === 'f32',
    vF32: options.typeV === 'f32',
    typeK: options.typeK,
    typeV: options.typeV,
    kRotation,
    vRotation: headV > 0 ? 64 : 0,
  };
}
