// Models split by llama.cpp's llama-gguf-split open as one model from any of their parts.
import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openGguf, parseGguf, writeGgufFile, writeGgufSplit, type GgufWriteSpec } from '../../lib/index.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const dir = tempDir();

interface GgmlPart {
  tensors: { name: string; offset: number; size: number; sha256: string }[];
}

const SETS = [
  { prefix: 'tiny-llama-q4_k_m', parts: 3, whole: 'tiny-llama-q4_k_m' },
  { prefix: 'tiny-llama-odd-q4_k_m', parts: 4, whole: 'tiny-llama-odd-q4_k_m' },
];
const partPath = (prefix: string, n: number, count: number) => sharedPath('fixtures/split', `${prefix}-${String(n).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.gguf`);

describe.skipIf(SKIP_SHARED)('split sets written by llama-gguf-split', () => {
  for (const set of SETS) {
    it(`${set.prefix}: any part opens the whole model, as ggml sees each part, with the unsplit file's bytes and values`, () => {
      const parts = Array.from({ length: set.parts }, (_, i) => partPath(set.prefix, i + 1, set.parts));
      using whole = openGguf(sharedPath('fixtures/quantized', `${set.whole}.gguf`));
      for (const opened of parts) {
        using g = openGguf(opened);
        expect(g.parts.map((p) => p.path)).toEqual(parts);
        expect(g.metadata.get('split.count')).toBe(set.parts);
        expect(g.tensorCount).toBe(whole.tensorCount);
        // Part by part, as ggml's reader reports them: names in order, offsets within the part, bytes.
        const byPart = parts.map((p) => readJson<GgmlPart>(sharedPath('fixtures/split/expected', basename(p).replace(/\.gguf$/, '.ggml.json'))).tensors ?? []);
        const expected = byPart.flatMap((tensors, part) => tensors.map((t) => ({ ...t, part })));
        expect(g.tensors.map((t) => [t.name, t.part, t.offset, t.nbytes])).toEqual(expected.map((t) => [t.name, t.part, t.offset, t.size]));
        for (const t of g.tensors) {
          expect(sha256(t.bytes)).toBe(expected.find((e) => e.name === t.name)!.sha256);
          const original = whole.tensor(t.name)!;
          expect(sha256(t.bytes)).toBe(sha256(original.bytes));
          const a = new Uint32Array(t.dequantize().buffer);
          const b = new Uint32Array(original.dequantize().buffer);
          expect(a.every((bits, i) => bits === b[i])).toBe(true);
        }
      }
    });
  }

  it('split: false opens one part alone; a list of paths opens those parts', () => {
    const parts = Array.from({ length: 3 }, (_, i) => partPath('tiny-llama-q4_k_m', i + 1, 3));
    using alone = openGguf(parts[1]!, { split: false });
    expect(alone.parts).toHaveLength(1);
    expect(alone.tensorCount).toBe(8);
    using listed = openGguf(parts);
    expect(listed.tensorCount).toBe(21);
  });

  it('a missing part is SPLIT_PART_MISSING; parts out of order or from another set are SPLIT_MISMATCH, naming the file', () => {
    const local = join(dir, 'copy');
    mkdirSync(local, { recursive: true });
    const parts = Array.from({ length: 3 }, (_, i) => partPath('tiny-llama-q4_k_m', i + 1, 3));
    const copies = parts.map((p) => join(local, basename(p)));
    parts.forEach((p, i) => copyFileSync(p, copies[i]!));
    rmSync(copies[2]!);
    expect(() => openGguf(copies[0]!)).toThrow(expect.objectContaining({ code: 'SPLIT_PART_MISSING', message: expect.stringContaining(basename(copies[2]!)) }));
    copyFileSync(parts[2]!, copies[2]!);
    // Parts 2 and 3 swapped: split.no disagrees with the name.
    renameSync(copies[1]!, `${copies[1]}.tmp`);
    renameSync(copies[2]!, copies[1]!);
    renameSync(`${copies[1]}.tmp`, copies[2]!);
    expect(() => openGguf(copies[0]!)).toThrow(expect.objectContaining({ code: 'SPLIT_MISMATCH', message: expect.stringContaining('split.no') }));
    // A part of another set in the list.
    expect(() => openGguf([parts[0]!, parts[1]!, partPath('tiny-llama-odd-q4_k_m', 3, 4)])).toThrow(expect.objectContaining({ code: 'SPLIT_MISMATCH' }));
  });
});

