import { GgufError } from '../errors.js';
import type { GgufFile } from '../file/gguf-file.js';
import { ARCHITECTURES, UNMODELLED, type ArchitectureRule } from './architectures.js';

/** One layer as the memory estimate sees it. */
export interface LayerShape {
  readonly index: number;
  /** Has an attention KV cache. */
  readonly attention: boolean;
  /** Has recurrent state. */
  readonly recurrent: boolean;
  readonly slidingWindow: boolean;
  readonly headCount: number;
  readonly headCountKv: number;
  /** K and V row widths in elements (n_embd_k_gqa, n_embd_v_gqa; also for layers without a cache); V is 0 for MLA caches. */
  readonly kWidth: number;
  readonly vWidth: number;
  /** Width of the sparse-attention indexer key kept per token (0: none). */
  readonly indexerWidth: number;
  /** Routes to experts (has ffn_gate_inp). */
  readonly experts: boolean;
  /** Has a feed-forward block (dense or experts). */
  readonly ffn: boolean;
  /** attn_q is twice the queries' width: the queries and an output gate (Qwen 3.5, Qwen3-Next). */
  readonly gatedQuery: boolean;
  /** An attention layer's sigmoid output gate from its own projection (attn_gate rows; 0: none). */
  readonly outputGateWidth: number;
  /** Attention reads a second norm of the layer's input (attn_norm_2, Falcon 40B); the FFN the first. */
  readonly secondNorm: boolean;
}

/** A Mamba-2 style SSM's sizes (llama_hparams ssm_*; zeros without one). */
export interface SsmShape {
  readonly convKernel: number;
  readonly inner: number;
  readonly state: number;
  readonly groups: number;
  /** dt rank: the SSM's heads. */
  readonly heads: number;
  /** Rows of ssm_in (z, xBC and dt together). */
  readonly inputWidth: number;
  /** A grouped RMS norm before the output projection (ssm_norm). */
  readonly norm: boolean;
  /** Mamba 1: dt, B and C are RMS-normed (ssm.dt_b_c_rms or the three norm tensors). */
  readonly dtBcNorm: boolean;
}

/** The hyperparameters a memory estimate needs, read from the header alone. */
export interface ModelShape {
  readonly architecture: string;
  readonly rule: ArchitectureRule;
  readonly layerCount: number;
  /** Appended NextN (multi-token prediction) blocks: in the file, not in the graph llama.cpp reserves. */
  readonly nextnLayers: number;
  /** Blocks before the first mixture-of-experts block (leading_dense_block_count). */
  readonly leadingDenseBlocks: number;
  readonly embeddingLength: number;
  readonly vocabularySize: number;
  readonly trainedContext: number | undefined;
  readonly feedForwardMax: number;
  /**
   * The dense FFN: 'gated' (SwiGLU/GeGLU: gate and up, then their product), 'fused' (one up
   * projection twice as wide, split into gate and up: Phi-3) or 'plain' (up, then an activation in place).
   */
  readonly ffnKind: 'gated' | 'fused' | 'plain';
  /** Q, K and V come from one fused projection (attn_qkv), viewed three ways. */
  readonly fusedQkv: boolean;
  /** Learned absolute positions (position_embd) added to the embeddings. */
  readonly learnedPositions: boolean;
  readonly slidingWindow: number;
  readonly layers: readonly LayerShape[];
  /** Recurrent state per sequence and layer, in f32 elements: conv (r) and SSM/WKV (s) rows. */
  readonly recurrentR: number;
  readonly recurrentS: number;
  readonly expertCount: number;
  readonly expertUsedCount: number;
  readonly expertFeedForward: number;
  /** The experts' gate and up are one tensor (ffn_gate_up_exps), split by views. */
  readonly fusedExpertGateUp: boolean;
  /** Width of the shared expert beside the routed ones (ffn_up_shexp rows; 0 without one). */
  readonly sharedExpertFeedForward: number;
  /** The shared expert's output is scaled by its own sigmoid gate (ffn_gate_inp_shexp). */
  readonly sharedExpertGated: boolean;
  /** Sparse-attention indexer heads and key length (0 without an indexer). */
  readonly indexerHeads: number;
  readonly indexerKeyLength: number;
  /** Cells (DSA) or position blocks (MSA) the indexer keeps per query (attention.indexer.top_k). */
  readonly indexerTopK: number;
  /** Per layer, DeepSeek 4's key compression (attention.compress_ratios: 0 none, 4 CSA, 128 HCA). */
  readonly compressRatios: readonly number[];
  /** MSA's position block (attention.indexer.block_size). */
  readonly indexerBlockSize: number;
  /** Mamba-style SSM: the input projection's width and the inner size (0 otherwise). */
  readonly ssmInputWidth: number;
  readonly ssmInner: number;
  readonly ssm: SsmShape;
  /** LFM2's short convolution: the conv's length (shortconv.l_cache; 0 without). */
  readonly shortConvCache: number;
  /** MLA's latent rank (kv_lora_rank; 0 without MLA caches). */
  readonly kvLoraRank: number;
  /** Width of the MLA latent projection (attn_kv_a_mqa rows; 0 without one). */
  readonly latentWidth: number;
  /** Attention scores are soft-capped, which keeps llama.cpp off flash attention (Grok). */
  readonly attentionSoftcap: boolean;
  /** MLA weights (attn_kv_a_mqa): the sizes its attention graph needs, absorbed into a latent cache or not. */
  readonly mla: MlaShape | undefined;
  /** Experts are chosen on probabilities plus a learned bias (exp_probs_b). */
  readonly expertProbsBias: boolean;
  /** The routing weights are normalised to sum 1 (expert_weights_norm), then scaled (expert_weights_scale, 0 or 1: not). */
  readonly expertWeightsNorm: boolean;
  readonly expertWeightsScale: number;
}

