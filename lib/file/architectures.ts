/**
 * What the estimator knows of each llama.cpp v0.5.0 architecture: which memory it gets
 * (llama_model::create_memory) and its sliding-window rule (each model's load_arch_hparams).
 * An architecture missing here is UNSUPPORTED_ARCHITECTURE, never a guess.
 */

/** The memory module llama.cpp builds for the architecture. */
export type MemoryKind =
  /** No memory: encoders and diffusion models (bert, llada, ...). */
  | 'none'
  /** The attention KV cache (with an iSWA split when the model has sliding-window layers). */
  | 'kv'
  /** Recurrent state only (Mamba, RWKV). */
  | 'recurrent'
  /** Attention KV cache for some layers and recurrent state for others. */
  | 'hybrid';

export interface ArchitectureRule {
  readonly memory: MemoryKind;
  /**
   * Sliding-window layers: 'array' when only `attention.sliding_window_pattern` (a per-layer
   * array) says; a number n is the default period when the key is absent or a number (layer il
   * slides when il % n < n - 1, or when il % n != 0 with denseFirst); 'all' slides every layer.
   */
  readonly swa?: 'array' | 'all' | number;
  readonly swaDenseFirst?: boolean;
  /**
   * Attention and FFN both read the layer's one norm and add to the residual together (Cohere,
   * Falcon, Phi-2: FFN plus residual, then attention); 'attention-first': the FFN plus attention,
   * then the residual, the rows cropped in the order attention, norm, residual (PLaMo).
   */
  readonly parallelFfn?: boolean | 'attention-first';
  /** Attention without rope (ALiBi or learned positions): Q and K go to attention as projected. */
  readonly noRope?: boolean;
  /** Rope only at this block count, ALiBi otherwise (Baichuan: the 7B has rope, the 13B not). */
  readonly ropeOnlyWithLayers?: number;
  /**
   * Rope only on the sliding-window layers (Cohere 2: the full-attention layers have none), and on
   * the leading dense blocks with 'and-leading-dense' (Cohere 2 MoE).
   */
  readonly ropeOnlySwa?: true | 'and-leading-dense';
  /** Norms after attention and after the FFN, none before (EXAONE 4, OLMo 2). */
  readonly postNorm?: boolean;
  /**
   * The residual adds take the residual as their first source, which decides what they reuse:
   * both adds (LFM2) or the FFN's only (Phi-3, OpenELM).
   */
  readonly residualFirst?: 'both' | 'ffn';
  /**
   * The normed embeddings are kept to the last layer, each layer adding them scaled (a new
   * tensor: they have other readers) after its FFN (Talkie).
   */
  readonly embeddingSkip?: boolean;
  /** A decoder without memory (diffusion models): llama's layers, attending within the ubatch. */
  readonly diffusion?: boolean;
  /**
   * The graph builds the dense FFN whatever the file has (Refact): in a layer with experts only,
   * its tensors absent, what is left of it is the activation of its input.
   */
  readonly ffnIgnoresExperts?: boolean;
  /** The routing weights scale each expert's input, not its output (Llama 4). */
  readonly moeWeightBeforeFfn?: boolean;
  /** The output rows are picked after the final norm, not before the last layer's FFN. */
  readonly lateOutputRows?: boolean;
  /** The recurrent layers' mixer, where the replayed graph models it. */
  readonly mixer?: 'mamba' | 'mamba2' | 'gated-delta-net' | 'short-conv';
  /** The window when the file names none (gemma2: 4096). */
  readonly swaDefaultWindow?: number;
  /** Sliding windows only apply at this block count (exaone4: 64-layer 32B). */
  readonly swaOnlyWithLayers?: number;
  /** Chunked attention (llama4) instead of a sliding window: same cache size rule. */
  readonly chunked?: boolean;
  /**
   * A sparse-attention indexer key cache beside the KV cache (DSA, MSA, QSA), or DeepSeek 4's
   * compressed cache (dsv4-cache.ts), whose CSA layers have an indexer.
   */
  readonly indexer?: 'dsa' | 'msa' | 'qsa' | 'dsv4';
  /** Attention and recurrent state on every layer (Falcon-H1). */
  readonly allLayersBoth?: boolean;
  /** Attention only where the layer has no FFN (Nemotron-H). */
  readonly attentionWhereNoFfn?: boolean;
  /**
   * Hybrids that mark recurrent layers by `attention.recurrent_layers` or else every layer but
   * each `full_attention_interval`-th (this default) is recurrent; other hybrids mark the layers
   * whose head_count_kv is 0.
   */
  readonly fullAttentionInterval?: number;
  /** Only the first n layers have a KV cache; the others share it (Gemma 3n: 20). */
  readonly kvLayersFromStart?: number;
}

