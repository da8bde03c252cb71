export { GgufError, GGUF_ERROR_CODES, type GgufErrorCode } from './errors.js';
export { GGML_TYPES, ggmlTypeById, ggmlTypeByName, type GgmlType, type GgmlTypeName } from './ggml-types.js';
export { GGUF_VALUE_TYPES, type GgufValueType } from './value-types.js';
export { GgufFile, openGguf, parseGguf, type OpenMode, type OpenOptions } from './gguf-file.js';
export type { ParseLimits } from './parse.js';
export type { VerifyOptions } from './verify.js';
export { GgufMetadata, GgufArray, type GgufValue, type GgufNumericArray, type GgufEntryInfo } from './metadata.js';
export { GgufTensor, type TensorView } from './tensor.js';
export type { GgufBlock, Q4KBlock, Q6KBlock } from './blocks.js';
export type { GgufScalar } from './parse.js';
export { f16ToF32 } from './f16.js';
export { encodeGguf, writeGgufFile, type GgufWriteSpec, type GgufWriteValue, type GgufWriteTensor } from './writer.js';
export { liveMappings } from './native.js';
export type { GgmlTypeRef } from './dequant/dequantize.js';
export {
  dequantize,
  dequantizeAsync,
  canDequantize,
  nativeDequantInfo,
  type DequantBackend,
  type DequantizeOptions,
  type DequantizeAsyncOptions,
} from './dequant/dequantize.js';