describe('split sets written by the writer', () => {
  const spec = (rows: number): GgufWriteSpec => ({
    metadata: { 'general.architecture': { type: 'STRING', value: 'llama' } },
    tensors: Array.from({ length: 5 }, (_, i) => ({ name: `t${i}`, type: 'F32', shape: [rows], data: new Uint8Array(new Float32Array(rows).fill(i).buffer) })),
  });

  it('maxTensors and noTensorsInFirst split like llama-gguf-split; the set opens back whole', () => {
    const paths = writeGgufSplit(join(dir, 'w'), spec(16), { maxTensors: 2, noTensorsInFirst: true });
    expect(paths.map((p) => basename(p))).toEqual(['w-00001-of-00004.gguf', 'w-00002-of-00004.gguf', 'w-00003-of-00004.gguf', 'w-00004-of-00004.gguf']);
    using g = openGguf(paths[2]!);
    expect(g.parts.map((p) => p.tensorCount)).toEqual([0, 2, 2, 1]);
    expect(g.tensors.map((t) => t.f32()[0])).toEqual([0, 1, 2, 3, 4]);
    expect(g.metadata.get('general.architecture')).toBe('llama');
  });

  it('maxBytes; parts whose tensors do not add up to split.tensors.count are SPLIT_MISMATCH', () => {
    const paths = writeGgufSplit(join(dir, 'b'), spec(1024), { maxBytes: 8192 });
    expect(paths).toHaveLength(3);
    using g = openGguf(paths[0]!);
    expect(g.parts.map((p) => p.tensorCount)).toEqual([2, 2, 1]);
    // Part 2 replaced by part 2 of a set with one tensor less: the counts no longer add up.
    const bad = writeGgufSplit(join(dir, 'c'), spec(16), { maxTensors: 3 });
    const other = writeGgufSplit(join(dir, 'd'), { ...spec(16), tensors: spec(16).tensors!.slice(0, 4) }, { maxTensors: 3 });
    copyFileSync(other[1]!, bad[1]!);
    expect(() => openGguf(bad[0]!)).toThrow(expect.objectContaining({ code: 'SPLIT_MISMATCH' }));
  });

  it('parts whose headers are long (thousands of tensor infos) open whole', () => {
    // Parts after the first are read through a small first window, grown when their header is longer.
    const name = (i: number) => `blk.${i}.a_rather_long_tensor_name_for_the_test.weight`;
    const tensors = Array.from({ length: 3000 }, (_, i) => ({ name: name(i), type: 'F32' as const, shape: [4], data: new Uint8Array(new Float32Array([i, 0, 0, 0]).buffer) }));
    const paths = writeGgufSplit(join(dir, 'long'), { tensors }, { maxTensors: 1500, noTensorsInFirst: true });
    using g = openGguf(paths[0]!);
    expect(g.parts.map((p) => p.tensorCount)).toEqual([0, 1500, 1500]);
    expect(g.parts[1]!.dataOffset).toBeGreaterThan(64 << 10);
    expect([g.tensor(name(0))!.f32()[0], g.tensor(name(1499))!.f32()[0], g.tensor(name(2999))!.f32()[0]]).toEqual([0, 1499, 2999]);
  });

  it('a set of parts each over 4 GiB (sparse): tensors across parts read right', () => {
    const big = 4.25 * 2 ** 30;
    const tail = new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer);
    const paths = writeGgufSplit(
      join(dir, 'huge'),
      { tensors: [{ name: 'pad0', type: 'I8', shape: [big] }, { name: 'a', type: 'F32', shape: [4], data: tail }, { name: 'pad1', type: 'I8', shape: [big] }, { name: 'b', type: 'F32', shape: [4], data: tail }] },
      { maxTensors: 2 },
    );
    const g = openGguf(paths[1]!);
    expect(g.parts.every((p) => p.size > 4 * 2 ** 30)).toBe(true);
    expect([g.tensor('a')!.part, g.tensor('b')!.part]).toEqual([0, 1]);
    expect([...g.tensor('b')!.f32()]).toEqual([1, 2, 3, 4]);
    expect(g.tensor('b')!.fileOffset).toBeGreaterThan(4 * 2 ** 30);
    g.close(); // before removing: Windows refuses to delete a mapped file
    for (const p of paths) rmSync(p);
  });
});

describe('a part of a split model opened alone', () => {
  const dir = tempDir();
  const spec: GgufWriteSpec = { tensors: [0, 1, 2, 3].map((i) => ({ name: `t${i}`, type: 'F32', shape: [2], data: new Uint8Array(8).fill(i) })) };

  it('as a list of one part is SPLIT_MISMATCH; renamed (no part name) it is SPLIT_PART_MISSING; { split: false } opens it', () => {
    const [part1] = writeGgufSplit(join(dir, 'alone'), spec, { maxTensors: 2 });
    expect(() => openGguf([part1!])).toThrow(expect.objectContaining({ code: 'SPLIT_MISMATCH' }));
    const renamed = join(dir, 'model.gguf');
    copyFileSync(part1!, renamed);
    expect(() => openGguf(renamed)).toThrow(expect.objectContaining({ code: 'SPLIT_PART_MISSING', message: expect.stringContaining('part 1 of 2') }));
    using alone = openGguf(renamed, { split: false });
    expect(alone.tensorCount).toBe(2);
    // From memory too; a split.count that is not a number is no way around it.
    expect(() => parseGguf(readFileSync(part1!))).toThrow(expect.objectContaining({ code: 'SPLIT_MISMATCH' }));
    expect(parseGguf(readFileSync(part1!), { split: false }).tensorCount).toBe(2);
    const stringCount = join(dir, 'string-count.gguf');
    writeGgufFile(stringCount, { metadata: [['split.count', { type: 'STRING', value: '2' }]], tensors: spec.tensors });
    expect(() => openGguf(stringCount)).toThrow(expect.objectContaining({ code: 'SPLIT_MISMATCH', message: expect.stringContaining('split.count is 2 (STRING)') }));
    // A file not split, and a set of one part, open as before.
    using one = openGguf(writeGgufSplit(join(dir, 'single'), spec, {})[0]!);
    expect(one.tensorCount).toBe(4);
  });
});