const KV: ArchitectureRule = { memory: 'kv' };
const NONE: ArchitectureRule = { memory: 'none' };
const RECURRENT: ArchitectureRule = { memory: 'recurrent' };
const HYBRID: ArchitectureRule = { memory: 'hybrid' };
const DIFFUSION: ArchitectureRule = { memory: 'none', diffusion: true };

export const ARCHITECTURES: Readonly<Record<string, ArchitectureRule>> = {
  // Plain attention KV cache.
  llama: KV, deci: KV, falcon: { memory: 'kv', parallelFfn: true }, grok: KV, gpt2: { memory: 'kv', noRope: true }, gptj: KV, gptneox: KV, mpt: { memory: 'kv', noRope: true }, baichuan: { memory: 'kv', ropeOnlyWithLayers: 32 },
  starcoder: { memory: 'kv', noRope: true }, refact: { memory: 'kv', noRope: true, ffnIgnoresExperts: true }, bloom: { memory: 'kv', noRope: true }, stablelm: KV, qwen: KV, qwen2: KV, qwen2moe: KV, qwen2vl: KV,
  qwen3: KV, qwen3moe: KV, qwen3vl: KV, qwen3vlmoe: KV, phi2: { memory: 'kv', parallelFfn: true }, phimoe: KV, plamo: { memory: 'kv', parallelFfn: 'attention-first' }, codeshell: KV,
  orion: KV, internlm2: KV, minicpm: KV, minicpm3: KV, gemma: KV, starcoder2: KV, xverse: KV,
  'command-r': { memory: 'kv', parallelFfn: true }, dbrx: KV, olmo: KV, olmoe: KV, openelm: { memory: 'kv', residualFirst: 'ffn' }, arctic: KV, deepseek: KV, deepseek2: KV,
  'deepseek2-ocr': KV, chatglm: KV, glm4: KV, glm4moe: KV, bitnet: KV, t5: KV, jais: { memory: 'kv', noRope: true }, jais2: KV,
  nemotron: KV, exaone: KV, granite: KV, granitemoe: KV, graniteswitch: KV, chameleon: KV, plm: KV,
  bailingmoe: KV, bailingmoe2: KV, dots1: KV, arcee: KV, ernie4_5: KV, 'ernie4_5-moe': KV,
  'hunyuan-moe': KV, 'hunyuan-dense': KV, hunyuan_vl: KV, hy_v3: { memory: 'kv', lateOutputRows: true }, smollm3: KV, seed_oss: KV,
  grovemoe: KV, apertus: KV, 'minimax-m2': KV, cogvlm: KV, 'pangu-embedded': KV, mistral3: KV,
  eagle3: KV, mistral4: KV, paddleocr: KV, maincoder: KV, talkie: { memory: 'kv', embeddingSkip: true }, nanbeige: KV, phi3: { memory: 'kv', residualFirst: 'ffn' }, qwen3tts: KV,
  'llama-embed': KV, hrm_text: KV, pockettts: KV,
  // Sliding-window (iSWA) layers.
  gemma2: { memory: 'kv', swa: 2, swaDefaultWindow: 4096 },
  gemma3: { memory: 'kv', swa: 6 },
  gemma3n: { memory: 'kv', swa: 5, kvLayersFromStart: 20 },
  gemma4: { memory: 'kv', swa: 'array', lateOutputRows: true },
  'gemma4-assistant': { memory: 'kv', swa: 'array' },
  cohere2: { memory: 'kv', swa: 4, parallelFfn: true, ropeOnlySwa: true },
  cohere2moe: { memory: 'kv', swa: 4, swaDenseFirst: true, parallelFfn: true, ropeOnlySwa: 'and-leading-dense', lateOutputRows: true },
  afmoe: { memory: 'kv', swa: 4 },
  'exaone-moe': { memory: 'kv', swa: 4, swaDefaultWindow: 128 },
  exaone4: { memory: 'kv', swa: 4, swaDefaultWindow: 4096, swaOnlyWithLayers: 64, postNorm: true },
  granite_swa: { memory: 'kv', swa: 'array' },
  laguna: { memory: 'kv', swa: 4, swaDenseFirst: true },
  llama4: { memory: 'kv', swa: 4, chunked: true, swaDefaultWindow: 8192, moeWeightBeforeFfn: true },
  maple: { memory: 'kv', swa: 'array' },
  mellum: { memory: 'kv', swa: 4 },
  mimo2: { memory: 'kv', swa: 'array' },
  'muse-glimmer': { memory: 'kv', swa: 4 },
  olmo2: { memory: 'kv', swa: 4, postNorm: true },
  'gpt-oss': { memory: 'kv', swa: 2, lateOutputRows: true },
  plamo3: { memory: 'kv', swa: 8 },
  smallthinker: { memory: 'kv', swa: 4, swaDenseFirst: true },
  spark2_5: { memory: 'kv', swa: 'array' },
  step35: { memory: 'kv', swa: 'array', lateOutputRows: true },
  dflash: { memory: 'kv', swa: 'array' },
  // Sparse attention with an indexer key cache.
  deepseek32: { memory: 'kv', indexer: 'dsa' },
  'glm-dsa': { memory: 'kv', indexer: 'dsa' },
  hy_v4: { memory: 'kv', indexer: 'dsa' },
  dots3note: { memory: 'kv', indexer: 'dsa', swa: 'array' },
  'minimax-m3': { memory: 'kv', indexer: 'msa' },
  // DeepSeek 4: llama_kv_cache_dsv4, a sliding window of raw keys beside keys compressed 4:1 (CSA,
  // with an indexer) or 128:1 (HCA) and the compressors' state
  deepseek4: { memory: 'kv', indexer: 'dsv4', swa: 'all' },
  // Recurrent state.
  mamba: { memory: 'recurrent', mixer: 'mamba' }, mamba2: { memory: 'recurrent', mixer: 'mamba2' }, rwkv6: RECURRENT, rwkv6qwen2: RECURRENT, rwkv7: RECURRENT,
  arwkv7: RECURRENT,
  // Hybrids.
  jamba: { memory: 'hybrid', mixer: 'mamba', noRope: true }, plamo2: HYBRID, granitehybrid: { memory: 'hybrid', mixer: 'mamba2' }, 'kimi-linear': HYBRID, bailingmoe3: { memory: 'hybrid', lateOutputRows: true },
  'kimi-k3': HYBRID,
  qwen3next: { memory: 'hybrid', fullAttentionInterval: 4, lateOutputRows: true, mixer: 'gated-delta-net' },
  qwen35: { memory: 'hybrid', fullAttentionInterval: 4, lateOutputRows: true, mixer: 'gated-delta-net' },
  qwen35moe: { memory: 'hybrid', fullAttentionInterval: 4, lateOutputRows: true, mixer: 'gated-delta-net' },
  'minimax-01': { memory: 'hybrid', fullAttentionInterval: 8 },
  // LFM2: every attention layer slides once the file names a window.
  lfm2: { memory: 'hybrid', swa: 'all', mixer: 'short-conv', residualFirst: 'both' },
  lfm2moe: { memory: 'hybrid', swa: 'all', mixer: 'short-conv', residualFirst: 'both' },
  'falcon-h1': { memory: 'hybrid', allLayersBoth: true },
  nemotron_h: { memory: 'hybrid', attentionWhereNoFfn: true, lateOutputRows: true, mixer: 'mamba2', noRope: true },
  nemotron_h_moe: { memory: 'hybrid', attentionWhereNoFfn: true, mixer: 'mamba2', noRope: true },
  qwen4exp: { memory: 'hybrid', indexer: 'qsa', fullAttentionInterval: 4 },
  // No memory: encoders and diffusion models.
  bert: NONE, 'jina-bert-v2': NONE, 'jina-bert-v3': NONE, 'nomic-bert': NONE, 'nomic-bert-moe': NONE,
  'neo-bert': NONE, eurobert: NONE, 'wavtokenizer-dec': NONE, 'modern-bert': NONE,
  'gemma-embedding': NONE, t5encoder: NONE,
  dream: DIFFUSION, llada: DIFFUSION, 'llada-moe': DIFFUSION, rnd1: DIFFUSION,
};

/**
 * Architectures llama.cpp v0.5.0 has whose memory the estimate does not model: an explicit
 * UNSUPPORTED_ARCHITECTURE that says why, rather than a figure that would be a guess. None now.
 */
export const UNMODELLED: Readonly<Record<string, string>> = {};
