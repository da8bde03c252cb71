import { GgufError } from '../errors.js';
import type { GgufFile } from '../file/gguf-file.js';
import { blockValue, largestOf } from '../file/hyperparameters.js';
import { ARCHITECTURES, UNMODELLED, type ArchitectureRule } from '../file/architectures.js';

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

/**
 * A number of the header: a scalar, or element `layer` of an array, read where it lies (an array
 * is never decoded whole: a key may hold millions of elements, and a shape reads each key once
 * per layer).
 */
function numberAt(meta: Meta, key: string, layer: number): number | undefined {
  const array = meta.array(key);
  if (array !== undefined) {
    const v = array.at(layer);
    return v === undefined ? undefined : Number(v);
  }
  const value = meta.get(key);
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  return undefined;
}

function scalar(meta: Meta, key: string): number | undefined {
  return numberAt(meta, key, 0);
}

function isArray(meta: Meta, key: string): boolean {
  return meta.type(key) === 'ARRAY';
}

/**
 * A per-layer number: the key's one value for every layer, or its element for this layer. As
 * llama.cpp's get_key_or_arr, an array must have one element per block: another length is
 * BAD_HYPERPARAMETER ("wrong array length"), not a guess.
 */
function perLayer(meta: Meta, key: string, layer: number, layers: number): number | undefined {
  const length = meta.info(key)?.length;
  if (length !== undefined && length !== layers) throw badHyperparameter(`${key} has wrong array length: ${length} elements for ${layers} blocks (llama.cpp refuses it)`);
  return numberAt(meta, key, layer);
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

/** llama.cpp's LLAMA_MAX_EXPERTS. */
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
  // the basic values, checked (block count within llama.cpp's limits before anything loops over the blocks)
  const hp = file.hyperparameters();

  const layerCount = hp.blockCount;
  // a per-layer key (one value, or an array of one per block)
  const at = (key: string, il: number) => perLayer(meta, key, il, layerCount);
  const embeddingLength = hp.embeddingLength;
  const vocabularySize = hp.vocabularySize ?? 0;
  const names = new Set(file.tensors.map((t) => t.name));
  const has = (il: number, tensor: string) => names.has(`blk.${il}.${tensor}.weight`);
  const tensorRows = new Map(file.tensors.map((t) => [t.name, t.shape[1] ?? 0] as const));

  // Sliding windows.
  const slidingWindow = hp.slidingWindow?.size ?? 0;
  const isSwa = (il: number): boolean => hp.slidingWindow?.blocks[il] ?? false;

  // Recurrent layers, as each hybrid's loader marks them; appended NextN (MTP) layers never are.
  const nextn = scalar(meta, k('nextn_predict_layers')) ?? 0;
  if (!Number.isSafeInteger(nextn) || nextn < 0 || nextn > layerCount) throw badHyperparameter(`${k('nextn_predict_layers')} is ${String(nextn)} of ${layerCount} blocks`);
  const trunkLayers = layerCount - nextn;
  const recurrentKey = k('attention.recurrent_layers');
  const headCountKvAt = (il: number) => blockValue(hp.headCountKv, il);
  const feedForwardAt = (il: number) => blockValue(hp.feedForwardLength ?? 0, il);
  const isRecurrent = (il: number): boolean => {
    if (rule.memory === 'recurrent') return true;
    if (rule.memory !== 'hybrid') return false;
    if (rule.allLayersBoth === true) return true;
    if (rule.attentionWhereNoFfn === true) return il < trunkLayers && headCountKvAt(il) === 0 && feedForwardAt(il) === 0;
    if (rule.fullAttentionInterval !== undefined) {
      if (meta.has(recurrentKey)) return (at(recurrentKey, il) ?? 0) !== 0;
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
      if ((at(typesKey, il) ?? 0) !== 1) return 0;
    }
    return keyLength;
  };

  const layers: LayerShape[] = [];
  // the sparse-attention caches and the interval hybrids' attention filter leave the NextN layers out
  const trunk = nextn > 0 && (rule.indexer !== undefined || rule.fullAttentionInterval !== undefined) ? trunkLayers : layerCount;
  for (let il = 0; il < layerCount; il++) {
    const headCount = blockValue(hp.headCount, il);
    const headCountKv = headCountKvAt(il);
    const recurrent = isRecurrent(il);
    const swa = isSwa(il);
    let attention = rule.memory === 'kv' || (rule.memory === 'hybrid' && (rule.allLayersBoth === true || !recurrent));
    if (rule.attentionWhereNoFfn === true) attention = !recurrent && feedForwardAt(il) === 0;
    if (attention && headCountKv === 0 && !mla) attention = false;
    if (il >= trunk) attention = false;
    if (sharedKv > 0 && il >= layerCount - sharedKv) attention = false;
    if (rule.kvLayersFromStart !== undefined && il >= rule.kvLayersFromStart) attention = false;
    let keyLength = swa ? hp.slidingWindow!.keyLength : hp.keyLength;
    let valueLength = swa ? hp.slidingWindow!.valueLength : hp.valueLength;
    if (!has(il, 'attn_k') && !has(il, 'attn_qkv') && has(il, 'attn_kv_a_mqa') && !mla) {
      // MLA weights without the absorbed cache (MiniCPM3): K and V per head as usual
      keyLength = hp.keyLength;
      valueLength = hp.valueLength;
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
  let recurrentR = hp.recurrentState?.convolution ?? 0;
  const recurrentS = hp.recurrentState?.state ?? 0;
  if (hp.recurrentState !== undefined) {
    // per-layer-embedding conv history (its own row, beside the recurrent state)
    const pleHeads = scalar(meta, k('ple.heads_per_ngram')) ?? 0;
    const pleKernel = scalar(meta, k('ple.conv_kernel')) ?? 0;
    if (pleHeads > 0 && pleKernel > 0) {
      recurrentR += (pleKernel - 1) * (scalar(meta, k('ple.ngram_size')) ?? 0) * (scalar(meta, k('hyper_connection.count')) ?? 0) * embeddingLength;
    }
  }

  const headerFeedForward = largestOf(hp.feedForwardLength ?? 0);
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
    trainedContext: hp.contextLength,
    feedForwardMax: denseFeedForward(file, denseKind) || headerFeedForward,
    ffnKind: denseKind,
    learnedPositions: file.tensors.some((t) => t.name === 'position_embd.weight'),
    fusedQkv: file.tensors.some((t) => /^blk\.\d+\.attn_qkv\.weight$/.test(t.name)),
    slidingWindow,
    layers,
    recurrentR,
    recurrentS,
    // experts only count when the file has expert tensors (the test models carry every key)
    expertCount: file.tensors.some((t) => t.name.includes('_exps.')) ? hp.experts?.count ?? 0 : 0,
    expertUsedCount: hp.experts === undefined ? 0 : blockValue(hp.experts.used, 0),
    fusedExpertGateUp: file.tensors.some((t) => /^blk\.\d+\.ffn_gate_up_exps\.weight$/.test(t.name)),
    sharedExpertFeedForward: widestRows(file, /^blk\.\d+\.ffn_up_shexp\.weight$/),
    sharedExpertGated: file.tensors.some((t) => /^blk\.\d+\.ffn_gate_inp_shexp\.weight$/.test(t.name)),
    expertFeedForward: blockValue(hp.experts?.feedForwardLength ?? 0, 0) || blockValue(hp.feedForwardLength ?? 0, 0),
    indexerHeads: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.head_count')) ?? 0,
    indexerKeyLength: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.key_length')) ?? 0,
    compressRatios: rule.indexer === 'dsv4' ? Array.from({ length: layerCount }, (_, il) => numberAt(meta, k('attention.compress_ratios'), il) ?? 0) : [],
    indexerTopK: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.top_k')) ?? 0,
    indexerBlockSize: rule.indexer === undefined ? 0 : scalar(meta, k('attention.indexer.block_size')) ?? 0,
    ssmInputWidth,
    ssmInner: hp.ssm?.innerSize ?? 0,
    shortConvCache: hp.shortConvolution?.cacheLength ?? 0,
    ssm: {
      convKernel: hp.ssm?.convKernel ?? 0,
      inner: hp.ssm?.innerSize ?? 0,
      state: hp.ssm?.stateSize ?? 0,
      groups: hp.ssm?.groupCount ?? 0,
      heads: hp.ssm?.timeStepRank ?? 0,
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
