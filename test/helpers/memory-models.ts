import { copyFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openGguf, writeGgufFile, type GgufFile, type GgufTensor, type GgufWriteTensor, type GgufWriteValue } from '../../lib/index.js';
import { readJson, sharedPath } from './shared.js';

let sizes: Record<string, number> | undefined;

/**
 * A model of ../shared/memory remade at `path`: its recorded header, then zeros up to the model's
 * full size (a sparse file; the estimates read only the header). Returns `path`.
 */
export function remakeMemoryModel(model: string, path: string): string {
  sizes ??= readJson<Record<string, number>>(sharedPath('memory', 'sizes.json'));
  const size = sizes[model];
  if (size === undefined) throw new Error(`${model} is not in ../shared/memory/sizes.json`);
  copyFileSync(sharedPath('memory', 'headers', `${model}.head`), path);
  truncateSync(path, size);
  return path;
}

/**
 * Models of ../shared/memory opened on demand, each remade once in `dir`, all closed after the
 * calling suite (before its folder is removed: Windows cannot delete a mapped file).
 */
export function memoryModelOpener(dir: string): (model: string) => GgufFile {
  const opened = new Map<string, GgufFile>();
  afterAll(() => {
    for (const file of opened.values()) file.close();
  });
  return (model) => {
    let file = opened.get(model);
    if (file === undefined) {
      file = openGguf(remakeMemoryModel(model, join(dir, model)));
      opened.set(model, file);
    }
    return file;
  };
}

/**
 * `file`'s header written again at `path` with changes: its metadata (less the vocabulary, which
 * the estimates do not read) with `metadata` over it, and its tensors as `tensor` makes them (by
 * default, as they are), data left as zeros. Returns `path`.
 */
export function rewriteModel(
  file: GgufFile,
  path: string,
  changes: { metadata?: Record<string, GgufWriteValue>; tensor?: (t: GgufTensor) => GgufWriteTensor } = {},
): string {
  const metadata: Record<string, GgufWriteValue> = {};
  for (const key of file.metadata.keys()) {
    if (key.startsWith('tokenizer.ggml.')) continue;
    const type = file.metadata.type(key)!;
    if (type === 'ARRAY') {
      const array = file.metadata.array(key)!;
      metadata[key] = { type: 'ARRAY', arrayType: array.elementType, value: array.toArray() as never };
    } else metadata[key] = { type, value: file.metadata.get(key) } as GgufWriteValue;
  }
  Object.assign(metadata, changes.metadata);
  const tensors = file.tensors.map((t) => changes.tensor?.(t) ?? { name: t.name, type: t.ggmlType.name, shape: [...t.shape] });
  writeGgufFile(path, { metadata, tensors });
  return path;
}