/** Multi-head latent attention (DeepSeek V2/V3 and kin, MiniCPM3). */
export interface MlaShape {
  /** The latent cache (key_length_mla set): attention over it as one KV head; else K and V are decompressed per head into a plain cache. */
  readonly absorbed: boolean;
  /** Latent K/V rank (kv_lora_rank) and the rope part kept beside it per token (rope.dimension_count). */
  readonly kvLoraRank: number;
  readonly rope: number;
  /** Q's own low-rank projection (q_lora_rank; 0: Q projected directly). */
  readonly qLoraRank: number;
  /** Per-head K and V sizes as decompressed (key_length_mla and value_length_mla, or key_length and value_length). */
  readonly headK: number;
  readonly headV: number;
}

type Meta = GgufFile['metadata'];

function numberAt(meta: Meta, key: string, layer: number): number | undefined {
  const value = meta.get(key);
  if (value === undefined) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (ArrayBuffer.isView(value) || Array.isArray(value)) {
    const v = (value as ArrayLike<number | bigint | boolean>)[layer];
    return v === undefined ? undefined : Number(v);
  }
  return undefined;
}

function scalar(meta: Meta, key: string): number | undefined {
  return numberAt(meta, key, 0);
}

function isArray(meta: Meta, key: string): boolean {
  const value = meta.get(key);
  return value !== undefined && (ArrayBuffer.isView(value) || Array.isArray(value));
}

function maxOf(meta: Meta, key: string, layers: number): number {
  let max = 0;
  for (let il = 0; il < layers; il++) max = Math.max(max, numberAt(meta, key, il) ?? 0);
  return max;
}

/** The largest of many numbers (no spread: a file may list a million tensors). */
function largest(values: Iterable<number>): number {
  let max = 0;
  for (const v of values) if (v > max) max = v;
  return max;
}

/** The most rows (ne[1]) of the tensors whose names match. */
function widestRows(file: GgufFile, name: RegExp): number {
  return largest(file.tensors.filter((t) => name.test(t.name)).map((t) => t.shape[1] ?? 0));
}

/** The dense FFN's width as its tensors have it (Qwen's header says twice that); 0 without them. */
function denseFeedForward(file: GgufFile, kind: ModelShape['ffnKind']): number {
  const rowsOf = (name: string) => file.tensors.filter((t) => new RegExp(`^blk\\.\\d+\\.${name}\\.weight$`).test(t.name)).map((t) => t.shape[1] ?? 0);
  const rows = rowsOf(kind === 'gated' ? 'ffn_gate' : 'ffn_up');
  if (rows.length === 0) return 0;
  const widest = largest(rows);
  return kind === 'fused' ? widest / 2 : widest;
}

function ffnKind(file: GgufFile, feedForward: number): ModelShape['ffnKind'] {
  if (file.tensors.some((t) => /^blk\.\d+\.ffn_gate\.weight$/.test(t.name))) return 'gated';
  const up = file.tensors.find((t) => /^blk\.\d+\.ffn_up\.weight$/.test(t.name));
  if (up === undefined) return 'gated';
  return up.shape[1] === 2 * feedForward ? 'fused' : 'plain';
}

