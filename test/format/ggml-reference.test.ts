import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { encodeGguf, f16ToF32, GGML_TYPES, ggmlTypeByName, parseGguf } from '../../lib/index.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';

// Truth from ggml itself, in ../shared/reference (see its README).
describe.skipIf(SKIP_SHARED)('agreement with ggml', () => {
  it('the type table matches ggml-types.json for all 43 ids', () => {
    const { types, GGML_TYPE_COUNT } = readJson<{
      GGML_TYPE_COUNT: number;
      types: Array<{ id: number; enum_name: string; status: string; blck_size: number; type_size: number; is_quantized: boolean }>;
    }>(sharedPath('reference/ggml-types.json'));
    expect(GGML_TYPES).toHaveLength(GGML_TYPE_COUNT);
    expect(GGML_TYPES.map((t) => ({ id: t.id, name: t.name, blockSize: t.blockSize, typeSize: t.typeSize, quantized: t.quantized, removed: t.removed }))).toEqual(
      types.map((t) => ({
        id: t.id,
        name: t.enum_name.replace(/^GGML_TYPE_/, ''),
        blockSize: t.blck_size,
        typeSize: t.type_size,
        quantized: t.is_quantized,
        removed: t.status === 'removed',
      })),
    );
  });

  it('f16ToF32 gives ggml_fp16_to_fp32 for all 65,536 patterns (any NaN where ggml has one)', () => {
    const table = new Float32Array(new Uint8Array(readFileSync(sharedPath('reference/fp16/all-f16.f32.bin'))).buffer);
    const bits = new Uint32Array(table.buffer);
    const out = new Float32Array(1);
    const outBits = new Uint32Array(out.buffer);
    let mismatches = 0;
    for (let h = 0; h < 65536; h++) {
      out[0] = f16ToF32(h);
      const same = Number.isNaN(table[h]!) ? Number.isNaN(out[0]) : outBits[0] === bits[h];
      if (!same) mismatches++;
    }
    expect(mismatches).toBe(0);
  });

  for (const type of ['Q4_K', 'Q6_K'] as const) {
    it(`${type} block views lie where ggml's struct fields do`, () => {
      const manifest = readJson<{ types: Array<{ name: string; n_rows: number; row_elements: number; block_fields: Array<{ name: string; offset: number; size: number }>; scale_fields: Array<{ name: string; offset: number }> }> }>(
        sharedPath('reference/dequant/manifest.json'),
      );
      const entry = manifest.types.find((t) => t.name === type.replace('_K', '').toLowerCase() + '_K')!;
      const raw = new Uint8Array(readFileSync(sharedPath(`reference/dequant/${entry.name}.blocks.bin`)));
      const g = parseGguf(encodeGguf({ tensors: [{ name: 'w', type, shape: [entry.row_elements, entry.n_rows], data: raw }] }));
      const t = g.tensor('w')!;
      const size = ggmlTypeByName(type)!.typeSize;
      expect(t.nblocks).toBe(raw.length / size);
      for (let i = 0; i < t.nblocks; i++) {
        const block = t.block(i) as unknown as Record<string, number | Uint8Array | Int8Array>;
        for (const field of entry.block_fields) {
          const value = block[field.name];
          if (typeof value === 'number') continue; // the f16 scales, checked below
          const want = raw.subarray(i * size + field.offset, i * size + field.offset + field.size);
          expect(new Uint8Array(value!.buffer, value!.byteOffset, value!.byteLength), `${type} block ${i} ${field.name}`).toEqual(want);
          expect(value!.buffer).toBe(t.bytes.buffer);
        }
        for (const field of entry.scale_fields) {
          const at = i * size + field.offset;
          expect(Object.is(block[field.name], f16ToF32(raw[at]! | (raw[at + 1]! << 8))), `${type} block ${i} ${field.name}`).toBe(true);
        }
      }
    });
  }
});
