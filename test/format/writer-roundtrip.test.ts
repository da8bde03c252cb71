import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  encodeGguf,
  GGML_TYPES,
  openGguf,
  parseGguf,
  writeGgufFile,
  type GgufWriteTensor,
  type GgufWriteValue,
} from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';

// One value of every type, with the edges of each range.
const METADATA: Array<[string, GgufWriteValue, unknown]> = [
  ['u8', { type: 'UINT8', value: 255 }, 255],
  ['i8', { type: 'INT8', value: -128 }, -128],
  ['u16', { type: 'UINT16', value: 65535 }, 65535],
  ['i16', { type: 'INT16', value: -32768 }, -32768],
  ['u32', { type: 'UINT32', value: 4294967295 }, 4294967295],
  ['i32', { type: 'INT32', value: -2147483648 }, -2147483648],
  ['f32', { type: 'FLOAT32', value: 0.1 }, Math.fround(0.1)],
  ['f32.nan', { type: 'FLOAT32', value: NaN }, NaN],
  ['f32.neg0', { type: 'FLOAT32', value: -0 }, -0],
  ['bool.true', { type: 'BOOL', value: true }, true],
  ['bool.false', { type: 'BOOL', value: false }, false],
  ['string', { type: 'STRING', value: 'héllo ✓ 🦙' }, 'héllo ✓ 🦙'],
  ['string.empty', { type: 'STRING', value: '' }, ''],
  ['u64.small', { type: 'UINT64', value: 2 ** 53 - 1 }, 2 ** 53 - 1],
  ['u64.big', { type: 'UINT64', value: 2n ** 64n - 1n }, 2n ** 64n - 1n],
  ['i64.small', { type: 'INT64', value: -(2 ** 53 - 1) }, -(2 ** 53 - 1)],
  ['i64.big', { type: 'INT64', value: -(2n ** 63n) }, -(2n ** 63n)],
  ['f64', { type: 'FLOAT64', value: Math.PI }, Math.PI],
  ['f64.inf', { type: 'FLOAT64', value: -Infinity }, -Infinity],
  ['arr.u8', { type: 'ARRAY', arrayType: 'UINT8', value: [0, 1, 255] }, new Uint8Array([0, 1, 255])],
  ['arr.i8', { type: 'ARRAY', arrayType: 'INT8', value: [-1, 127] }, new Int8Array([-1, 127])],
  ['arr.u16', { type: 'ARRAY', arrayType: 'UINT16', value: [1, 65535] }, new Uint16Array([1, 65535])],
  ['arr.i16', { type: 'ARRAY', arrayType: 'INT16', value: [-2, 3] }, new Int16Array([-2, 3])],
  ['arr.u32', { type: 'ARRAY', arrayType: 'UINT32', value: [7, 4294967295] }, new Uint32Array([7, 4294967295])],
  ['arr.i32', { type: 'ARRAY', arrayType: 'INT32', value: [-7, 8] }, new Int32Array([-7, 8])],
  ['arr.f32', { type: 'ARRAY', arrayType: 'FLOAT32', value: [1.5, -2.25] }, new Float32Array([1.5, -2.25])],
  ['arr.u64', { type: 'ARRAY', arrayType: 'UINT64', value: [1n, 2n ** 64n - 1n] }, new BigUint64Array([1n, 2n ** 64n - 1n])],
  ['arr.i64', { type: 'ARRAY', arrayType: 'INT64', value: [-1n, 5n] }, new BigInt64Array([-1n, 5n])],
  ['arr.f64', { type: 'ARRAY', arrayType: 'FLOAT64', value: [0.5, 1e300] }, new Float64Array([0.5, 1e300])],
  ['arr.bool', { type: 'ARRAY', arrayType: 'BOOL', value: [true, false, true] }, [true, false, true]],
  ['arr.string', { type: 'ARRAY', arrayType: 'STRING', value: ['a', '', 'ü'] }, ['a', '', 'ü']],
  ['arr.empty', { type: 'ARRAY', arrayType: 'INT32', value: [] }, new Int32Array([])],
  [
    'arr.nested',
    {
      type: 'ARRAY',
      arrayType: 'ARRAY',
      value: [
        { arrayType: 'STRING', value: ['x', 'y'] },
        { arrayType: 'ARRAY', value: [{ arrayType: 'INT16', value: [-3] }] },
      ],
    },
    [['x', 'y'], [new Int16Array([-3])]],
  ],
];

/** One tensor of every ggml type, with random bytes and the smallest legal shape. */
function everyTypeTensors(): GgufWriteTensor[] {
  return GGML_TYPES.filter((t) => !t.removed).map((t) => ({
    name: `t.${t.name}`,
    type: t.name,
    shape: [t.blockSize * 2, 3],
    data: new Uint8Array(randomBytes(t.typeSize * 2 * 3)),
  }));
}

