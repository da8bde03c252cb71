export { GgufError, GGUF_ERROR_CODES, type GgufErrorCode } from './errors.js';
export { GGML_TYPES, ggmlTypeById, ggmlTypeByName, type GgmlType, type GgmlTypeName, type WideField } from './format/ggml-types.js';
export { GGUF_VALUE_TYPES, type GgufValueType } from './format/value-types.js';
export { GgufFile, openGguf, parseGguf, type GgufPart, type OpenMode, type OpenOptions } from './file/gguf-file.js';
export type { ParseLimits } from './format/parse.js';
export type { VerifyOptions } from './file/verify.js';
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
export { GgufTensor, type TensorView } from './file/tensor.js';
export type { GgufBlock, Q4KBlock, Q6KBlock } from './format/blocks.js';
export type { GgufScalar } from './format/parse.js';
export { f16ToF32 } from './format/f16.js';
export { writeGgufSplit, type SplitOptions } from './format/write-split.js';
export { encodeGguf, writeGgufFile, type GgufWriteSpec, type GgufWriteValue, type GgufWriteTensor } from './format/writer.js';
export { liveMappings, evictFromPageCache, type PageAdvice } from './native.js';
export type { PrefetchOptions, TensorSelection } from './file/page-cache.js';
export type { GgmlTypeRef } from './dequant/dequantize.js';
export {
  dequantize,
  dequantizeAsync,
  canDequantize,
  dequantKernelFor,
  nativeDequantInfo,
  type DequantBackend,
  type DequantizeOptions,
  type DequantizeAsyncOptions,
} from './dequant/dequantize.js';
export { openGgufRemote, type OpenRemoteOptions } from './remote/open-remote.js';
export { openGgufBlob, type OpenBlobOptions } from './file/open-blob.js';
export type { RemoteOptions } from './remote/range-client.js';
export { pullModel, type PullOptions, type PulledModel } from './cache/pull.js';
export { hubCacheDir, listCache, type CachedRepo } from './cache/hf-cache.js';
export { modelForTests, type TestModel, type TestModelOptions } from './testing/model-for-tests.js';
export { hashTensors, formatHashLine, HASH_KINDS, type HashKind, type HashLine, type HashOptions } from './hash/tensor-hashes.js';
export { hashTensorsAsync, type ParallelHashOptions } from './hash/parallel-hash.js';
export { splitModel, mergeModel, type SplitModelOptions } from './edit/split-model.js';
export { editMetadata, type MetadataEdit, type EditOptions, type EditResult } from './edit/edit-metadata.js';
export { recoverHeaderEdit } from './edit/header-journal.js';
export { convertEndian, type ConvertEndianOptions } from './edit/convert-endian.js';
export { estimateMemory, fitGpuLayers, largestContext, type BufferEstimate, type MemoryEstimate } from './estimate/estimate.js';
export { KV_CACHE_TYPES, type EstimateOptions, type KvCacheType } from './estimate/options.js';
export { hostCpuFeatures } from './estimate/cpu-features.js';
export { startViewServer } from './view/start.js';
export type { ViewServer, ViewServerOptions } from './view/server.js';
export type { TensorStats } from './view/tensor-stats.js';
export { renderChatTemplate, type RenderChatTemplateOptions, type ChatMessage, type ChatTemplateLimits } from './chat/render.js';
export type { ApplyChatTemplateOptions } from './chat/apply.js';
export { Tokenizer, type EncodeOptions, type DecodeOptions, type StreamingDecoder } from './tokenizer/tokenizer.js';
export type { TokenTypeName, VocabType } from './tokenizer/vocab.js';
