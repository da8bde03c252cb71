import { GgufError } from '../errors.js';
import { ARCHITECTURES, type ArchitectureRule } from './architectures.js';
import type { GgufMetadata } from './metadata.js';

/**
 * The typed hyperparameters of a model: the values llama.cpp's llama_model::load_hparams settles
 * on after loading (its defaults filled in), by architecture family. One reader: the memory
 * estimate's model shape reads its basic values from here.
 */

/**
 * 'transformer': attention (and a dense FFN) in every block; 'mixture-of-experts': the same with
 * routed experts; 'recurrent': recurrent state only (Mamba, RWKV); 'hybrid': attention in some
 * blocks and recurrent state in others (Jamba, LFM2, Qwen3-Next, ...), with or without experts.
 * The family follows the memory llama.cpp builds for the architecture; for one it does not know,
 * the keys the file has.
 */
export type HyperparameterFamily = 'transformer' | 'mixture-of-experts' | 'recurrent' | 'hybrid';

/** One number for every block, or one per block (an array of `blockCount` numbers), as the file gives it. */
export type PerBlock = number | readonly number[];

export interface RopeScaling {
  /** rope.scaling.type; 'linear' when absent (llama.cpp's default: with factor 1, no scaling). */
  readonly type: 'none' | 'linear' | 'yarn' | 'longrope';
  /** rope.scaling.factor (or the older rope.scale_linear); 1 when absent or 0. */
  readonly factor: number;
  /** rope.scaling.original_context_length; the context length when absent (llama.cpp's n_ctx_orig_yarn). */
  readonly originalContextLength: number | undefined;
  /** rope.scaling.attn_factor, 1 when absent. */
  readonly attentionFactor: number;
  readonly finetuned: boolean;
}

export interface RopeHyperparameters {
  /** rope.dimension_count (n_rot); the key length when absent. */
  readonly dimensionCount: number;
  /** rope.freq_base; 10000 when absent. */
  readonly freqBase: number;
  readonly scaling: RopeScaling;
}

export interface SlidingWindowHyperparameters {
  /** attention.sliding_window (n_swa), or the architecture's default window. */
  readonly size: number;
  /**
   * attention.sliding_window_pattern as the file gives it, or the architecture's default: a
   * period n (block il slides when il % n < n - 1, or il % n != 0 where the architecture starts
   * with a dense block; 0: every block) or one flag per block.
   */
  readonly pattern: number | readonly boolean[];
  /** Which blocks slide (llama.cpp's is_swa), one flag per block. */
  readonly blocks: readonly boolean[];
  /** Head sizes and rope dimensions of the sliding blocks (the *_swa keys, else the full blocks'). */
  readonly keyLength: number;
  readonly valueLength: number;
  readonly ropeDimensionCount: number;
}

export interface ExpertHyperparameters {
  /** expert_count (n_expert). */
  readonly count: number;
  /** expert_used_count: experts routed per token. */
  readonly used: PerBlock;
  /** expert_shared_count; 0 when absent. */
  readonly shared: number;
  /** expert_feed_forward_length; undefined when absent. */
  readonly feedForwardLength: PerBlock | undefined;
  /** expert_shared_feed_forward_length; undefined when absent. */
  readonly sharedFeedForwardLength: number | undefined;
}

/** A Mamba-style selective state space (ssm.*; zeros for keys the file does not give). */
export interface SsmHyperparameters {
  readonly convKernel: number;
  readonly innerSize: number;
  readonly stateSize: number;
  readonly timeStepRank: number;
  readonly groupCount: number;
}

/** RWKV's WKV (wkv.head_size, token_shift_count: 2 when absent). */
export interface WkvHyperparameters {
  readonly headSize: number;
  readonly tokenShiftCount: number;
}

/**
 * Per sequence and recurrent block, in f32 elements: llama.cpp's n_embd_r (the rolling
 * convolution or token-shift rows) and n_embd_s (the SSM, WKV, delta-net or linear-attention state).
 */
