// Editing a model's metadata without touching its tensor data: in place when the new header ends
// where the data section already starts (same-size values always; anything else the padding
// allows), else a new file: the new header, then the data section copied as it is.
import { closeSync, fchmodSync, fstatSync, ftruncateSync, openSync, realpathSync, statSync } from 'node:fs';
import { GgufError } from '../errors.js';
import { openGguf } from '../file/gguf-file.js';
import { alignUp, parseLayout } from '../format/parse.js';
import { encodeGguf, type GgufWriteValue } from '../format/writer.js';
import { encodeHeader, headerLength, kvBytesOf, setKvInPlace, tensorInfoBytesOf, type KvBytes } from './gguf-header.js';
import { recoverHeaderEdit, writeHeaderInPlace } from './header-journal.js';
import { commit, copyRange, refuseInputAsOutput, refuseMappedHere, writeAll, writeTemporaryWith } from './output-file.js';

export interface MetadataEdit {
  /** Keys to set: a value with its type (a key that exists keeps its place). */
  set?: Iterable<readonly [string, GgufWriteValue]>;
  /** Keys to remove (one that is absent is a TypeError). */
  delete?: readonly string[];
}

export interface EditOptions {
  /** Write the edited model here (a new file) instead of editing `input`. */
  out?: string;
  /** Replace `input` with a rewritten copy when the new header does not fit in place. */
  inPlace?: boolean;
  /** Called with bytes written so far and in all, while a new file is written. */
  onProgress?: (done: number, total: number) => void;
}

export interface EditResult {
  readonly path: string;
  /** True when only the header's bytes were written over (the data section did not move). */
  readonly inPlace: boolean;
  /** Bytes written. */
  readonly written: number;
}

/** One pair's bytes, encoded by the writer (the one encoder of values). */
function encodeKv(key: string, value: GgufWriteValue): KvBytes {
  const file = encodeGguf({ metadata: [[key, value]] });
  const layout = parseLayout(new DataView(file.buffer, file.byteOffset, file.byteLength), file.byteLength);
  return { key, bytes: file.slice(24, layout.headerEnd) };
}

/**
 * Applies `edit` to the metadata of the GGUF v3 file at `input` (part 1 holds a split model's).
 * In place when the new header ends where the data section starts: the file is checked first and
 * the header written once, then synced. Otherwise, with `out`, a new file; with `inPlace`, a
 * rewritten copy renamed over `input`; with neither, a TypeError saying so. The input is never
 * written while this thread has it open in mmap mode (CANNOT_REWRITE: close it first). Tensor data stays
 * byte for byte; the alignment is kept.
 */
export function editMetadata(input: string, edit: MetadataEdit, options: EditOptions = {}): EditResult {
  if (options.out === undefined) {
    // Editing the input itself: not while this thread maps it (its open file would read the new
    // header's bytes at the old offsets); and an in-place edit killed half-way left its
    // journal: the old header goes back first.
    refuseMappedHere(input);
    recoverHeaderEdit(input);
  }
  const built = (() => {
    using file = openGguf(input, { split: false, mode: 'read' });
    const { source, layout } = file.partLayouts()[0]!;
    const kvs = kvBytesOf(source, layout);
    for (const key of edit.delete ?? []) {
      const at = kvs.findIndex((kv) => kv.key === key);
      if (at < 0) throw new TypeError(`editMetadata: no key '${key}' to delete`);
      // The alignment decides where the data section starts and which offsets are valid.
      if (key === 'general.alignment' && layout.alignment !== 32) throw new TypeError('editMetadata: general.alignment cannot be deleted (the tensor data is laid out by it)');
      kvs.splice(at, 1);
    }
    for (const [key, value] of edit.set ?? []) {
      if (key === 'general.alignment' && !(value.type === 'UINT32' && value.value === layout.alignment)) {
        throw new TypeError(`editMetadata: general.alignment stays ${layout.alignment} (UINT32): the tensor data is laid out by it`);
      }
      setKvInPlace(kvs, encodeKv(key, value));
    }
    const infos = tensorInfoBytesOf(source, layout);
    const { dev, ino } = source.origin!.identity;
    return { kvs, infos, layout, fileSize: layout.fileSize, identity: `${dev}:${ino}` };
  })();
  const { kvs, infos, layout } = built;
  const header = encodeHeader(kvs, infos, layout.alignment);
  const fits = alignUp(headerLength(kvs, infos), layout.alignment) === layout.dataOffset;
  if (options.out !== undefined) {
    refuseInputAsOutput([input], options.out);
    return rewrite(input, options.out, header, layout.dataOffset, built.fileSize, built.identity, options.onProgress);
  }
  if (fits) return overwriteHeader(input, header, layout.fileSize);
  if (!options.inPlace) {
    throw new TypeError(`editMetadata: the new header (${header.length} bytes) does not fit before the data section (byte ${layout.dataOffset}): give an output file (--out) or ask to replace the input (--in-place)`);
  }
  // Through a symbolic link, the file it names is replaced, not the link.
  const real = realpathSync(input);
  return rewrite(real, real, header, layout.dataOffset, built.fileSize, built.identity, options.onProgress);
}

/**
 * The header written over the old one: the same length, so the data section stays where it is;
 * through a journal, so that a kill leaves the old header or the new one (header-journal.ts).
 */
function overwriteHeader(path: string, header: Uint8Array, size: number): EditResult {
  // Checked first: the file still has the size parsed (a file cut or grown meanwhile is not written).
  if (statSync(path).size !== size) throw new GgufError('FILE_CHANGED', `${path} changed while it was being edited`, size);
  writeHeaderInPlace(path, header, size);
  return { path, inPlace: true, written: header.length };
}

/**
 * A new file: `header`, then the data section of `input` from `dataOffset`, copied by copyRange
 * (inside the kernel where it can).
 */
function rewrite(input: string, output: string, header: Uint8Array, dataOffset: number, size: number, identity: string, onProgress?: EditOptions['onProgress']): EditResult {
  // A file without tensors may end before its aligned data offset: no data to copy then.
  const dataLength = Math.max(0, size - dataOffset);
  const total = header.length + dataLength;
  const fd = openSync(input, 'r');
  let temp: string;
  try {
    // The file parsed, not another renamed over its name since: its data is not at these offsets.
    const now = fstatSync(fd, { bigint: true });
    if (`${now.dev}:${now.ino}` !== identity) throw new GgufError('FILE_CHANGED', `${input} was replaced while it was being edited`, 0);
    temp = writeTemporaryWith(output, (out) => {
      writeAll(out, header);
      let done = header.length;
      copyRange(fd, dataOffset, out, header.length, dataLength, input, (n) => onProgress?.((done += n), total));
      // The input's holes skipped by the kernel copy stay holes: the length makes them.
      ftruncateSync(out, total);
      // Replacing the input: the replacement keeps its permissions.
      if (output === input) fchmodSync(out, fstatSync(fd).mode & 0o7777);
    });
  } finally {
    closeSync(fd);
  }
  commit(temp, output);
  return { path: output, inPlace: false, written: total };
}
