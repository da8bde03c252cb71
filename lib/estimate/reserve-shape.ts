// The worst-case ubatch a compute graph is built for: what compute.ts decides and every graph
// builder (transformer, MLA, MSA, recurrent) reads.

/** What the worst-case graph is reserved for (llama_context::graph_reserve). */
export interface ReserveShape {
  /** Tokens in the ubatch (n_tokens, a multiple of the sequences) and the outputs asked of it. */
  readonly tokens: number;
  readonly outputs: number;
  /** KV streams: 1 with a unified cache, else the sequences. */
  readonly streams: number;
  /** Sequences in the ubatch (n_seq_max): recurrent layers split the tokens among them. */
  readonly sequences: number;
  /** Cells the full-context and sliding-window masks span (n_kv). */
  readonly fullCells: number;
  readonly swaCells: number;
  readonly flash: boolean;
  /** The K and V caches are f32 (flash attention then reads them through f16 copies). */
  readonly kF32: boolean;
  readonly vF32: boolean;
  /** The K cache's type (MLA without flash attention copies its latent part out). */
  readonly typeK: string;
  /** The V cache's type (the GPU scheduler copies a host cache's views at their size). */
  readonly typeV: string;
  /** Sides of the Hadamard rotations applied around a quantized K or V cache (0: none). */
  readonly kRotation: number;
  readonly vRotation: number;
}