describe('writer round trips', () => {
  for (const endian of ['little', 'big'] as const) {
    for (const alignment of [1, 2, 4, 8, 16, 32, 64, 128, 256]) {
      it(`every value and tensor type, ${endian}-endian, alignment ${alignment}`, () => {
        const tensors = everyTypeTensors();
        const bytes = encodeGguf({
          endian,
          alignment,
          metadata: METADATA.map(([k, v]) => [k, v] as const),
          tensors,
        });
        const g = parseGguf(bytes);
        expect(g.version).toBe(3);
        expect(g.endian).toBe(endian);
        expect(g.alignment).toBe(alignment);
        expect(g.dataOffset % alignment).toBe(0);
        for (const [key, written, expected] of METADATA) {
          expect(g.metadata.type(key), key).toBe(written.type);
          expect(g.metadata.get(key), key).toEqual(expected);
        }
        expect(g.metadata.get('general.alignment')).toBe(alignment === 32 ? undefined : alignment);
        expect(g.tensors.map((t) => t.name)).toEqual(tensors.map((t) => t.name));
        for (const [i, t] of g.tensors.entries()) {
          expect(t.fileOffset % alignment).toBe(0);
          expect(t.bytes).toEqual(tensors[i]!.data);
          expect(t.bytes.buffer).toBe(bytes.buffer);
        }
      });
    }
  }

  for (const version of [1, 2] as const) {
    for (const endian of ['little', 'big'] as const) {
      it(`version ${version} files, ${endian}-endian: every value type and tensors`, () => {
        const tensors = everyTypeTensors();
        const bytes = encodeGguf({ version, endian, metadata: METADATA.map(([k, v]) => [k, v] as const), tensors });
        const g = parseGguf(bytes);
        expect(g.version).toBe(version);
        for (const [key, , expected] of METADATA) expect(g.metadata.get(key), key).toEqual(expected);
        expect(g.metadata.array('arr.string')!.at(-1)).toBe('ü');
        for (const [i, t] of g.tensors.entries()) {
          expect(t.shape).toEqual(tensors[i]!.shape);
          expect(t.bytes).toEqual(tensors[i]!.data);
        }
      });
    }
  }

  it('version 1 stores counts, lengths and dimensions as uint32', () => {
    const v1 = encodeGguf({ version: 1, metadata: { a: { type: 'STRING', value: 'b' } }, tensors: [{ name: 't', type: 'I8', shape: [2, 3] }] });
    const dv = new DataView(v1.buffer);
    const u32s = (at: number, n: number) => Array.from({ length: n }, (_, i) => dv.getUint32(at + 4 * i, true));
    // tensor count, kv count, key length 1 then 'a', value type 8 (STRING), string length 1 then 'b'
    expect(u32s(8, 3)).toEqual([1, 1, 1]);
    expect(v1[20]).toBe(0x61);
    expect(u32s(21, 2)).toEqual([8, 1]);
    // tensor name length 1, 't', n_dims 2, dims 2 and 3 (uint32), type 24 (I8)
    expect(u32s(30, 1)).toEqual([1]);
    expect(u32s(35, 4)).toEqual([2, 2, 3, 24]);
    expect(parseGguf(v1).tensor('t')!.shape).toEqual([2, 3]);
  });

  it('typed tensor views are zero-copy little-endian and byte-swapped copies big-endian', () => {
    const values = new Float32Array([1, -2.5, 3e-41, Infinity]);
    const halves = new Uint16Array([0x3c00, 0xc000, 0x0001]);
    const ints = new BigInt64Array([-1n, 2n ** 62n]);
    const le = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const swapped = (a: ArrayBufferView, w: number) => {
      const b = new Uint8Array(le(a));
      for (let i = 0; i < b.length; i += w) b.subarray(i, i + w).reverse();
      return b;
    };
    for (const endian of ['little', 'big'] as const) {
      const pick = (a: ArrayBufferView, w: number) => (endian === 'little' ? le(a) : swapped(a, w));
      const g = parseGguf(
        encodeGguf({
          endian,
          tensors: [
            { name: 'f32', type: 'F32', shape: [4], data: pick(values, 4) },
            { name: 'f16', type: 'F16', shape: [3], data: pick(halves, 2) },
            { name: 'i64', type: 'I64', shape: [2], data: pick(ints, 8) },
          ],
        }),
      );
      for (const [name, want] of [['f32', values], ['f16', halves], ['i64', ints]] as const) {
        const t = g.tensor(name)!;
        const view = t.view();
        expect(view).toEqual(want);
        expect(t.zeroCopyView).toBe(endian === 'little');
        expect(view.buffer === t.bytes.buffer).toBe(endian === 'little');
      }
    }
  });

  it('writeGgufFile leaves tensors without data as zeros and maps back identically', () => {
    const dir = tempDir();
    const spec = { metadata: { k: { type: 'UINT32', value: 7 } as GgufWriteValue }, tensors: everyTypeTensors() };
    spec.tensors[0]!.data = undefined;
    const path = join(dir, 'rt.gguf');
    const layout = writeGgufFile(path, spec);
    using g = openGguf(path);
    expect(g.fileSize).toBe(layout.fileSize);
    expect(g.tensors[0]!.bytes.every((b) => b === 0)).toBe(true);
    for (const [i, t] of g.tensors.entries()) {
      if (i > 0) expect(t.bytes).toEqual(spec.tensors[i]!.data);
    }
    expect(Buffer.from(encodeGguf(spec)).equals(readFileSync(path))).toBe(true);
  });
});
