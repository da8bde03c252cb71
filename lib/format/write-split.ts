import { ggmlTypeById, ggmlTypeByName } from './ggml-types.js';
import { splitPartName } from './part-name.js';
import { writeGgufFile, type GgufWriteSpec, type GgufWriteTensor, type GgufWriteValue } from './writer.js';

export interface SplitOptions {
  /** At most this many tensors per part. */
  maxTensors?: number;
  /** At most this many tensor bytes per part (a tensor larger than that gets a part of its own). */
  maxBytes?: number;
  /** Part 1 holds only the metadata (llama-gguf-split's --no-tensor-first-split). */
  noTensorsInFirst?: boolean;
}

export { splitPartName };

function tensorBytes(t: GgufWriteTensor): number {
  const type = typeof t.type === 'number' ? ggmlTypeById(t.type) : ggmlTypeByName(t.type);
  if (type === undefined || type.blockSize === 0) throw new RangeError(`not a writable ggml type: ${t.type}`);
  return (t.shape.reduce((a, b) => a * b, 1) / type.blockSize) * type.typeSize;
}

/**
 * Writes `spec` as a split model, the way llama.cpp's llama-gguf-split does: files
 * `PREFIX-00001-of-0000N.gguf`..., tensors in order, a new part whenever the next tensor would
 * pass `maxTensors` or `maxBytes`; part 1 carries the metadata, and every part split.no (from 0),
 * split.tensors.count and split.count, in that order. Tensors without data are holes, so multi-gigabyte sets
 * cost their headers on disk. Returns the parts' paths.
 */
export function writeGgufSplit(prefix: string, spec: GgufWriteSpec, options: SplitOptions = {}): string[] {
  const tensors = spec.tensors ?? [];
  const maxTensors = options.maxTensors ?? Infinity;
  const maxBytes = options.maxBytes ?? Infinity;
  if (!(maxTensors >= 1) || !(maxBytes >= 1)) throw new RangeError('writeGgufSplit: maxTensors and maxBytes are at least 1');
  const groups: GgufWriteTensor[][] = options.noTensorsInFirst ? [[], []] : [[]];
  let bytes = 0;
  for (const t of tensors) {
    const current = groups.at(-1)!;
    const size = tensorBytes(t);
    if (current.length > 0 && (current.length + 1 > maxTensors || bytes + size > maxBytes)) {
      groups.push([t]);
      bytes = size;
    } else {
      current.push(t);
      bytes += size;
    }
  }
  if (options.noTensorsInFirst && groups.at(-1)!.length === 0 && groups.length > 1) groups.pop();
  const count = groups.length;
  if (count > 65535) throw new RangeError(`writeGgufSplit: ${count} parts; split.count (a UINT16) holds at most 65535`);
  // In llama-gguf-split's order (and splitModel's): split.no, split.tensors.count, split.count.
  const splitKeys = (no: number): Array<readonly [string, GgufWriteValue]> => [
    ['split.no', { type: 'UINT16', value: no }],
    ['split.tensors.count', { type: 'INT32', value: tensors.length }],
    ['split.count', { type: 'UINT16', value: count }],
  ];
  const metadata = spec.metadata === undefined ? [] : Symbol.iterator in spec.metadata ? [...(spec.metadata as Iterable<readonly [string, GgufWriteValue]>)] : Object.entries(spec.metadata);
  return groups.map((group, no) => {
    const path = splitPartName(prefix, no + 1, count);
    // Part 1: the model's metadata, then the split keys (as llama-gguf-split orders them); the others: the split keys alone.
    writeGgufFile(path, { ...spec, metadata: no === 0 ? [...metadata, ...splitKeys(no)] : splitKeys(no), tensors: group });
    return path;
  });
}