export interface RecurrentStateSize {
  readonly convolution: number;
  readonly state: number;
}

interface CommonHyperparameters {
  /** general.architecture. */
  readonly architecture: string;
  readonly family: HyperparameterFamily;
  /** context_length (n_ctx_train); undefined when absent (llama.cpp would not load the file). */
  readonly contextLength: number | undefined;
  readonly embeddingLength: number;
  /** block_count, appended NextN blocks included (1 to 512, as llama.cpp takes). */
  readonly blockCount: number;
  /** The tokenizer's token count, else `<arch>.vocab_size`; undefined without either. */
  readonly vocabularySize: number | undefined;
  /** feed_forward_length; undefined when absent. */
  readonly feedForwardLength: PerBlock | undefined;
  /**
   * attention.head_count and head_count_kv (which defaults to head_count), 0 when absent: llama.cpp
   * reads them for every architecture (a Mamba or RWKV file says 0).
   */
  readonly headCount: PerBlock;
  readonly headCountKv: PerBlock;
  /**
   * attention.key_length and value_length (n_embd_head_k/v), defaulting to embedding_length over
   * the first block's heads; 0 when that block has none.
   */
  readonly keyLength: number;
  readonly valueLength: number;
  /** attention.layer_norm_rms_epsilon and attention.layer_norm_epsilon; undefined when absent. */
  readonly rmsNormEpsilon: number | undefined;
  readonly layerNormEpsilon: number | undefined;
}

interface AttentionHyperparameters {
  /** Rotary positions; undefined for an architecture without them (ALiBi, learned positions, none). */
  readonly rope: RopeHyperparameters | undefined;
  /** Sliding-window attention; undefined where the model has none. */
  readonly slidingWindow: SlidingWindowHyperparameters | undefined;
}

interface NoAttention {
  readonly rope: undefined;
  readonly slidingWindow: undefined;
}

interface RecurrentHyperparametersPart {
  /** ssm.* (Mamba, Mamba 2 and the hybrids built on them, gated delta nets); undefined without. */
  readonly ssm: SsmHyperparameters | undefined;
  /** wkv.* (RWKV); undefined without. */
  readonly wkv: WkvHyperparameters | undefined;
  /** shortconv.l_cache (LFM2's short convolution); undefined without. */
  readonly shortConvolution: { readonly cacheLength: number } | undefined;
  readonly recurrentState: RecurrentStateSize;
}

interface NoRecurrence {
  readonly ssm: undefined;
  readonly wkv: undefined;
  readonly shortConvolution: undefined;
  readonly recurrentState: undefined;
}

export interface TransformerHyperparameters extends CommonHyperparameters, AttentionHyperparameters, NoRecurrence {
  readonly family: 'transformer';
  readonly experts: undefined;
}

export interface MixtureOfExpertsHyperparameters extends CommonHyperparameters, AttentionHyperparameters, NoRecurrence {
  readonly family: 'mixture-of-experts';
  readonly experts: ExpertHyperparameters;
}

export interface RecurrentHyperparameters extends CommonHyperparameters, NoAttention, RecurrentHyperparametersPart {
  readonly family: 'recurrent';
  readonly experts: undefined;
}

export interface HybridHyperparameters extends CommonHyperparameters, AttentionHyperparameters, RecurrentHyperparametersPart {
  readonly family: 'hybrid';
  /** Routed experts, where the hybrid has them (Jamba, Qwen3-Next, Nemotron-H MoE, ...). */
  readonly experts: ExpertHyperparameters | undefined;
}

/** `file.hyperparameters()`: narrow on `family` to reach a family's fields. */
export type ModelHyperparameters = TransformerHyperparameters | MixtureOfExpertsHyperparameters | RecurrentHyperparameters | HybridHyperparameters;

/** llama.cpp's LLAMA_MAX_LAYERS and LLAMA_MAX_EXPERTS. */
const MAX_BLOCKS = 512;
const MAX_EXPERTS = 1024;

