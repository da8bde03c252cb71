// Splitting a model into parts and merging them back, byte for byte as llama.cpp's
// llama-gguf-split writes them (../shared/fixtures/split/README.md states what it writes):
// part 1 holds the model's keys, every part split.no, split.tensors.count and split.count (set
// in that order, each moving last), tensor data padded to 32 bytes each, the last one too.
import { GgufError } from '../errors.js';
import { openGguf, type GgufFile } from '../file/gguf-file.js';
import { splitPartName } from '../format/write-split.js';
import { alignUp } from '../format/parse.js';
import { encodeHeader, kvBytesOf, scalarKv, setKv, type KvBytes, type TensorInfo } from './gguf-header.js';
import { existsSync, ftruncateSync, renameSync, rmSync } from 'node:fs';
import { commit, copyRange, refuseInputAsOutput, writeAll, writeTemporaryWith } from './output-file.js';

// llama-gguf-split pads every tensor to GGUF_DEFAULT_ALIGNMENT, whatever general.alignment says.
const PAD = 32;
/** split.count is a UINT16. */
export const MAX_PARTS = 65535;

export interface SplitModelOptions {
  /** A new part before tensor N, 2N, ... (llama-gguf-split --split-max-tensors). */
  maxTensors?: number;
  /** At most this many bytes of tensors (each padded to 32) per part (--split-max-size; 1M = 10^6). */
  maxBytes?: number;
  /** Part 1 holds the metadata only (--no-tensor-first-split). */
  noTensorsInFirst?: boolean;
  /** Called with bytes of tensor data copied so far and in all. */
  onProgress?: (done: number, total: number) => void;
}

interface Piece {
  readonly file: GgufFile;
  readonly index: number;
}

function tensorInfos(file: GgufFile, indices: readonly number[]): TensorInfo[] {
  let offset = 0;
  return indices.map((i) => {
    const t = file.tensors[i]!;
    const info = { name: t.name, shape: t.shape, typeId: t.typeId, offset };
    offset += alignUp(t.nbytes, PAD);
    return info;
  });
}

/**
 * The part file at `path` (a temporary beside it, returned): `header`, then each piece's bytes
 * copied from its file (inside the kernel where it can), padded to 32 with zeros. The pieces are
 * read through the descriptors the file was opened with (read mode), never reopened by path: a
 * file replaced meanwhile is not read at the old one's offsets.
 */
function writePart(path: string, header: Uint8Array, pieces: readonly Piece[], progress: Progress): string {
  return writeTemporaryWith(path, (out) => {
    writeAll(out, header, 0);
    let at = header.length;
    for (const { file, index } of pieces) {
      const t = file.tensors[index]!;
      const part = file.partLayouts()[t.part]!;
      copyRange(part.source.descriptor!(), t.fileOffset, out, at, t.nbytes, part.path!, progress.add);
      const padded = alignUp(t.nbytes, PAD);
      if (padded > t.nbytes) writeAll(out, new Uint8Array(padded - t.nbytes), at + t.nbytes);
      at += padded;
    }
    // The kernel's copy keeps an input's holes as holes and writes nothing for them: a part
    // ending in one would end early without its length set.
    ftruncateSync(out, at);
  });
}

/** Bytes of tensor data copied so far, reported to `onProgress` against `total`. */
interface Progress {
  readonly add: (n: number) => void;
}

function progressOf(total: number, onProgress: ((done: number, total: number) => void) | undefined): Progress {
  let done = 0;
  return { add: (n) => onProgress?.((done += n), total) };
}

// llama-gguf-split pads tensors to 32 whatever the file says, and writes no general.alignment in
// parts 2..N: for another alignment its output would not read back. Refused rather than
// written differently from the tool.
function refuseOtherAlignment(alignment: number, path: string): void {
  if (alignment !== PAD) throw new GgufError('CANNOT_REWRITE', `${path} has alignment ${alignment}; split and merge write llama-gguf-split's layout, which is 32`, 0);
}

