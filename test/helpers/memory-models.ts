import { copyFileSync, truncateSync } from 'node:fs';
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