function bad(message: string): GgufError {
  return new GgufError('BAD_HYPERPARAMETER', message, 0);
}

/** The block's value of a PerBlock (0 past an array's end). */
export function blockValue(value: PerBlock, block: number): number {
  return typeof value === 'number' ? value : (value[block] ?? 0);
}

/** The largest value of a PerBlock. */
export function largestOf(value: PerBlock): number {
  if (typeof value === 'number') return value;
  let max = 0;
  for (const v of value) if (v > max) max = v;
  return max;
}

/** Reads a header's values under `<arch>.`, checked: BAD_HYPERPARAMETER names the key. */
class Reader {
  constructor(
    private readonly meta: GgufMetadata,
    readonly arch: string,
  ) {}

  key(name: string): string {
    return `${this.arch}.${name}`;
  }

  has(name: string): boolean {
    return this.meta.has(this.key(name));
  }

  length(name: string): number {
    return this.meta.info(this.key(name))?.length ?? 0;
  }

  isArray(name: string): boolean {
    return this.meta.info(this.key(name))?.arrayType !== undefined;
  }

  private scalar(name: string): number | undefined {
    const key = this.key(name);
    const info = this.meta.info(key);
    if (info === undefined) return undefined;
    if (info.arrayType !== undefined) throw bad(`${key} is an array, not one number`);
    const value = this.meta.get(key);
    if (typeof value === 'number') return value;
    if (typeof value === 'bigint') return Number(value);
    throw bad(`${key} is ${info.type}, not a number`);
  }

  /** A size or count: a safe non-negative integer. */
  count(name: string): number | undefined {
    const value = this.scalar(name);
    if (value !== undefined) checkCount(this.key(name), value);
    return value;
  }

  required(name: string): number {
    const value = this.count(name);
    if (value === undefined) throw bad(`${this.key(name)} is missing: llama.cpp needs it`);
    return value;
  }

  /** A finite real number (an epsilon, a base, a factor). */
  real(name: string): number | undefined {
    const value = this.scalar(name);
    if (value !== undefined && !Number.isFinite(value)) throw bad(`${this.key(name)} is ${value}, not a finite number`);
    return value;
  }

  flag(name: string): boolean | undefined {
    const key = this.key(name);
    const value = this.meta.get(key);
    if (value === undefined || typeof value === 'boolean') return value;
    throw bad(`${key} is ${this.meta.info(key)!.type}, not a boolean`);
  }

  string(name: string): string | undefined {
    const key = this.key(name);
    if (!this.meta.has(key)) return undefined;
    if (this.meta.type(key) !== 'STRING') throw bad(`${key} is ${this.meta.info(key)!.type}, not a string`);
    return this.meta.getString(key);
  }

  /** The elements of a numeric or boolean array (booleans as 0 and 1). */
  numbers(name: string): number[] {
    const key = this.key(name);
    const info = this.meta.info(key)!;
    if (info.arrayType === 'STRING' || info.arrayType === 'ARRAY') throw bad(`${key} is an array of ${info.arrayType}, not of numbers`);
    return Array.from(this.meta.get(key) as ArrayLike<number | bigint | boolean>, (v) => Number(v));
  }

  /**
   * One number or one per block (llama.cpp's get_key_or_arr): an array must have exactly
   * `blocks` elements, as llama.cpp refuses others ("wrong array length").
   */
  perBlock(name: string, blocks: number): PerBlock | undefined {
    if (!this.isArray(name)) return this.count(name);
    const key = this.key(name);
    // the length first: a hostile array is refused before it is decoded
    const length = this.meta.info(key)!.length!;
    if (length !== blocks) throw bad(`${key} has wrong array length: ${length} values for ${blocks} blocks (llama.cpp refuses it)`);
    const values = this.numbers(name);
    values.forEach((v, i) => checkCount(`${key}[${i}]`, v));
    return Object.freeze(values);
  }
}

