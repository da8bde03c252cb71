import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { dequantize, nativeDequantInfo } from '../../lib/index.js';
import { limitNativeIsa } from '../../lib/dequant/dequantize.js';
import { TABLE_FILES, tablePath } from '../../lib/dequant/tables.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';

// Bit-for-bit agreement with ggml's own dequantizers (../shared/reference, see its README).

interface ManifestType {
  name: string;
  n_blocks: number;
  n_elements: number;
  files: Record<'blocks' | 'f32', { file: string; bytes: number; sha256: string }>;
}
interface Manifest {
  types: ManifestType[];
  ggml_lookup_tables_sha256: { tables: Record<string, { bytes: number; sha256_le: string }> };
  fp16_tables: Record<string, { bytes: number; sha256: string }>;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function readChecked(path: string, sha: string): Uint8Array {
  const bytes = new Uint8Array(readFileSync(path));
  expect(sha256(bytes), path).toBe(sha);
  return bytes;
}

/** Indices where two float32 arrays differ as bit patterns (NaN payloads included). */
function bitMismatches(got: Float32Array, want: Uint32Array): number[] {
  const bits = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const bad: number[] = [];
  for (let i = 0; i < want.length; i++) if (bits[i] !== want[i]) bad.push(i);
  return bad;
}

describe.skipIf(SKIP_SHARED)('dequantization against ggml reference vectors', () => {
  const manifest = SKIP_SHARED ? undefined : readJson<Manifest>(sharedPath('reference/dequant/manifest.json'));
  const types = manifest?.types ?? [];
  const native = SKIP_SHARED ? new Set<string>() : new Set(nativeDequantInfo().types);

  const isas = nativeDequantInfo().isas as Array<'portable' | 'avx2' | 'avx512'>;
  afterEach(() => limitNativeIsa('avx512'));

  it('covers all 28 types ggml can dequantize', () => {
    expect(types.map((t) => t.name.toUpperCase()).sort()).toHaveLength(28);
  });

  for (const entry of types) {
    const type = entry.name.toUpperCase();
    const load = () => ({
      blocks: readChecked(sharedPath('reference/dequant', entry.files.blocks.file), entry.files.blocks.sha256),
      want: new Uint32Array(readChecked(sharedPath('reference/dequant', entry.files.f32.file), entry.files.f32.sha256).buffer),
    });

    it(`${type}: TypeScript kernel matches ggml bit for bit (${entry.n_elements} values)`, () => {
      const { blocks, want } = load();
      const out = dequantize(type, blocks, undefined, { backend: 'js' });
      expect(out).toHaveLength(entry.n_elements);
      expect(bitMismatches(out, want)).toEqual([]);
    });

    it(`${type}: WebAssembly kernel matches ggml bit for bit`, () => {
      const { blocks, want } = load();
      expect(bitMismatches(dequantize(type, blocks, undefined, { backend: 'wasm' }), want)).toEqual([]);
    });

    if (native.has(type)) {
      // Every instruction set this CPU has (a type without a kernel in a set uses the next narrower).
      for (const isa of isas) {
        it(`${type}: native kernel up to ${isa} matches ggml bit for bit`, () => {
          limitNativeIsa(isa);
          const { blocks, want } = load();
          expect(bitMismatches(dequantize(type, blocks, undefined, { backend: 'native' }), want)).toEqual([]);
        });
      }
    }
  }

  for (const [file, name] of [['all-f16.f32.bin', 'F16'], ['all-bf16.f32.bin', 'BF16']] as const) {
    it(`${name}: all 65,536 patterns convert as ggml's (NaN payloads and quiet bits too), every backend`, () => {
      const entry = manifest!.fp16_tables[`fp16/${file}`]!;
      const want = new Uint32Array(readChecked(sharedPath('reference/fp16', file), entry.sha256).buffer);
      const patterns = new Uint8Array(new Uint16Array(65536).map((_, i) => i).buffer);
      for (const backend of ['js', 'native', 'wasm'] as const) {
        for (const isa of backend === 'native' ? isas : (['avx512'] as const)) {
          limitNativeIsa(isa);
          expect(bitMismatches(dequantize(name, patterns, undefined, { backend }), want), `${backend} ${isa}`).toEqual([]);
        }
      }
      // The same patterns in a scattered order (i * 40503 mod 65536 is a permutation): groups of
      // sixteen with a few zeros, subnormals, infinities or NaNs among normal halves, which the
      // SIMD kernels write again lane by lane.
      const order = new Uint16Array(65536).map((_, i) => Math.imul(i, 40503) & 0xffff);
      const scattered = new Uint8Array(new Uint16Array(order).buffer);
      const wantScattered = Uint32Array.from(order, (i) => want[i]!);
      for (const backend of ['native', 'wasm'] as const) {
        for (const isa of backend === 'native' ? isas : (['avx512'] as const)) {
          limitNativeIsa(isa);
          expect(bitMismatches(dequantize(name, scattered, undefined, { backend }), wantScattered), `${backend} ${isa}, scattered`).toEqual([]);
        }
      }
    });
  }

  it('the shipped lookup tables are ggml-common.h’s, byte for byte (sha256 from the manifest)', () => {
    const expected = manifest!.ggml_lookup_tables_sha256.tables;
    for (const name of Object.keys(TABLE_FILES) as Array<keyof typeof TABLE_FILES>) {
      const bytes = new Uint8Array(readFileSync(tablePath(name)));
      const want = expected[name];
      expect(want, `manifest entry for ${name}`).toBeDefined();
      expect(bytes.byteLength).toBe(want!.bytes);
      expect(sha256(bytes), name).toBe(want!.sha256_le);
    }
  });
});
