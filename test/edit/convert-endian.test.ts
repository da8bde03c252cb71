// gguf-mmap convert-endian: the other byte order for every type, checked against ggml's own
// dequantized values, the block structs as ggml-common.h declares them, and gguf-py's converter.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertEndian } from '../../lib/edit/convert-endian.js';
import { GGML_TYPES, ggmlTypeByName, openGguf, writeGgufFile, type GgmlTypeName } from '../../lib/index.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const dir = tempDir();

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// ggml-common.h's block structs, field by field (type, name, count); the wide fields and their
// offsets below are worked out from these declarations, not from the library's table.
const STRUCTS: Partial<Record<GgmlTypeName, string>> = {
  Q4_0: 'half d; u8 qs[16]',
  Q4_1: 'half d; half m; u8 qs[16]',
  Q5_0: 'half d; u8 qh[4]; u8 qs[16]',
  Q5_1: 'half d; half m; u8 qh[4]; u8 qs[16]',
  Q8_0: 'half d; i8 qs[32]',
  Q8_1: 'half d; half s; i8 qs[32]',
  Q2_K: 'u8 scales[16]; u8 qs[64]; half d; half dmin',
  Q3_K: 'u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d',
  Q4_K: 'half d; half dmin; u8 scales[12]; u8 qs[128]',
  Q5_K: 'half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]',
  Q6_K: 'u8 ql[128]; u8 qh[64]; i8 scales[16]; half d',
  Q8_K: 'f32 d; i8 qs[256]; i16 bsums[16]',
  IQ2_XXS: 'half d; u16 qs[32]',
  IQ2_XS: 'half d; u16 qs[32]; u8 scales[8]',
  IQ3_XXS: 'half d; u8 qs[96]',
  IQ1_S: 'half d; u8 qs[32]; u16 qh[8]',
  IQ4_NL: 'half d; u8 qs[16]',
  IQ3_S: 'half d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]',
  IQ2_S: 'half d; u8 qs[64]; u8 qh[8]; u8 scales[8]',
  IQ4_XS: 'half d; u16 scales_h; u8 scales_l[4]; u8 qs[128]',
  IQ1_M: 'u8 qs[32]; u8 qh[16]; u8 scales[8]',
  TQ1_0: 'u8 qs[48]; u8 qh[4]; half d',
  TQ2_0: 'u8 qs[64]; half d',
  MXFP4: 'u8 e; u8 qs[16]',
  NVFP4: 'u8 d[4]; u8 qs[32]',
  Q1_0: 'half d; u8 qs[16]',
  Q2_0: 'half d; u8 qs[16]',
  F32: 'f32 x',
  F16: 'half x',
  BF16: 'u16 x',
  F64: 'f64 x',
  I8: 'i8 x',
  I16: 'i16 x',
  I32: 'i32 x',
  I64: 'i64 x',
};
const WIDTH: Record<string, number> = { u8: 1, i8: 1, half: 2, u16: 2, i16: 2, f32: 4, i32: 4, f64: 8, i64: 8 };

/** [offset, width] of every field wider than a byte, and the struct's size. */
function wideFieldsOf(decl: string): { fields: Array<[number, number]>; size: number } {
  const fields: Array<[number, number]> = [];
  let at = 0;
  for (const part of decl.split(';')) {
    const m = /^\s*(\w+)\s+\w+(?:\[(\d+)\])?\s*$/.exec(part)!;
    const width = WIDTH[m[1]!]!;
    const count = Number(m[2] ?? 1);
    for (let i = 0; i < count; i++, at += width) if (width > 1) fields.push([at, width]);
  }
  return { fields, size: at };
}

describe('the type table’s wide fields', () => {
  it('are the fields ggml-common.h declares wider than a byte, for every type that is not removed', () => {
    for (const type of GGML_TYPES.filter((t) => !t.removed)) {
      const decl = STRUCTS[type.name];
      expect(decl, type.name).toBeDefined();
      const { fields, size } = wideFieldsOf(decl!);
      expect(size, type.name).toBe(type.typeSize);
      const table = type.wideFields.flatMap(([offset, width, count]) => Array.from({ length: count }, (_, i): [number, number] => [offset + i * width, width]));
      expect(table, type.name).toEqual(fields);
    }
  });

  it("agree with gguf-py's converter where it has one (Q4_0, Q8_0: d; Q4_K: d, dmin; Q6_K: d at 208; MXFP4: none)", () => {
    const want: Array<[GgmlTypeName, Array<[number, number, number]>]> = [
      ['Q4_0', [[0, 2, 1]]],
      ['Q8_0', [[0, 2, 1]]],
      ['Q4_K', [[0, 2, 2]]],
      ['Q6_K', [[208, 2, 1]]],
      ['MXFP4', []],
    ];
    for (const [name, fields] of want) expect(ggmlTypeByName(name)!.wideFields, name).toEqual(fields);
  });
});