/** Reads the model's shape, or UNSUPPORTED_ARCHITECTURE for an architecture llama.cpp v0.5.0 lacks. */
export function readModelShape(file: GgufFile): ModelShape {
  // a header does not change under an open GgufFile: read its shape once
  let shape = shapes.get(file);
  if (shape === undefined) {
    shape = checkShape(readShape(file));
    shapes.set(file, shape);
  }
  return shape;
}

const shapes = new WeakMap<GgufFile, ModelShape>();

/** llama.cpp's LLAMA_MAX_LAYERS and LLAMA_MAX_EXPERTS. */
const MAX_LAYERS = 512;
const MAX_EXPERTS = 1024;

function badHyperparameter(message: string): GgufError {
  return new GgufError('BAD_HYPERPARAMETER', message, 0);
}

/**
 * Every number of the shape a safe non-negative integer, and the experts within llama.cpp's
 * limits: a header from anywhere (a remote one too) cannot make the estimate loop, allocate
 * without bound or answer NaN.
 */
function checkShape(shape: ModelShape): ModelShape {
  const check = (where: string, value: unknown): void => {
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value) || value < 0) throw badHyperparameter(`${shape.architecture}: ${where} is ${value}, not a size`);
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => check(`${where}[${i}]`, v));
    } else if (typeof value === 'object' && value !== null && where !== 'rule') {
      for (const [key, v] of Object.entries(value)) check(where === '' ? key : `${where}.${key}`, v);
    }
  };
  check('', shape);
  if (shape.expertCount > MAX_EXPERTS) throw badHyperparameter(`${shape.architecture}: ${shape.expertCount} experts, llama.cpp takes at most ${MAX_EXPERTS}`);
  if (shape.expertCount > 0 && (shape.expertUsedCount < 1 || shape.expertUsedCount > shape.expertCount)) {
    throw badHyperparameter(`${shape.architecture}: ${shape.expertUsedCount} used experts of ${shape.expertCount}`);
  }
  return shape;
}