function checkCount(key: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw bad(`${key} is ${value}, not a size`);
}

// Architectures whose rope must span the whole key head ("invalid n_rot" otherwise).
const ROPE_WHOLE_HEAD = ['llama', 'deci', 'falcon', 'llama-embed'];

const SCALING_TYPES = ['none', 'linear', 'yarn', 'longrope'] as const;

/** The architecture's rule where the estimate knows it (its memory kind, sliding-window and rope rules). */
function ruleOf(arch: string): ArchitectureRule | undefined {
  return Object.hasOwn(ARCHITECTURES, arch) ? ARCHITECTURES[arch] : undefined;
}

/**
 * The typed hyperparameters of the header (see ModelHyperparameters). BAD_HYPERPARAMETER, naming
 * the key, for a missing general.architecture, block_count or embedding_length, a value of the
 * wrong type, a size that is no size, a per-block array of the wrong length, an unknown rope
 * scaling type, or experts out of llama.cpp's limits.
 */
export function readHyperparameters(meta: GgufMetadata): ModelHyperparameters {
  if (meta.type('general.architecture') !== 'STRING') throw bad('general.architecture is missing or not a string');
  const arch = meta.getString('general.architecture')!;
  const r = new Reader(meta, arch);
  const rule = ruleOf(arch);

  const blockCount = r.required('block_count');
  if (blockCount < 1 || blockCount > MAX_BLOCKS) throw bad(`${r.key('block_count')} is ${blockCount}: llama.cpp takes 1 to ${MAX_BLOCKS} blocks`);
  const embeddingLength = r.required('embedding_length');
  const contextLength = r.count('context_length');
  const tokens = meta.info('tokenizer.ggml.tokens');
  const vocabularySize = tokens?.arrayType !== undefined ? tokens.length : r.count('vocab_size');
  const feedForwardLength = r.perBlock('feed_forward_length', blockCount);
  const headCount = r.perBlock('attention.head_count', blockCount) ?? 0;
  const headCountKv = r.perBlock('attention.head_count_kv', blockCount) ?? headCount;

  // Head sizes and n_rot from the first block's heads (llama_model_base::load_hparams).
  const heads0 = blockValue(headCount, 0);
  const defaultHead = heads0 > 0 ? Math.floor(embeddingLength / heads0) : 0;
  const keyLength = r.count('attention.key_length') ?? defaultHead;
  const valueLength = r.count('attention.value_length') ?? defaultHead;
  const ropeDimensionCount = r.count('rope.dimension_count') ?? keyLength;
  if (ROPE_WHOLE_HEAD.includes(arch) && heads0 > 0 && ropeDimensionCount !== keyLength) {
    throw bad(`${r.key('rope.dimension_count')} is ${ropeDimensionCount}: llama.cpp takes only the head size (${keyLength}) for ${arch}`);
  }

  // Rope scaling: read (and checked) for every architecture, as llama.cpp does.
  const scalingType = r.string('rope.scaling.type') ?? 'linear';
  if (!(SCALING_TYPES as readonly string[]).includes(scalingType)) throw bad(`${r.key('rope.scaling.type')} is '${scalingType}', not one of ${SCALING_TYPES.join(', ')}`);
  const factor = r.has('rope.scaling.factor') ? r.real('rope.scaling.factor')! : (r.real('rope.scale_linear') ?? 0);
  const rope: RopeHyperparameters = Object.freeze({
    dimensionCount: ropeDimensionCount,
    freqBase: r.real('rope.freq_base') ?? 10000,
    scaling: Object.freeze({
      type: scalingType as RopeScaling['type'],
      factor: factor === 0 ? 1 : factor,
      originalContextLength: r.count('rope.scaling.original_context_length') ?? contextLength,
      attentionFactor: r.real('rope.scaling.attn_factor') ?? 1,
      finetuned: r.flag('rope.scaling.finetuned') ?? false,
    }),
  });
  const hasRope = rule === undefined || (rule.noRope !== true && (rule.ropeOnlyWithLayers === undefined || rule.ropeOnlyWithLayers === blockCount));

  const slidingWindow = readSlidingWindow(r, rule, blockCount, keyLength, valueLength, ropeDimensionCount);

  // Experts (llama.cpp's limits; Hunyuan dense counts one expert as none).
  let expertCount = r.count('expert_count') ?? 0;
  if ((arch === 'hunyuan-dense' || arch === 'hunyuan_vl') && expertCount <= 1) expertCount = 0;
  if (expertCount > MAX_EXPERTS) throw bad(`${r.key('expert_count')} is ${expertCount}: llama.cpp takes at most ${MAX_EXPERTS} experts`);
  let experts: ExpertHyperparameters | undefined;
  if (expertCount > 0) {
    const used = r.perBlock('expert_used_count', blockCount) ?? 0;
    const usedMax = largestOf(used);
    if (usedMax < 1 || usedMax > expertCount) throw bad(`${r.key('expert_used_count')} is ${usedMax} of ${expertCount} experts: llama.cpp takes 1 to the expert count`);
    experts = Object.freeze({
      count: expertCount,
      used,
      shared: r.count('expert_shared_count') ?? 0,
      feedForwardLength: r.perBlock('expert_feed_forward_length', blockCount),
      sharedFeedForwardLength: r.count('expert_shared_feed_forward_length'),
    });
  }

  const common = {
    architecture: arch,
    contextLength,
    embeddingLength,
    blockCount,
    vocabularySize,
    feedForwardLength,
    headCount,
    headCountKv,
    keyLength,
    valueLength,
    rmsNormEpsilon: r.real('attention.layer_norm_rms_epsilon'),
    layerNormEpsilon: r.real('attention.layer_norm_epsilon'),
  };

  const recurrentKeys = ['ssm.conv_kernel', 'ssm.inner_size', 'ssm.state_size', 'wkv.head_size', 'shortconv.l_cache', 'kda.head_dim'];
  const memory = rule?.memory ?? (recurrentKeys.some((k) => (r.count(k) ?? 0) > 0) ? (heads0 > 0 || largestOf(headCount) > 0 ? 'hybrid' : 'recurrent') : 'kv');
  if (memory === 'recurrent' || memory === 'hybrid') {
    const recurrent = readRecurrent(r, arch, embeddingLength, heads0, keyLength);
    if (memory === 'recurrent') {
      return Object.freeze({ ...common, family: 'recurrent', rope: undefined, slidingWindow: undefined, experts: undefined, ...recurrent });
    }
    return Object.freeze({ ...common, family: 'hybrid', rope: hasRope ? rope : undefined, slidingWindow, experts, ...recurrent });
  }
  const attention = { rope: hasRope ? rope : undefined, slidingWindow, ssm: undefined, wkv: undefined, shortConvolution: undefined, recurrentState: undefined };
  if (experts !== undefined) return Object.freeze({ ...common, ...attention, family: 'mixture-of-experts', experts });
  return Object.freeze({ ...common, ...attention, family: 'transformer', experts: undefined });
}