interface ManifestType {
  name: string;
  n_elements: number;
  files: Record<'blocks' | 'f32', { file: string }>;
}

describe.skipIf(SKIP_SHARED)('convert-endian against ggml', () => {
  it('every type: the big-endian file dequantizes to ggml’s values bit for bit, and converting back gives the original bytes', () => {
    const { types } = readJson<{ types: ManifestType[] }>(sharedPath('reference/dequant/manifest.json'));
    expect(types).toHaveLength(28);
    const tensors = types.map((entry) => {
      const blocks = new Uint8Array(readFileSync(sharedPath('reference/dequant', entry.files.blocks.file)));
      const type = ggmlTypeByName(entry.name.toUpperCase())!;
      return { name: entry.name, type: type.name, shape: [entry.n_elements], data: blocks };
    });
    // Plain types with no dequantizer in the manifest, and Q8_1 (none in ggml): still swapped and back.
    const extra = (['F32', 'F64', 'I8', 'I16', 'I32', 'I64', 'Q8_1'] as const).map((type, i) => {
      const t = ggmlTypeByName(type)!;
      const data = new Uint8Array(t.typeSize * 4).map((_, j) => (j * 37 + i * 11) & 0xff);
      return { name: `extra.${type}`, type, shape: [t.blockSize * 4], data };
    });
    const little = join(dir, 'all-types.gguf');
    writeGgufFile(little, { metadata: [['general.name', { type: 'STRING', value: 'all types' }]], tensors: [...tensors, ...extra] });
    const big = join(dir, 'all-types.be.gguf');
    const back = join(dir, 'all-types.le.gguf');
    convertEndian(little, big, 'big');
    convertEndian(big, back, 'little');
    expect(readFileSync(back).equals(readFileSync(little))).toBe(true);
    expect(readFileSync(big).length).toBe(readFileSync(little).length);
    using g = openGguf(big);
    expect(g.endian).toBe('big');
    for (const entry of types) {
      const want = new Uint32Array(new Uint8Array(readFileSync(sharedPath('reference/dequant', entry.files.f32.file))).buffer);
      for (const backend of ['auto', 'js', 'wasm'] as const) {
        const got = new Uint32Array(g.tensor(entry.name)!.dequantize(undefined, { backend }).buffer);
        let bad = -1;
        for (let i = 0; i < want.length && bad < 0; i++) if (got[i] !== want[i]) bad = i;
        expect(bad, `${entry.name} (${backend})`).toBe(-1);
      }
    }
    // The native kernels read the file's memory as it is: none for big-endian data.
    expect(() => g.tensor('q8_0')!.dequantize(undefined, { backend: 'native' })).toThrow(expect.objectContaining({ code: 'NO_NATIVE_KERNEL' }));
  });

  it('real files (v1, v2, v3, vocabularies, alignment 64, Q8_0, F16): the same metadata and tensors big-endian, and the same bytes back', () => {
    const real = ['vocab-llama-v1.gguf', 'vocab-falcon-v2.gguf', 'vocab-llama-spm-v3.gguf', 'llama2-tiny-random-f16.gguf', 'tinystories656k-q8_0.gguf', 'synthetic-align64.gguf', 'empty-v3.gguf'];
    for (const name of real) {
      const input = sharedPath('fixtures/real', name);
      const big = join(dir, `${name}.be`);
      const back = join(dir, `${name}.le`);
      convertEndian(input, big, 'big');
      convertEndian(big, back, 'little');
      expect(readFileSync(back).equals(readFileSync(input)), name).toBe(true);
      using a = openGguf(input);
      using b = openGguf(big);
      expect(b.endian, name).toBe('big');
      expect(b.version, name).toBe(a.version);
      const entries = (g: typeof a) => [...g.metadata.keys()].map((k) => [k, g.metadata.type(k), g.metadata.get(k)]);
      expect(entries(b), name).toEqual(entries(a));
      for (const t of a.tensors) {
        if (t.ggmlType.quantized || t.type === 'F16' || t.type === 'F32') expect([...b.tensor(t.name)!.dequantize()], `${name}:${t.name}`).toEqual([...t.dequantize()]);
      }
    }
  });

  it('the quantized models: every tensor of the big-endian copy dequantizes to ggml’s float32 sha256', () => {
    for (const name of ['tiny-llama-q4_k_m', 'tiny-llama-odd-q4_k_m']) {
      const big = join(dir, `${name}.be.gguf`);
      convertEndian(sharedPath('fixtures/quantized', `${name}.gguf`), big, 'big');
      const { tensors } = readJson<{ tensors: Array<{ name: string; f32_sha256: string }> }>(sharedPath('fixtures/quantized', `${name}.json`));
      using g = openGguf(big);
      for (const t of tensors) {
        const values = g.tensor(t.name)!.dequantize();
        const hash = createHashHex(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
        expect(hash, `${name}:${t.name}`).toBe(t.f32_sha256);
      }
    }
  });
});

function createHashHex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

describe('big-endian blocks as gguf-py writes them', () => {
  it('a Q8_0 block with its f16 scale stored big-endian, and Q4_K block views, read in the file’s order', () => {
    // Q8_0: d = 0.5 (f16 0x3800) high byte first, then qs 1..32.
    const q8 = new Uint8Array(34);
    q8.set([0x38, 0x00], 0);
    for (let i = 0; i < 32; i++) q8[2 + i] = i + 1;
    // Q4_K: d = 1.0 (0x3c00), dmin = 2.0 (0x4000), both high byte first.
    const q4k = new Uint8Array(144);
    q4k.set([0x3c, 0x00, 0x40, 0x00], 0);
    const path = join(dir, 'hand-be.gguf');
    writeGgufFile(path, { endian: 'big', tensors: [{ name: 'q8', type: 'Q8_0', shape: [32], data: q8 }, { name: 'q4k', type: 'Q4_K', shape: [256], data: q4k }] });
    using g = openGguf(path);
    expect([...g.tensor('q8')!.dequantize()]).toEqual(Array.from({ length: 32 }, (_, i) => (i + 1) * 0.5));
    const block = g.tensor('q4k')!.blockQ4K(0);
    expect([block.d, block.dmin]).toEqual([1, 2]);
    expect([...g.tensor('q8')!.gatherRows([0, 0])].slice(30, 34)).toEqual([15.5, 16, 0.5, 1]);
  });
});

describe('gguf-mmap convert-endian', () => {
  it('writes a new file; refuses the order the file has, the input as output, and missing options', () => {
    const input = join(dir, 'cli.gguf');
    writeGgufFile(input, { tensors: [{ name: 'w', type: 'F16', shape: [4], data: new Uint8Array([0, 0x3c, 0, 0x40, 0, 0xc0, 0, 0]) }] });
    const out = join(dir, 'cli.be.gguf');
    const r = cli('convert-endian', input, '--to', 'big', '--out', out);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('big-endian');
    {
      using g = openGguf(out);
      expect([...g.tensor('w')!.dequantize()]).toEqual([1, 2, -2, 0]);
    }
    const again = cli('convert-endian', out, '--to', 'big', '--out', join(dir, 'twice.gguf'));
    expect(again.status).toBe(3);
    expect(again.stderr).toMatch(/CANNOT_REWRITE: .* is big-endian already/);
    const before = readFileSync(input);
    const onto = cli('convert-endian', input, '--to', 'big', '--out', input);
    expect(onto.status).toBe(1);
    expect(onto.stderr).toContain('a file being read');
    expect(readFileSync(input).equals(before)).toBe(true);
    expect(cli('convert-endian', input, '--out', join(dir, 'x.gguf')).status).toBe(1);
    expect(cli('convert-endian', input, '--to', 'middle', '--out', join(dir, 'x.gguf')).stderr).toContain('--to big or --to little');
    expect(cli('convert-endian', input, '--to', 'big').stderr).toContain('--out');
    writeFileSync(join(dir, 'bad.gguf'), 'GGUF\x09\x00\x00\x00');
    expect(cli('convert-endian', join(dir, 'bad.gguf'), '--to', 'big', '--out', join(dir, 'y.gguf')).status).toBe(2);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
