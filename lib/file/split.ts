import { basename, dirname, join } from '#platform/path';
import { GgufError } from '../errors.js';
import type { GgufLayout, KvRecord } from '../format/parse.js';
import { splitPartName } from '../format/part-name.js';

// llama.cpp's split convention (llama-gguf-split, and the converter's --split-max-size):
// PREFIX-%05d-of-%05d.gguf, numbered from 1; in every part, split.no (from 0), split.count (the
// number of parts) and split.tensors.count (the tensors of all parts together).
const PART_NAME = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/;


/** A file name as the convention names parts (`PREFIX-00002-of-00005.gguf`): its prefix, number (from 1) and count. */
export function partNameOf(name: string): { prefix: string; index: number; count: number } | undefined {
  const m = PART_NAME.exec(name);
  if (m === null) return undefined;
  const index = Number(m[2]);
  const count = Number(m[3]);
  return count >= 1 && index >= 1 && index <= count ? { prefix: m[1]!, index, count } : undefined;
}

/**
 * Every part of the split set `path` belongs to, in order, if its name follows the convention;
 * else just `path`. Whether they exist is found by opening them (see partMissing).
 */
export function splitSetOf(path: string): string[] {
  const part = partNameOf(basename(path));
  if (part === undefined) return [path];
  return Array.from({ length: part.count }, (_, i) => join(dirname(path), splitPartName(part.prefix, i + 1, part.count)));
}

/** SPLIT_PART_MISSING for `part` of the set `path` names, which failed to open with `error` (ENOENT). */
export function partMissing(part: string, path: string, error: unknown): GgufError | undefined {
  if ((error as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT') return undefined;
  return new GgufError('SPLIT_PART_MISSING', `part '${part}' of the split model '${path}' is missing`, 0);
}

function kvOf(layout: GgufLayout, key: string): KvRecord | undefined {
  return layout.kvs.find((kv) => kv.key === key);
}

/**
 * Checks that `layouts` (the parts' headers, in order) are one model as the convention says:
 * every part's split.count is the number of parts and its split.no its position; the first
 * part's split.tensors.count is the number of tensors in all of them; no tensor is in two parts.
 * Each failure is SPLIT_MISMATCH naming the file.
 */
export function checkSplitSet(layouts: readonly GgufLayout[], paths: readonly string[]): void {
  const mismatch = (i: number, why: string, offset: number) => new GgufError('SPLIT_MISMATCH', `'${paths[i]}': ${why}`, offset);
  layouts.forEach((layout, i) => {
    const no = kvOf(layout, 'split.no');
    const count = kvOf(layout, 'split.count');
    if (count === undefined) throw mismatch(i, 'has no split.count: not a part of a split model', 0);
    if (typeof count.value !== 'number') throw mismatch(i, `split.count is ${String(count.value)} (${count.type}), not a part count`, count.offset);
    if (count.value !== layouts.length) throw mismatch(i, `split.count is ${count.value}, but the set has ${layouts.length} parts`, count.offset);
    if (no === undefined || no.value !== i) {
      throw mismatch(i, `split.no is ${String(no?.value)}, but it is part ${i + 1} of ${layouts.length} (split.no counts from 0)`, no?.offset ?? 0);
    }
  });
  const total = kvOf(layouts[0]!, 'split.tensors.count');
  const tensors = layouts.reduce((sum, l) => sum + l.tensors.count, 0);
  if (total === undefined || total.value !== tensors) {
    throw mismatch(0, `split.tensors.count is ${String(total?.value)}, but the parts hold ${tensors} tensors`, total?.offset ?? 0);
  }
  layouts.forEach((layout, i) => {
    if (i === 0) return;
    const earlier = layouts.slice(0, i).map((l) => l.tensors);
    for (let k = 0; k < layout.tensors.count; k++) {
      const j = layout.tensors.nameIn(earlier, k);
      if (j >= 0) throw mismatch(i, `tensor '${layout.tensors.name(k)}' is also in part ${j + 1}`, layout.tensors.infoOffset(k));
    }
  });
}

/**
 * A file opened alone that says it is one part of a split model (split.count over 1) is refused,
 * as llama.cpp refuses it: it would open as half a model. SPLIT_PART_MISSING when it was named
 * alone (the other parts are not beside it under the convention's names), SPLIT_MISMATCH when it
 * was given as a list of one part.
 */
export function checkNotAPart(layout: GgufLayout, path: string, listed: boolean): void {
  const count = kvOf(layout, 'split.count');
  if (count === undefined || (typeof count.value === 'number' && count.value <= 1)) return;
  // A list of one part, or a split.count that is not a number: SPLIT_MISMATCH, naming the key.
  if (listed || typeof count.value !== 'number') checkSplitSet([layout], [path]);
  const parts = count.value as number;
  const no = kvOf(layout, 'split.no')?.value;
  const which = typeof no === 'number' ? `part ${no + 1} of ${parts}` : `one of ${parts} parts`;
  throw new GgufError(
    'SPLIT_PART_MISSING',
    `'${path}' is ${which} of a split model, and the other parts are not beside it as ${splitPartName(basename(path).replace(/\.gguf$/, ''), 1, parts)} etc.: open every part (a list), or this one alone with { split: false } (--no-split in the CLI)`,
    count.offset,
  );
}