function readShape(file: GgufFile): ModelShape {
  const meta = file.metadata;
  const arch = meta.getString('general.architecture');
  if (arch === undefined) throw new GgufError('UNSUPPORTED_ARCHITECTURE', 'the file names no general.architecture', 0);
  const unmodelled = UNMODELLED[arch];
  if (unmodelled !== undefined) throw new GgufError('UNSUPPORTED_ARCHITECTURE', `architecture ${arch}: ${unmodelled}`, 0);
  const rule = ARCHITECTURES[arch];
  if (rule === undefined) throw new GgufError('UNSUPPORTED_ARCHITECTURE', `architecture ${arch} is not one the memory estimate knows (llama.cpp v0.5.0's)`, 0);
  const k = (name: string) => `${arch}.${name}`;

  const layerCount = scalar(meta, k('block_count')) ?? 0;
  // llama.cpp's own limits (llama_model::load_hparams), before anything loops over the blocks
  if (!Number.isSafeInteger(layerCount) || layerCount < 1 || layerCount > MAX_LAYERS) {
    throw badHyperparameter(`${k('block_count')} is ${String(layerCount)}: llama.cpp takes 1 to ${MAX_LAYERS} blocks`);
  }
  const embeddingLength = scalar(meta, k('embedding_length')) ?? 0;
  const tokens = meta.info('tokenizer.ggml.tokens');
  const vocabularySize = tokens?.length ?? scalar(meta, k('vocab_size')) ?? 0;
  const names = new Set(file.tensors.map((t) => t.name));
  const has = (il: number, tensor: string) => names.has(`blk.${il}.${tensor}.weight`);
  const tensorRows = new Map(file.tensors.map((t) => [t.name, t.shape[1] ?? 0] as const));

  // Sliding windows.
  let slidingWindow = scalar(meta, k('attention.sliding_window')) ?? rule.swaDefaultWindow ?? 0;
  const swaKey = k('attention.sliding_window_pattern');
  let swaEnabled = rule.swa !== undefined && slidingWindow > 0;
  if (rule.swaOnlyWithLayers !== undefined && layerCount !== rule.swaOnlyWithLayers) swaEnabled = false;
  if (rule.swa === 'array' && !isArray(meta, swaKey)) swaEnabled = false;
  if (!swaEnabled) slidingWindow = 0;
  const isSwa = (il: number): boolean => {
    if (!swaEnabled) return false;
    if (rule.swa === 'all') return true;
    if (isArray(meta, swaKey)) return (numberAt(meta, swaKey, il) ?? 0) !== 0;
    const period = scalar(meta, swaKey) ?? (rule.swa as number);
    if (period === 0) return true;
    return rule.swaDenseFirst === true ? il % period !== 0 : il % period < period - 1;
  };

  // Recurrent layers, as each hybrid's loader marks them; appended NextN (MTP) layers never are.
  const nextn = scalar(meta, k('nextn_predict_layers')) ?? 0;
  if (!Number.isSafeInteger(nextn) || nextn < 0 || nextn > layerCount) throw badHyperparameter(`${k('nextn_predict_layers')} is ${String(nextn)} of ${layerCount} blocks`);
  const trunkLayers = layerCount - nextn;
  const recurrentKey = k('attention.recurrent_layers');
  const headCountKvAt = (il: number) => numberAt(meta, k('attention.head_count_kv'), il) ?? numberAt(meta, k('attention.head_count'), il) ?? 0;
  const isRecurrent = (il: number): boolean => {
    if (rule.memory === 'recurrent') return true;
    if (rule.memory !== 'hybrid') return false;
    if (rule.allLayersBoth === true) return true;
    if (rule.attentionWhereNoFfn === true) return il < trunkLayers && headCountKvAt(il) === 0 && (numberAt(meta, k('feed_forward_length'), il) ?? 0) === 0;
    if (rule.fullAttentionInterval !== undefined) {
      if (meta.has(recurrentKey)) return (numberAt(meta, recurrentKey, isArray(meta, recurrentKey) ? il : 0) ?? 0) !== 0;
      const interval = scalar(meta, k('full_attention_interval')) ?? rule.fullAttentionInterval;
      return il < trunkLayers && (il + 1) % interval !== 0;
    }
    return headCountKvAt(il) === 0;
  };

  const kvLoraRank = scalar(meta, k('attention.kv_lora_rank')) ?? 0;
  const mla = (scalar(meta, k('attention.key_length_mla')) ?? 0) > 0 && kvLoraRank > 0;
  const sharedKv = scalar(meta, k('attention.shared_kv_layers')) ?? 0;
  const indexerWidthFor = (il: number): number => {
    if (rule.indexer === undefined) return 0;
    const keyLength = scalar(meta, k('attention.indexer.key_length')) ?? 0;
    if (rule.indexer === 'msa') {
      const lead = scalar(meta, k('leading_dense_block_count')) ?? 0;
      return il >= lead ? keyLength : 0;
    }
    const typesKey = k('attention.indexer.types');
    if (rule.indexer === 'dsa' && arch !== 'deepseek32' && meta.has(typesKey)) {
      // a per-layer (or one) indexer type: 1 marks a layer with its own full indexer (DeepSeek 3.2
      // keeps one on every layer whatever the key says)
      if ((numberAt(meta, typesKey, isArray(meta, typesKey) ? il : 0) ?? 0) !== 1) return 0;
    }
    return keyLength;
  };

  const layers: LayerShape[] = [];
  // the sparse-attention caches and the interval hybrids' attention filter leave the NextN layers out
  const trunk = nextn > 0 && (rule.indexer !== undefined || rule.fullAttentionInterval !== undefined) ? trunkLayers : layerCount;
  for (let il = 0; il < layerCount; il++) {
    const headCount = numberAt(meta, k('attention.head_count'), il) ?? 0;
    const headCountKv = numberAt(meta, k('attention.head_count_kv'), il) ?? headCount;
    const recurrent = isRecurrent(il);
    const swa = isSwa(il);
    let attention = rule.memory === 'kv' || (rule.memory === 'hybrid' && (rule.allLayersBoth === true || !recurrent));
    if (rule.attentionWhereNoFfn === true) attention = !recurrent && (numberAt(meta, k('feed_forward_length'), il) ?? 0) === 0;
    if (attention && headCountKv === 0 && !mla) attention = false;
    if (il >= trunk) attention = false;
    if (sharedKv > 0 && il >= layerCount - sharedKv) attention = false;
    if (rule.kvLayersFromStart !== undefined && il >= rule.kvLayersFromStart) attention = false;
    const defaultHead = headCount > 0 ? embeddingLength / headCount : 0;
    let keyLength = (swa ? numberAt(meta, k('attention.key_length_swa'), il) : undefined) ?? numberAt(meta, k('attention.key_length'), il) ?? defaultHead;
    let valueLength = (swa ? numberAt(meta, k('attention.value_length_swa'), il) : undefined) ?? numberAt(meta, k('attention.value_length'), il) ?? defaultHead;
    if (!has(il, 'attn_k') && !has(il, 'attn_qkv') && has(il, 'attn_kv_a_mqa') && !mla) {
      // MLA weights without the absorbed cache (MiniCPM3): K and V per head as usual
      keyLength = numberAt(meta, k('attention.key_length'), il) ?? keyLength;
      valueLength = numberAt(meta, k('attention.value_length'), il) ?? valueLength;
    }
    layers.push({
      index: il,
      attention,
      recurrent: recurrent && rule.memory !== 'kv',
      slidingWindow: swa,
      headCount,
      headCountKv,
      kWidth: headCountKv * keyLength,
      vWidth: mla ? 0 : headCountKv * valueLength,
      indexerWidth: attention ? indexerWidthFor(il) : 0,
      experts: has(il, 'ffn_gate_inp'),
      // a header written without tensors (a shape only) is taken to have every block
      ffn: names.size === 0 || has(il, 'ffn_down') || has(il, 'ffn_down_exps'),
      gatedQuery: (tensorRows.get(`blk.${il}.attn_q.weight`) ?? 0) === 2 * headCount * keyLength && headCount > 0,
      outputGateWidth: attention && !recurrent ? tensorRows.get(`blk.${il}.attn_gate.weight`) ?? 0 : 0,
      secondNorm: has(il, 'attn_norm_2'),
    });
  }

  // Recurrent state widths (llama_hparams::n_embd_r / n_embd_s).
  let recurrentR = 0;
  let recurrentS = 0;
  if (rule.memory === 'recurrent' || rule.memory === 'hybrid') {
    const headCount0 = numberAt(meta, k('attention.head_count'), 0) ?? 0;
    const wkvHead = scalar(meta, k('wkv.head_size')) ?? 0;
    const shortConv = scalar(meta, k('shortconv.l_cache')) ?? 0;
    const kdaHead = scalar(meta, k('kda.head_dim')) ?? 0;
    // MiniMax-01's lightning attention state is key_length squared per head
    const laHead = arch === 'minimax-01' ? scalar(meta, k('attention.key_length')) ?? (headCount0 > 0 ? embeddingLength / headCount0 : 0) : 0;
    const dConv = scalar(meta, k('ssm.conv_kernel')) ?? 0;
    const dInner = scalar(meta, k('ssm.inner_size')) ?? 0;
    const dState = scalar(meta, k('ssm.state_size')) ?? 0;
    const groups = scalar(meta, k('ssm.group_count')) ?? 0;
    if (wkvHead !== 0) recurrentR = (scalar(meta, k('token_shift_count')) ?? 2) * embeddingLength;
    else if (shortConv !== 0) recurrentR = embeddingLength * (shortConv - 1);
    else if (kdaHead !== 0) recurrentR = 3 * (dConv > 0 ? dConv - 1 : 3) * headCount0 * kdaHead;
    else recurrentR = (dConv > 0 ? dConv - 1 : 0) * (dInner + 2 * groups * dState);
    if (wkvHead !== 0) recurrentS = embeddingLength * wkvHead;
    else if (kdaHead !== 0) recurrentS = kdaHead * kdaHead * headCount0;
    else if (laHead !== 0) recurrentS = laHead * laHead * headCount0;
    else recurrentS = dState * dInner;
    // per-layer-embedding conv history (its own row, beside the recurrent state)
    const pleHeads = scalar(meta, k('ple.heads_per_ngram')) ?? 0;
    const pleKernel = scalar(meta, k('ple.conv_kernel')) ?? 0;
    if (pleHeads > 0 && pleKernel > 0) {
      recurrentR += (pleKernel - 1) * (scalar(meta, k('ple.ngram_size')) ?? 0) * (scalar(meta, k('hyper_connection.count')) ?? 0) * embeddingLength;
    }
  }

  const headerFeedForward = maxOf(meta, k('feed_forward_length'), layerCount);
  const denseKind = ffnKind(file, headerFeedForward);
  const ssmInputWidth = widestRows(file, /^blk\.\d+\.ssm_in\.weight$/);

  return {
    architecture: arch,
    rule,
    layerCount,
    leadingDenseBlocks: scalar(meta, k('leading_dense_block_count')) ?? 0,
    nextnLayers: nextn,
    embeddingLength,
    vocabularySize,
    trainedContext: scalar(meta, k('context_length')),
    feedForwardMax: denseFeedForward(file, denseKind) || headerFeedForward,
    ffnKind: denseKind,
    learnedPositions: file.tensors.some((t) => t.name === 'position_embd.weight'),
    fusedQkv: file.tensors.some((t) => /^blk\.\d+\.attn_qkv\.weight$/.test(t.name)),
    slidingWindow,
    layers,
    recurrentR,
    recurrentS,
    // experts only count when the file has expert tensors (the test models carry every key)
    expertCount: file.tensors.some((t) => t.name.includes('_exps.')) ? scalar(meta, k('expert_count')) ?? 0 : 0,
    expertUsedCount: scalar(meta, k('expert_used_count')) ?? 0,
    fusedExpertGateUp: file.tensors.some((t) => /^blk\.\d+\.ffn_gate_up_exps\.weight$/.test(t.name)),
    sharedExpertFeedForward: widestRows(file, /^blk\.\d+\.ffn_up_shexp\.weight$/),
    sharedExpertGated: file.tensors.some((t) => /^blk\.\d+\.ffn_gate_inp_shexp\.weight$/.test(t.name)),
    expertFeedForward: scalar(meta, k('expert_feed_forward_length')) || (scalar(meta, k('feed_forward_length')) ?? 0),
    indexerHeads: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.head_count')) ?? 0,
    indexerKeyLength: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.key_length')) ?? 0,
    compressRatios: rule.indexer === 'dsv4' ? Array.from({ length: layerCount }, (_, il) => numberAt(meta, k('attention.compress_ratios'), il) ?? 0) : [],
    indexerTopK: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.top_k')) ?? 0,
    indexerBlockSize: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.block_size')) ?? 0,
    ssmInputWidth,
    ssmInner: scalar(meta, k('ssm.inner_size')) ?? 0,
    shortConvCache: scalar(meta, k('shortconv.l_cache')) ?? 0,
    ssm: {
      convKernel: scalar(meta, k('ssm.conv_kernel')) ?? 0,
      inner: scalar(meta, k('ssm.inner_size')) ?? 0,
      state: scalar(meta, k('ssm.state_size')) ?? 0,
      groups: scalar(meta, k('ssm.group_count')) ?? 0,
      heads: scalar(meta, k('ssm.time_step_rank')) ?? 0,
      inputWidth: ssmInputWidth,
      norm: file.tensors.some((t) => /^blk\.\d+\.ssm_norm\.weight$/.test(t.name)),
      dtBcNorm: meta.get(k('ssm.dt_b_c_rms')) === true || file.tensors.some((t) => /^blk\.\d+\.ssm_dt_norm\.weight$/.test(t.name)),
    },
    attentionSoftcap: arch === 'grok',
    kvLoraRank: mla ? kvLoraRank : 0,
    latentWidth: widestRows(file, /^blk\.\d+\.attn_kv_a_mqa\.weight$/),
    mla: kvLoraRank > 0 && file.tensors.some((t) => /^blk\.\d+\.attn_kv_a_mqa\.weight$/.test(t.name))
      ? {
        absorbed: mla,
        kvLoraRank,
        rope: scalar(meta, k('rope.dimension_count')) ?? 0,
        qLoraRank: file.tensors.some((t) => /^blk\.\d+\.attn_q_a\.weight$/.test(t.name)) ? scalar(meta, k('attention.q_lora_rank')) ?? 0 : 0,
        headK: (mla ? scalar(meta, k('attention.key_length_mla')) : scalar(meta, k('attention.key_length'))) ?? 0,
        headV: (mla ? scalar(meta, k('attention.value_length_mla')) : scalar(meta, k('attention.value_length'))) ?? 0,
      }
      : undefined,
    expertProbsBias: file.tensors.some((t) => /^blk\.\d+\.exp_probs_b\.bias$/.test(t.name)),
    expertWeightsNorm: (scalar(meta, k('expert_weights_norm')) ?? 0) !== 0,
    expertWeightsScale: scalar(meta, k('expert_weights_scale')) ?? 0,
  };
}