/** Splits the model at `input` into `PREFIX-0000K-of-0000N.gguf`; returns the parts' paths. */
export function splitModel(input: string, prefix: string, options: SplitModelOptions): string[] {
  const { maxTensors, maxBytes } = options;
  if ((maxTensors === undefined) === (maxBytes === undefined)) throw new TypeError('splitModel: one of maxTensors and maxBytes');
  if (!((maxTensors ?? maxBytes)! >= 1)) throw new RangeError('splitModel: the limit is at least 1');
  using file = openGguf(input, { split: false, mode: 'read' });
  const { source, layout } = file.partLayouts()[0]!;
  refuseOtherAlignment(layout.alignment, input);
  const modelKvs = kvBytesOf(source, layout);
  // The parts' tensors, as the tool groups them.
  const groups: number[][] = options.noTensorsInFirst ? [[], []] : [[]];
  let bytes = 0;
  file.tensors.forEach((t, i) => {
    const size = alignUp(t.nbytes, PAD);
    const split = maxTensors !== undefined ? i > 0 && i % maxTensors === 0 : bytes + size > maxBytes!;
    if (split) {
      if (groups.at(-1)!.length === 0) throw new GgufError('CANNOT_REWRITE', `a part would hold no tensors: tensor '${t.name}' alone is over ${maxBytes} bytes`, t.fileOffset);
      groups.push([]);
      bytes = 0;
    }
    groups.at(-1)!.push(i);
    bytes += size;
  });
  const count = groups.length;
  // split.count and split.no are UINT16: a 65,536th part would wrap the count to 0 ("not split").
  if (count > MAX_PARTS) throw new GgufError('CANNOT_REWRITE', `the split would make ${count} parts; split.count holds at most ${MAX_PARTS}`, 0);
  const progress = progressOf(file.tensors.reduce((n, t) => n + t.nbytes, 0), options.onProgress);
  const paths = groups.map((_, no) => splitPartName(prefix, no + 1, count));
  for (const path of paths) refuseInputAsOutput([input], path);
  const written: string[] = [];
  try {
    groups.forEach((group, no) => {
      const kvs: KvBytes[] = no === 0 ? [...modelKvs] : [];
      setKv(kvs, scalarKv('split.no', 'UINT16', no));
      setKv(kvs, scalarKv('split.count', 'UINT16', 0)); // the tool's placeholder, set again below
      setKv(kvs, scalarKv('split.tensors.count', 'INT32', file.tensorCount));
      setKv(kvs, scalarKv('split.count', 'UINT16', count));
      const header = encodeHeader(kvs, tensorInfos(file, group), layout.alignment);
      written.push(writePart(paths[no]!, header, group.map((index) => ({ file, index })), progress));
    });
  } catch (error) {
    for (const temp of written) rmSync(temp, { force: true });
    throw error;
  }
  // Every part written: the set appears at once (renames), not part by part. A rename that fails
  // removes the temporaries not yet renamed (the parts renamed before it stay: said in the error).
  written.forEach((temp, no) => {
    try {
      renameSync(temp, paths[no]!);
    } catch (error) {
      for (const left of written.slice(no)) rmSync(left, { force: true });
      if (no > 0) (error as Error).message += ` (parts 1 to ${no} of ${count} were written; the set is incomplete)`;
      throw error;
    }
  });
  return paths;
}

/**
 * Merges the split set `part` belongs to into `output`, as `llama-gguf-split --merge` does: part
 * 1's keys (split.count set to 0, so the result is not taken for a part), every part's tensors in
 * order, their data joined. The data section is the unsplit model's.
 */
export function mergeModel(part: string, output: string, options: { onProgress?: (done: number, total: number) => void } = {}): void {
  using model = openGguf(part, { mode: 'read' });
  const parts = model.partLayouts();
  if (parts.length < 2) throw new GgufError('CANNOT_REWRITE', `${part} is not a part of a split model (no split.count above 1)`, 0);
  refuseInputAsOutput(parts.map((p) => p.path!), output);
  if (existsSync(output)) throw Object.assign(new Error(`${output} exists; merge writes a new file`), { code: 'EEXIST' });
  for (const p of parts) refuseOtherAlignment(p.layout.alignment, p.path!);
  // Part 1's header is copied as it is and every part's data byte for byte: parts in another
  // byte order than part 1 would land in the merged file unconverted.
  const other = parts.find((p) => p.layout.littleEndian !== parts[0]!.layout.littleEndian);
  if (other !== undefined) {
    const order = (p: typeof other) => (p.layout.littleEndian ? 'little' : 'big');
    throw new GgufError('CANNOT_REWRITE', `${other.path} is ${order(other)}-endian and ${parts[0]!.path} ${order(parts[0]!)}-endian: convert-endian the parts to one byte order first`, 4);
  }
  const kvs = kvBytesOf(parts[0]!.source, parts[0]!.layout);
  setKv(kvs, scalarKv('split.count', 'UINT16', 0));
  const all = model.tensors.map((_, index) => index);
  const header = encodeHeader(kvs, tensorInfos(model, all), parts[0]!.layout.alignment);
  const progress = progressOf(model.tensors.reduce((n, t) => n + t.nbytes, 0), options.onProgress);
  commit(writePart(output, header, all.map((index) => ({ file: model, index })), progress), output);
}