/** Which blocks slide and by how much, as each architecture's load_arch_hparams decides. */
function readSlidingWindow(
  r: Reader,
  rule: ArchitectureRule | undefined,
  blockCount: number,
  keyLength: number,
  valueLength: number,
  ropeDimensionCount: number,
): SlidingWindowHyperparameters | undefined {
  const patternKey = 'attention.sliding_window_pattern';
  const size = r.count('attention.sliding_window') ?? rule?.swaDefaultWindow ?? 0;
  // An architecture the estimate does not know slides only where the file says which blocks do.
  const kind = rule === undefined ? (r.has(patternKey) ? (r.isArray(patternKey) ? 'array' : 0) : undefined) : rule.swa;
  if (kind === undefined || size === 0) return undefined;
  if (rule?.swaOnlyWithLayers !== undefined && blockCount !== rule.swaOnlyWithLayers) return undefined;
  if (kind === 'array' && !r.isArray(patternKey)) return undefined;
  let pattern: number | readonly boolean[];
  let blocks: boolean[];
  if (r.isArray(patternKey)) {
    const length = r.length(patternKey);
    if (length > MAX_BLOCKS) throw bad(`${r.key(patternKey)} has ${length} values: llama.cpp takes at most ${MAX_BLOCKS}`);
    const flags = r.numbers(patternKey);
    pattern = Object.freeze(flags.map((v) => v !== 0));
    // blocks past the array's end are dense, as llama.cpp's zero-filled is_swa
    blocks = Array.from({ length: blockCount }, (_, il) => (flags[il] ?? 0) !== 0);
  } else {
    const period = r.count(patternKey) ?? (typeof kind === 'number' ? kind : 0);
    pattern = period;
    blocks = Array.from({ length: blockCount }, (_, il) => {
      if (period === 0) return true;
      return rule?.swaDenseFirst === true ? il % period !== 0 : il % period < period - 1;
    });
  }
  // LFM2 slides every attention block whatever the pattern says
  if (kind === 'all') blocks = blocks.map(() => true);
  return Object.freeze({
    size,
    pattern,
    blocks: Object.freeze(blocks),
    keyLength: r.count('attention.key_length_swa') ?? keyLength,
    valueLength: r.count('attention.value_length_swa') ?? valueLength,
    ropeDimensionCount: r.count('rope.dimension_count_swa') ?? ropeDimensionCount,
  });
}

