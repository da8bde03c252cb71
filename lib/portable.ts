/**
 * What the Node build (index.ts) and the browser build (browser.ts) both export, as they are: the
 * errors, the type tables, metadata, dequantization, templates, the tokenizer and the types of
 * options and answers. Each build adds its openers and its own view of GgufFile.
 */
export { GgufError, GGUF_ERROR_CODES, type GgufErrorCode } from './errors.js';
export { GGML_TYPES, ggmlTypeById, ggmlTypeByName, type GgmlType, type GgmlTypeName, type WideField } from './format/ggml-types.js';
export { GGUF_VALUE_TYPES, type GgufValueType } from './format/value-types.js';
export type { ParseLimits } from './format/parse.js';
export type { ModelSummary, TypeSummary } from './file/summary.js';
export type {
  ModelHyperparameters,
  HyperparameterFamily,
  TransformerHyperparameters,
  MixtureOfExpertsHyperparameters,
  RecurrentHyperparameters,
  HybridHyperparameters,
  PerBlock,
  RopeHyperparameters,
  RopeScaling,
  SlidingWindowHyperparameters,
  ExpertHyperparameters,
  SsmHyperparameters,
  WkvHyperparameters,
  RecurrentStateSize,
} from './file/hyperparameters.js';
export { GgufMetadata, GgufArray, type GgufValue, type GgufNumericArray, type GgufEntryInfo } from './file/metadata.js';
export type { TensorView } from './file/tensor.js';
export type { GgufBlock, Q4KBlock, Q6KBlock } from './format/blocks.js';
export type { GgufScalar } from './format/parse.js';
export { f16ToF32 } from './format/f16.js';
export type { GgmlTypeRef } from './dequant/dequantize.js';
export { dequantize, dequantizeAsync, canDequantize, dequantKernelFor, type DequantBackend, type DequantizeOptions, type DequantizeAsyncOptions } from './dequant/dequantize.js';
export type { OpenRemoteOptions } from './remote/open-remote.js';
export type { RemoteOptions } from './remote/range-client.js';
export type { OpenBlobOptions } from './file/open-blob.js';
export type { BufferEstimate, MemoryEstimate } from './estimate/estimate.js';
export { KV_CACHE_TYPES, type EstimateOptions, type KvCacheType } from './estimate/options.js';
export { renderChatTemplate, type RenderChatTemplateOptions, type ChatMessage, type ChatTemplateLimits } from './chat/render.js';
export type { ApplyChatTemplateOptions } from './chat/apply.js';
export { Tokenizer, type EncodeOptions, type DecodeOptions, type StreamingDecoder } from './tokenizer/tokenizer.js';
export type { TokenTypeName, VocabType } from './tokenizer/vocab.js';
