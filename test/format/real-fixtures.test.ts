import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GgufError, openGguf, parseGguf, type GgufFile } from '../../lib/index.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';

// The expected JSON files come from an independent inspector (see ../shared/fixtures/real/README.md).
interface ExpectedEntry {
  type: string;
  value: unknown;
  array_type?: string;
  length?: number;
  data_offset?: number;
  data_nbytes?: number;
  data_sha256?: string;
  kv_offset?: number;
}
interface ExpectedTensor {
  name: string;
  type: string;
  type_id: number;
  shape: number[];
  offset: number;
  nbytes: number;
  sha256: string;
}
interface Expected {
  version: number;
  tensor_count: number;
  kv_count: number;
  alignment: number;
  data_offset: number;
  file_size: number;
  endian: string;
  metadata: Record<string, ExpectedEntry>;
  tensors: ExpectedTensor[];
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const plain = (v: unknown): unknown => (ArrayBuffer.isView(v) ? Array.from(v as unknown as ArrayLike<unknown>) : v);

function checkAgainst(g: GgufFile, expected: Expected, fileBytes: Uint8Array): void {
  expect(g.version).toBe(expected.version);
  expect(g.endian).toBe(expected.endian);
  expect(g.alignment).toBe(expected.alignment);
  expect(g.dataOffset).toBe(expected.data_offset);
  expect(g.fileSize).toBe(expected.file_size);
  expect(g.metadata.size).toBe(expected.kv_count);
  expect([...g.metadata.keys()]).toEqual(Object.keys(expected.metadata));

  for (const [key, want] of Object.entries(expected.metadata)) {
    const info = g.metadata.info(key)!;
    expect(info.type, key).toBe(want.type);
    if (want.kv_offset !== undefined) expect(info.offset, key).toBe(want.kv_offset);
    if (want.type !== 'ARRAY') {
      expect(g.metadata.get(key), key).toEqual(want.value);
      continue;
    }
    expect(info.arrayType, key).toBe(want.array_type);
    expect(info.length, key).toBe(want.length);
    if (want.data_offset !== undefined) {
      expect(info.dataOffset, key).toBe(want.data_offset);
      expect(info.dataBytes, key).toBe(want.data_nbytes);
      expect(sha256(fileBytes.subarray(info.dataOffset, info.dataOffset! + info.dataBytes!)), key).toBe(want.data_sha256);
    }
    const all = plain(g.metadata.get(key)) as unknown[];
    const lazy = g.metadata.array(key)!;
    if (Array.isArray(want.value)) {
      expect(all, key).toEqual(want.value);
    } else {
      const summary = want.value as { first: unknown[]; last: unknown[] };
      expect(all.slice(0, 5), key).toEqual(summary.first);
      expect(all.slice(-5), key).toEqual(summary.last);
      // Element access agrees with the whole-array decode at both ends.
      expect([0, 1, 2, 3, 4].map((i) => plain(lazy.at(i))), key).toEqual(summary.first);
      expect([-5, -4, -3, -2, -1].map((i) => plain(lazy.at(i))), key).toEqual(summary.last);
    }
    expect(all.length, key).toBe(want.length);
  }

  expect(g.tensors.map((t) => t.name)).toEqual(expected.tensors.map((t) => t.name));
  for (const want of expected.tensors) {
    const t = g.tensor(want.name)!;
    expect({ type: t.type, typeId: t.typeId, shape: t.shape, offset: t.offset, nbytes: t.nbytes }).toEqual({
      type: want.type,
      typeId: want.type_id,
      shape: want.shape,
      offset: want.offset,
      nbytes: want.nbytes,
    });
    expect(t.fileOffset).toBe(expected.data_offset + want.offset);
    expect(sha256(t.bytes), want.name).toBe(want.sha256);
  }
}

const realDir = SKIP_SHARED ? '' : sharedPath('fixtures/real');
const quantDir = SKIP_SHARED ? '' : sharedPath('fixtures/quantized');
const cases = SKIP_SHARED
  ? []
  : [
      ...readdirSync(realDir)
        .filter((f) => f.endsWith('.gguf'))
        .map((f) => ({ file: join(realDir, f), expected: join(realDir, 'expected', basename(f, '.gguf') + '.json') })),
      ...readdirSync(quantDir)
        .filter((f) => f.endsWith('.gguf'))
        .map((f) => ({ file: join(quantDir, f), expected: join(quantDir, basename(f, '.gguf') + '.json') })),
    ];

describe.skipIf(SKIP_SHARED)('real GGUF files match the independent inspector', () => {
  it('finds the fixtures', () => {
    expect(cases.length).toBeGreaterThanOrEqual(9);
  });

  for (const { file, expected } of cases) {
    it(`${basename(file)} through the mapping`, () => {
      const want = readJson<Expected>(expected);
      const bytes = new Uint8Array(readFileSync(file));
      using g = openGguf(file);
      checkAgainst(g, want, bytes);
      expect(g.tensors.every((t) => t.nbytes === 0 || t.bytes.buffer !== bytes.buffer)).toBe(true);
    });

    it(`${basename(file)} from memory, with tensors viewing the caller's buffer`, () => {
      const want = readJson<Expected>(expected);
      const bytes = new Uint8Array(readFileSync(file));
      const g = parseGguf(bytes);
      checkAgainst(g, want, bytes);
      for (const t of g.tensors) expect(t.bytes.buffer).toBe(bytes.buffer);
    });
  }

  it('rejects the pre-release FUGG file at byte 0', () => {
    const file = join(realDir, 'invalid/prerelease-magic-fugg.gguf');
    const want = readJson<{ error: { offset: number } }>(join(realDir, 'expected/invalid-prerelease-magic-fugg.json'));
    let error: unknown;
    try {
      openGguf(file);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(GgufError);
    expect((error as GgufError).code).toBe('BAD_MAGIC');
    expect((error as GgufError).offset).toBe(want.error.offset);
    expect((error as GgufError).message).toContain('FUGG');
  });
});