/** The recurrent parts and llama.cpp's n_embd_r / n_embd_s (llama_hparams). */
function readRecurrent(r: Reader, arch: string, embeddingLength: number, heads0: number, keyLength: number): RecurrentHyperparametersPart {
  const convKernel = r.count('ssm.conv_kernel') ?? 0;
  const innerSize = r.count('ssm.inner_size') ?? 0;
  const stateSize = r.count('ssm.state_size') ?? 0;
  const timeStepRank = r.count('ssm.time_step_rank') ?? 0;
  const groupCount = r.count('ssm.group_count') ?? 0;
  const wkvHead = r.count('wkv.head_size') ?? 0;
  const tokenShiftCount = r.count('token_shift_count') ?? 2;
  const shortConv = r.count('shortconv.l_cache') ?? 0;
  const kdaHead = r.count('kda.head_dim') ?? 0;
  // MiniMax-01's lightning attention keeps key_length squared per head
  const laHead = arch === 'minimax-01' ? keyLength : 0;
  let convolution: number;
  let state: number;
  if (wkvHead !== 0) convolution = tokenShiftCount * embeddingLength;
  else if (shortConv !== 0) convolution = embeddingLength * (shortConv - 1);
  else if (kdaHead !== 0) convolution = 3 * (convKernel > 0 ? convKernel - 1 : 3) * heads0 * kdaHead;
  else convolution = (convKernel > 0 ? convKernel - 1 : 0) * (innerSize + 2 * groupCount * stateSize);
  if (wkvHead !== 0) state = embeddingLength * wkvHead;
  else if (kdaHead !== 0) state = kdaHead * kdaHead * heads0;
  else if (laHead !== 0) state = laHead * laHead * heads0;
  else state = stateSize * innerSize;
  const anySsm = convKernel + innerSize + stateSize + timeStepRank + groupCount > 0;
  return {
    ssm: anySsm ? Object.freeze({ convKernel, innerSize, stateSize, timeStepRank, groupCount }) : undefined,
    wkv: wkvHead > 0 ? Object.freeze({ headSize: wkvHead, tokenShiftCount }) : undefined,
    shortConvolution: shortConv > 0 ? Object.freeze({ cacheLength: shortConv }) : undefined,
    recurrentState: Object.freeze({ convolution, state }),
  };
}
