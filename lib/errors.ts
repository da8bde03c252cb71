/**
 * Every problem with a file's contents is a GgufError: a stable `code` to branch on and the byte
 * `offset` in the file where the problem was found. The codes are listed in the README.
 */
export const GGUF_ERROR_CODES = [
  'BAD_MAGIC',
  'BAD_VERSION',
  'TRUNCATED',
  'HEADER_TOO_LARGE',
  'BAD_COUNT',
  'STRING_TOO_LONG',
  'BAD_UTF8',
  'EMPTY_KEY',
  'DUPLICATE_KEY',
  'BAD_VALUE_TYPE',
  'BAD_ARRAY_TYPE',
  'BAD_BOOL',
  'NESTING_TOO_DEEP',
  'BAD_ALIGNMENT',
  'BAD_TENSOR_NAME',
  'DUPLICATE_TENSOR',
  'BAD_DIMS',
  'BAD_SHAPE',
  'UNKNOWN_TENSOR_TYPE',
  'REMOVED_TENSOR_TYPE',
  'BAD_TENSOR_OFFSET',
  'TENSOR_OUT_OF_BOUNDS',
  'TENSOR_OVERLAP',
  'TENSOR_TOO_LARGE',
  'UNSUPPORTED_BLOCK_TYPE',
  'UNSUPPORTED_ARCHITECTURE',
  'BAD_HYPERPARAMETER',
  'BLOCK_OUT_OF_RANGE',
  'CLOSED',
  'NO_DEQUANTIZER',
  'NO_NATIVE_KERNEL',
  'NO_WASM_KERNEL',
  'BAD_DATA_LENGTH',
  'OUTPUT_TOO_SMALL',
  'ROW_OUT_OF_RANGE',
  'FILE_CHANGED',
  'CHECKSUM_MISMATCH',
  'LIMIT_EXCEEDED',
  'ADDON_UNAVAILABLE',
  'NOT_MAPPED',
  'SPLIT_PART_MISSING',
  'SPLIT_MISMATCH',
  'REMOTE_FILE',
  'HTTP_ERROR',
  'BAD_RESPONSE',
  'NETWORK_ERROR',
  'NOT_CACHED',
  'FILE_NOT_FOUND',
  'CANNOT_REWRITE',
  'CHAT_TEMPLATE_ERROR',
  'UNSUPPORTED_TOKENIZER',
] as const;

export type GgufErrorCode = (typeof GGUF_ERROR_CODES)[number];

export class GgufError extends Error {
  readonly code: GgufErrorCode;
  /** Byte offset in the file (or buffer) where the problem was found. */
  readonly offset: number;

  constructor(code: GgufErrorCode, message: string, offset: number) {
    super(`${message} (at byte ${offset})`);
    this.name = 'GgufError';
    this.code = code;
    this.offset = offset;
  }
}
