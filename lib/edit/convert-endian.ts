// A model in the other byte order: every number of the header after the magic, and every block's
// wide fields (the type table's wideFields) of the tensor data, reversed; strings, byte arrays and
// the layout (offsets, padding, alignment, version) stay, so the file keeps its size and converting
// back gives the original bytes. The magic stays the bytes `GGUF`: the version field tells the
// order (../shared/fixtures/real/README.md; ggml reads its host's order only).
import { readSync } from 'node:fs';
import { GgufError } from '../errors.js';
import { openGguf } from '../file/gguf-file.js';
import { reverseBytes, swapBlockFields } from '../format/byte-order.js';
import type { GgufLayout } from '../format/parse.js';
import { FIXED_VALUE_SIZE, GGUF_VALUE_TYPES } from '../format/value-types.js';
import { commit, refuseInputAsOutput, writeAll, writeTemporaryWith } from './output-file.js';

export interface ConvertEndianOptions {
  /** Called with bytes written so far and in all. */
  onProgress?: (done: number, total: number) => void;
}

/** Writes `input` in byte order `to` as the new file `output`; returns the bytes written. */
export function convertEndian(input: string, output: string, to: 'big' | 'little', options: ConvertEndianOptions = {}): number {
  if (to !== 'big' && to !== 'little') throw new TypeError(`convertEndian: to is 'big' or 'little', not '${String(to)}'`);
  using file = openGguf(input, { split: false, mode: 'read' });
  const { source, layout } = file.partLayouts()[0]!;
  if ((to === 'little') === layout.littleEndian) throw new GgufError('CANNOT_REWRITE', `${input} is ${to}-endian already`, 4);
  refuseInputAsOutput([input], output);
  const header = source.locate(0, layout.headerEnd);
  const headerBytes = new Uint8Array(header.buffer, header.byteOffset, layout.headerEnd).slice();
  swapHeader(headerBytes, layout);
  const total = layout.fileSize;
  // The file opened above, not whatever its name names by now.
  const fd = source.descriptor!();
  const temp = writeTemporaryWith(output, (out) => {
    writeAll(out, headerBytes, 0);
    let at = layout.headerEnd;
    const copyUpTo = (end: number, type?: Parameters<typeof swapBlockFields>[0]) => {
      // Whole blocks per read, so that no field is cut between two.
      const step = type === undefined ? 8 << 20 : Math.max(1, Math.floor((8 << 20) / type.typeSize)) * type.typeSize;
      const buffer = new Uint8Array(Math.min(step, Math.max(0, end - at)));
      while (at < end) {
        const want = Math.min(buffer.length, end - at);
        let got = 0;
        while (got < want) {
          const n = readSync(fd, buffer, got, want - got, at + got);
          if (n === 0) throw new GgufError('FILE_CHANGED', `${input} ended at byte ${at + got} while it was being converted`, at + got);
          got += n;
        }
        const chunk = buffer.subarray(0, want);
        if (type !== undefined) swapBlockFields(type, chunk);
        writeAll(out, chunk, at);
        at += want;
        options.onProgress?.(at, total);
      }
    };
    for (let i = 0; i < layout.tensors.count; i++) {
      const t = layout.tensors.record(i);
      const start = layout.dataOffset + t.offset;
      copyUpTo(start); // the padding before it, as it is
      copyUpTo(start + t.nbytes, t.type);
    }
    copyUpTo(layout.fileSize);
  });
  commit(temp, output);
  return total;
}

/**
 * Reverses, in place, every number of a parsed header after the magic: version, counts, each
 * pair's key length, type and value (string lengths, array element types and counts, elements),
 * each tensor info's name length, n_dims, dimensions, type and offset. Read in the file's order
 * before each is swapped; the parser checked the structure already.
 */
function swapHeader(bytes: Uint8Array, layout: GgufLayout): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const le = layout.littleEndian;
  const countSize = layout.version >= 2 ? 8 : 4;
  const swap = (at: number, width: number) => reverseBytes(bytes, at, width);
  /** A count or length at `at` (read before it is swapped), and swapped. */
  const count = (at: number): number => {
    const n = countSize === 8 ? Number(view.getBigUint64(at, le)) : view.getUint32(at, le);
    swap(at, countSize);
    return n;
  };
  const u32 = (at: number): number => {
    const n = view.getUint32(at, le);
    swap(at, 4);
    return n;
  };
  /** A value of type id `typeId` at `at`; returns where it ends. */
  const value = (at: number, typeId: number): number => {
    const type = GGUF_VALUE_TYPES[typeId]!;
    const fixed = FIXED_VALUE_SIZE[type];
    if (fixed !== undefined) {
      if (fixed > 1) swap(at, fixed);
      return at + fixed;
    }
    if (type === 'STRING') return at + countSize + count(at);
    const elementType = u32(at);
    const length = count(at + 4);
    let pos = at + 4 + countSize;
    const elementSize = FIXED_VALUE_SIZE[GGUF_VALUE_TYPES[elementType]!];
    if (elementSize === 1) return pos + length;
    for (let i = 0; i < length; i++) pos = value(pos, elementType);
    return pos;
  };
  swap(4, 4);
  count(8);
  count(8 + countSize);
  for (const kv of layout.kvs) {
    const keyLength = count(kv.offset);
    const typeAt = kv.offset + countSize + keyLength;
    value(typeAt + 4, u32(typeAt));
  }
  for (let i = 0; i < layout.tensors.count; i++) {
    let at = layout.tensors.infoOffset(i);
    at += countSize + count(at);
    const nDims = u32(at);
    at += 4;
    for (let d = 0; d < nDims; d++, at += countSize) swap(at, countSize);
    swap(at, 4); // type
    swap(at + 4, 8); // offset
  }
}
