import { ggmlTypeById, type GgmlTypeName } from '../format/ggml-types.js';
import type { TensorTable } from '../format/tensor-table.js';
import { NUMBER_TYPES, type GgufMetadata } from './metadata.js';

/** Tensors of one ggml type: how many, their elements (parameters) and bytes. */
export interface TypeSummary {
  readonly type: GgmlTypeName;
  readonly tensors: number;
  readonly parameters: number;
  readonly bytes: number;
  /** bytes * 8 / parameters. */
  readonly bitsPerWeight: number;
}

/** What a model is, computed from the header alone (no tensor byte is read). */
export interface ModelSummary {
  /** `general.architecture` (e.g. 'llama'), or undefined. */
  readonly architecture: string | undefined;
  /** `general.name`, or undefined. */
  readonly name: string | undefined;
  /** `general.file_type` (llama.cpp's LLAMA_FTYPE number, e.g. 15 for Q4_K_M), or undefined. */
  readonly fileType: number | undefined;
  /** Elements of every tensor, every part. */
  readonly parameters: number;
  /** Bytes of tensor data, every part (padding excluded). */
  readonly bytes: number;
  readonly bitsPerWeight: number;
  /** By tensor type, most bytes first. */
  readonly byType: readonly TypeSummary[];
  /**
   * Number-valued `<architecture>.*` keys without the prefix (`context_length`,
   * `attention.head_count`, ...); arrays of up to 4,096 numbers as number[] (65,536 in all).
   */
  readonly hyperparameters: Readonly<Record<string, number | readonly number[]>>;
  /** Length of `tokenizer.ggml.tokens`, or undefined. */
  readonly vocabularySize: number | undefined;
  /** Parts (1 for a single file) and their size together. */
  readonly parts: number;
  readonly fileBytes: number;
}

const MAX_HYPERPARAMETER_ARRAY = 4096;
const MAX_HYPERPARAMETER_NUMBERS = 65_536;

function safeNumber(value: unknown): number | undefined {
  return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : undefined;
}

/**
 * Number-valued `<architecture>.*` keys without the prefix, read at open (so summary() works
 * after close()). Per-layer arrays of up to 4,096 numbers are kept, up to 65,536 numbers in all:
 * anything longer is data, not a hyperparameter, and would make the summary as large as a header.
 */
export function hyperparametersOf(metadata: GgufMetadata): Readonly<Record<string, number | readonly number[]>> {
  // A null prototype: a key named __proto__ stays a key.
  const hyperparameters: Record<string, number | readonly number[]> = Object.create(null);
  const architecture = architectureOf(metadata);
  if (architecture === undefined) return Object.freeze(hyperparameters);
  const prefix = `${architecture}.`;
  let budget = MAX_HYPERPARAMETER_NUMBERS;
  for (const key of metadata.keys()) {
    if (!key.startsWith(prefix)) continue;
    const info = metadata.info(key)!;
    const name = key.slice(prefix.length);
    if (NUMBER_TYPES.includes(info.type)) {
      hyperparameters[name] = safeNumber(metadata.get(key))!;
    } else if (info.arrayType !== undefined && NUMBER_TYPES.includes(info.arrayType) && info.length! <= Math.min(MAX_HYPERPARAMETER_ARRAY, budget)) {
      budget -= info.length!;
      hyperparameters[name] = Object.freeze(Array.from(metadata.get(key) as ArrayLike<number | bigint>, (v) => safeNumber(v)!));
    }
  }
  return Object.freeze(hyperparameters);
}

function architectureOf(metadata: GgufMetadata): string | undefined {
  return metadata.type('general.architecture') === 'STRING' ? metadata.getString('general.architecture') : undefined;
}

export function summarize(
  metadata: GgufMetadata,
  hyperparameters: Readonly<Record<string, number | readonly number[]>>,
  tables: readonly TensorTable[],
  fileBytes: number,
): ModelSummary {
  const byType = new Map<number, { tensors: number; parameters: number; bytes: number }>();
  let parameters = 0;
  let bytes = 0;
  for (const table of tables) {
    for (let i = 0; i < table.count; i++) {
      const id = table.typeId(i);
      const elements = table.elements(i);
      const size = table.byteLength(i);
      const entry = byType.get(id) ?? { tensors: 0, parameters: 0, bytes: 0 };
      entry.tensors++;
      entry.parameters += elements;
      entry.bytes += size;
      byType.set(id, entry);
      parameters += elements;
      bytes += size;
    }
  }
  const bits = (b: number, n: number) => (n === 0 ? 0 : (b * 8) / n);
  const types = [...byType]
    .map(([id, e]) => ({ type: ggmlTypeById(id)!.name, ...e, bitsPerWeight: bits(e.bytes, e.parameters) }))
    .sort((a, b) => b.bytes - a.bytes || a.type.localeCompare(b.type));
  const fileType = metadata.type('general.file_type');
  return Object.freeze({
    architecture: architectureOf(metadata),
    name: metadata.type('general.name') === 'STRING' ? metadata.getString('general.name') : undefined,
    fileType: fileType !== undefined && NUMBER_TYPES.includes(fileType) ? safeNumber(metadata.get('general.file_type')) : undefined,
    parameters,
    bytes,
    bitsPerWeight: bits(bytes, parameters),
    byType: Object.freeze(types.map((t) => Object.freeze(t))),
    hyperparameters,
    vocabularySize: metadata.info('tokenizer.ggml.tokens')?.length,
    parts: tables.length,
    fileBytes,
  });
}
