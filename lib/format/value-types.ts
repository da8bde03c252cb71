/** GGUF metadata value types, by their id in the file. */
export const GGUF_VALUE_TYPES = [
  'UINT8',
  'INT8',
  'UINT16',
  'INT16',
  'UINT32',
  'INT32',
  'FLOAT32',
  'BOOL',
  'STRING',
  'ARRAY',
  'UINT64',
  'INT64',
  'FLOAT64',
] as const;

export type GgufValueType = (typeof GGUF_VALUE_TYPES)[number];

/** Byte size of each fixed-size value type; STRING and ARRAY have none. */
export const FIXED_VALUE_SIZE: Readonly<Partial<Record<GgufValueType, number>>> = {
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  UINT32: 4,
  INT32: 4,
  FLOAT32: 4,
  BOOL: 1,
  UINT64: 8,
  INT64: 8,
  FLOAT64: 8,
};

export function valueTypeId(type: GgufValueType): number {
  return GGUF_VALUE_TYPES.indexOf(type);
}
