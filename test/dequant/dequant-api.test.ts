import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  dequantize,
  dequantizeAsync,
  encodeGguf,
  GgufError,
  ggmlTypeByName,
  liveMappings,
  nativeDequantInfo,
  dequantKernelFor,
  openGguf,
  parseGguf,
  writeGgufFile,
} from '../../lib/index.js';
import { limitNativeIsa } from '../../lib/dequant/dequantize.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';
import { randomBytes } from '../helpers/random.js';

const sha256 = (f: Float32Array) => createHash('sha256').update(new Uint8Array(f.buffer, f.byteOffset, f.byteLength)).digest('hex');
const bits = (f: Float32Array) => new Uint32Array(f.buffer, f.byteOffset, f.length);

/** First index where two float32 arrays differ as bit patterns, or -1 (vitest's toEqual is slow on millions of elements). */
function firstBitDifference(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  const x = bits(a);
  const y = bits(b);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}


function expectGgufError(fn: () => unknown, code: string): GgufError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(GgufError);
    expect((error as GgufError).code).toBe(code);
    return error as GgufError;
  }
  throw new Error(`expected GgufError ${code}`);
}

// Every instruction set this CPU has, narrowest first.
const ISAS = nativeDequantInfo().isas as Array<'portable' | 'avx2' | 'avx512'>;
afterEach(() => limitNativeIsa('avx512'));

describe('native and TypeScript kernels agree', () => {
  // Unrestricted random bytes: NaN, infinite and subnormal scales included.
  for (const type of nativeDequantInfo().types) {
    it(`${type}: identical bits on 3,000 random blocks (every instruction set's kernel and TypeScript)`, () => {
      const t = ggmlTypeByName(type)!;
      const blocks = randomBytes(3000 * t.typeSize, t.id * 7919);
      const js = dequantize(type, blocks, undefined, { backend: 'js' });
      for (const isa of ISAS) {
        limitNativeIsa(isa);
        expect(firstBitDifference(dequantize(type, blocks, undefined, { backend: 'native' }), js), isa).toBe(-1);
      }
      expect(firstBitDifference(dequantize(type, blocks, undefined, { backend: 'wasm' }), js), 'wasm').toBe(-1);
    });
  }

  // Where each type keeps its f16 scales (ggml's block structs): random bytes rarely make every
  // scale of a block special at once, such as both d and m NaN, where the order of q*d + m decides
  // which NaN comes out.
  const F16_SCALES: Readonly<Record<string, number[]>> = {
    Q4_0: [0], Q4_1: [0, 2], Q5_0: [0], Q5_1: [0, 2], Q8_0: [0], Q1_0: [0], Q2_0: [0], Q2_K: [80, 82], Q3_K: [108], Q4_K: [0, 2],
    Q5_K: [0, 2], Q6_K: [208], IQ2_XXS: [0], IQ2_XS: [0], IQ2_S: [0], IQ3_XXS: [0], IQ3_S: [0], IQ1_S: [0], IQ4_NL: [0], IQ4_XS: [0],
    TQ1_0: [52], TQ2_0: [64],
  };
  const SPECIAL_HALVES = [0x7e01, 0xfe02, 0x7c01, 0xfd55, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x0001, 0x83ff, 0x7bff];
  for (const type of nativeDequantInfo().types.filter((t) => F16_SCALES[t] !== undefined)) {
    it(`${type}: identical bits when every scale of a block is NaN (several payloads), infinite, zero or subnormal`, () => {
      const t = ggmlTypeByName(type)!;
      const blocks = randomBytes(2000 * t.typeSize, t.id * 104729);
      const view = new DataView(blocks.buffer);
      const pick = randomBytes(2000 * 2, t.id);
      for (let b = 0; b < 2000; b++) {
        F16_SCALES[type]!.forEach((at, k) => view.setUint16(b * t.typeSize + at, SPECIAL_HALVES[pick[2 * b + k]! % SPECIAL_HALVES.length]!, true));
      }
      const js = dequantize(type, blocks, undefined, { backend: 'js' });
      for (const isa of ISAS) {
        limitNativeIsa(isa);
        expect(firstBitDifference(dequantize(type, blocks, undefined, { backend: 'native' }), js), isa).toBe(-1);
      }
      expect(firstBitDifference(dequantize(type, blocks, undefined, { backend: 'wasm' }), js), 'wasm').toBe(-1);
    });
  }

  it.skipIf(ISAS.length === 0)('lists the instruction sets narrowest first, the chosen one last; a limit chooses a narrower one', () => {
    expect(ISAS[0]).toBe('portable');
    expect(nativeDequantInfo().isa).toBe(ISAS.at(-1));
    for (const isa of ISAS) {
      limitNativeIsa(isa);
      expect(nativeDequantInfo().isa).toBe(isa);
    }
    expect(() => limitNativeIsa('sse9' as never)).toThrow(TypeError);
  });

  // What the kernel reports against what it says of the CPU, so that a set detected wrongly (and
  // its kernels never run, every test above passing on the next narrower set) fails here.
  const cpuFlags = process.platform === 'linux' && process.arch === 'x64' && existsSync('/proc/cpuinfo')
    ? new Set(/^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim().split(/\s+/) ?? [])
    : undefined;
  const AVX512_TYPES = ['F16', 'BF16', 'Q4_0', 'Q8_0', 'Q4_K', 'Q5_K', 'Q6_K'];
  it.skipIf(cpuFlags === undefined || ISAS.length === 0)('finds the instruction sets the CPU has (x64 Linux: /proc/cpuinfo) and takes each type from the widest set that has it', () => {
    const has = (...flags: string[]) => flags.every((f) => cpuFlags!.has(f));
    const avx2 = has('avx2', 'f16c');
    const avx512 = avx2 && has('avx512f', 'avx512bw', 'avx512vl');
    expect(ISAS).toEqual(['portable', ...(avx2 ? ['avx2'] : []), ...(avx512 ? ['avx512'] : [])]);
    for (const isa of ISAS) {
      limitNativeIsa(isa);
      const { kernels, types } = nativeDequantInfo();
      expect(types).toHaveLength(28);
      for (const type of types) expect(kernels[type], `${type} up to ${isa}`).toBe(isa === 'avx512' && !AVX512_TYPES.includes(type) ? 'avx2' : isa);
    }
  });

  it('native kernels run on unaligned input and output', () => {
    const raw = randomBytes(34 * 64 + 1, 5);
    const blocks = raw.subarray(1); // odd byte offset
    const out = new Float32Array(2048 + 3).subarray(3); // output not 16-byte aligned
    dequantize('Q8_0', blocks, out, { backend: 'native' });
    expect(firstBitDifference(out, dequantize('Q8_0', blocks, undefined, { backend: 'js' }))).toBe(-1);
  });
});

describe('dequantize(type, bytes, out?)', () => {
  it('writes into out and returns it, allocating nothing else', () => {
    const blocks = randomBytes(18 * 4, 9);
    const out = new Float32Array(200).fill(7);
    expect(dequantize('Q4_0', blocks, out)).toBe(out);
    expect(out[128]).toBe(7); // only the 128 decoded elements are written
  });

  it('accepts ggml lower-case names', () => {
    const blocks = randomBytes(144, 3);
    expect(firstBitDifference(dequantize('q4_K', blocks), dequantize('Q4_K', blocks))).toBe(-1);
  });

  it('refuses what it cannot decode, with a code', () => {
    expectGgufError(() => dequantize('Q8_1', new Uint8Array(36)), 'NO_DEQUANTIZER');
    expectGgufError(() => dequantize('Q4_2', new Uint8Array(20)), 'NO_DEQUANTIZER');
    expectGgufError(() => dequantize('I64', new Uint8Array(8)), 'NO_DEQUANTIZER');
    expectGgufError(() => dequantize('Q9_9', new Uint8Array(8)), 'UNKNOWN_TENSOR_TYPE');
    expectGgufError(() => dequantize('Q4_K', new Uint8Array(143)), 'BAD_DATA_LENGTH');
    expectGgufError(() => dequantize('Q4_K', new Uint8Array(144), new Float32Array(255)), 'OUTPUT_TOO_SMALL');
    expectGgufError(() => dequantize('F64', new Uint8Array(8), undefined, { backend: 'native' }), 'NO_NATIVE_KERNEL');
    expectGgufError(() => dequantize('F64', new Uint8Array(8), undefined, { backend: 'wasm' }), 'NO_WASM_KERNEL');
    // Big-endian data: never the native kernels (they read the bytes as they are); the others swap a copy.
    expectGgufError(() => dequantize('Q8_0', new Uint8Array(34), undefined, { backend: 'native', littleEndian: false }), 'NO_NATIVE_KERNEL');
    expect([...dequantize('F16', new Uint8Array([0x3c, 0, 0xc0, 0]), undefined, { backend: 'wasm', littleEndian: false })]).toEqual([1, -2]);
  });

  it('dequantKernelFor tells which kernel a call would use', () => {
    // The addon is loaded in this suite: 'auto' takes its kernel where it has one, else TypeScript.
    expect(dequantKernelFor('Q4_K')).toBe('native');
    expect(dequantKernelFor('q4_K', { backend: 'js' })).toBe('js');
    expect(dequantKernelFor('F32')).toBe('js');
    expect(dequantKernelFor('F16', { littleEndian: false })).toBe('js');
    expect(dequantKernelFor('Q4_K', { backend: 'wasm' })).toBe('wasm');
    expectGgufError(() => dequantKernelFor('Q8_1'), 'NO_DEQUANTIZER');
    expectGgufError(() => dequantKernelFor('F64', { backend: 'native' }), 'NO_NATIVE_KERNEL');
    expect(() => dequantKernelFor('Q4_K', { backend: 'gpu' as never })).toThrow(TypeError);
  });

  it('the WebAssembly kernels decode tensors larger than their scratch area, into an offset out', () => {
    // Blocks go in 262,144 values' worth at a time and come out 4,096 values at a time: both
    // tensors take two copies in, the second short, and end on a short piece out.
    const q4k = randomBytes(144 * 1100, 77); // 281,600 values
    for (const block of [0, 1099]) new DataView(q4k.buffer).setUint16(block * 144, 0x2c00, true);
    const f16 = randomBytes(2 * 300_001, 78);
    for (const [type, blocks, values] of [['Q4_K', q4k, 281_600], ['F16', f16, 300_001]] as const) {
      const js = dequantize(type, blocks, undefined, { backend: 'js' });
      const out = new Float32Array(values + 6).fill(7);
      dequantize(type, blocks, out.subarray(5, 5 + values), { backend: 'wasm' });
      expect(out.subarray(0, 5).every((v) => v === 7) && out[values + 5] === 7, type).toBe(true);
      expect(firstBitDifference(out.subarray(5, 5 + values), js), type).toBe(-1);
    }
  });

  it('plain types convert as values in both byte orders', () => {
    const values = [0, -1.5, 3, 127, -128];
    for (const littleEndian of [true, false]) {
      const cases: Array<[string, number, (v: DataView, o: number, x: number) => void]> = [
        ['F32', 4, (v, o, x) => v.setFloat32(o, x, littleEndian)],
        ['F64', 8, (v, o, x) => v.setFloat64(o, x, littleEndian)],
        ['I8', 1, (v, o, x) => v.setInt8(o, Math.trunc(x))],
        ['I16', 2, (v, o, x) => v.setInt16(o, Math.trunc(x), littleEndian)],
        ['I32', 4, (v, o, x) => v.setInt32(o, Math.trunc(x), littleEndian)],
      ];
      for (const [type, width, set] of cases) {
        const bytes = new Uint8Array(values.length * width);
        const view = new DataView(bytes.buffer);
        values.forEach((x, i) => set(view, i * width, x));
        const want = values.map((x) => (type.startsWith('I') ? Math.trunc(x) : x));
        expect([...dequantize(type, bytes, undefined, { littleEndian })], `${type} le=${littleEndian}`).toEqual(want);
      }
    }
  });

  it('dequantizeAsync gives the same bits as dequantize, split into parts', async () => {
    const blocks = randomBytes(144 * 8192, 11); // 2M elements: split across threads
    const want = dequantize('Q4_K', blocks);
    const progress: number[] = [];
    const got = await dequantizeAsync('Q4_K', blocks, undefined, { threads: 3, onProgress: (done) => progress.push(done) });
    expect(firstBitDifference(got, want)).toBe(-1);
    expect(progress).toHaveLength(3);
    expect(progress.at(-1)).toBe(want.length);
    // A type without a native kernel runs in TypeScript slices.
    const iq = randomBytes(66 * 4096, 12);
    expect(firstBitDifference(await dequantizeAsync('IQ2_XXS', iq), dequantize('IQ2_XXS', iq))).toBe(-1);
  });

  it('dequantizeAsync leaves the event loop running', async () => {
    const blocks = randomBytes(210 * 65536, 13); // 16M Q6_K elements
    const out = new Float32Array(65536 * 256);
    let ticks = 0;
    let running = true;
    const tick = (): void => {
      ticks++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    await dequantizeAsync('Q6_K', blocks, out, { threads: 1 });
    running = false;
    expect(ticks).toBeGreaterThan(0);
  });
});

describe.skipIf(SKIP_SHARED)('tensors of llama.cpp-quantized files', () => {
  interface Expected {
    tensors: Array<{ name: string; type: string; shape: number[]; f32_sha256: string }>;
  }
  for (const name of ['tiny-llama-q4_k_m', 'tiny-llama-odd-q4_k_m']) {
    it(`${name}: every tensor dequantizes to ggml's float32 (sha256), both backends`, () => {
      const expected = readJson<Expected>(sharedPath('fixtures/quantized', `${name}.json`));
      using file = openGguf(sharedPath('fixtures/quantized', `${name}.gguf`));
      for (const want of expected.tensors) {
        const tensor = file.tensor(want.name)!;
        for (const backend of ['auto', 'js'] as const) {
          expect(sha256(tensor.dequantize(undefined, { backend })), `${want.name} (${want.type}) ${backend}`).toBe(want.f32_sha256);
        }
      }
    });

    it(`${name}: dequantizeRows and dequantizeAsync agree with dequantize`, async () => {
      const expected = readJson<Expected>(sharedPath('fixtures/quantized', `${name}.json`));
      using file = openGguf(sharedPath('fixtures/quantized', `${name}.gguf`));
      for (const want of expected.tensors) {
        const tensor = file.tensor(want.name)!;
        const whole = tensor.dequantize();
        const rowLength = want.shape[0]!;
        const rows = whole.length / rowLength;
        expect(tensor.rows).toBe(rows);
        const first = Math.floor(rows / 3);
        const count = Math.min(2, rows - first);
        const part = tensor.dequantizeRows(first, count);
        expect(firstBitDifference(part, whole.subarray(first * rowLength, (first + count) * rowLength))).toBe(-1);
        expect(sha256(await tensor.dequantizeAsync())).toBe(want.f32_sha256);
      }
    });
  }
});

describe('tensor dequantization', () => {
  it('plain tensors of a big-endian file convert in the file’s byte order', () => {
    const values = new Float32Array([1.5, -2, 0.25, 65504]);
    const be = new Uint8Array(16);
    values.forEach((x, i) => new DataView(be.buffer).setFloat32(4 * i, x, false));
    const f16be = new Uint8Array([0x3c, 0x00, 0xc0, 0x00]); // 1.0, -2.0 as big-endian halves
    const g = parseGguf(
      encodeGguf({
        endian: 'big',
        tensors: [
          { name: 'f32', type: 'F32', shape: [4], data: be },
          { name: 'f16', type: 'F16', shape: [2], data: f16be },
        ],
      }),
    );
    expect([...g.tensor('f32')!.dequantize()]).toEqual([...values]);
    expect([...g.tensor('f16')!.dequantize()]).toEqual([1, -2]);
    expect([...g.tensor('f16')!.dequantizeRows(0, 1)]).toEqual([1, -2]);
  });

  it('dequantizeRows checks its range', () => {
    const g = parseGguf(encodeGguf({ tensors: [{ name: 'w', type: 'Q8_0', shape: [64, 3], data: randomBytes(34 * 6, 2) }] }));
    const w = g.tensor('w')!;
    expect(w.dequantizeRows(2, 1)).toHaveLength(64);
    expect(w.dequantizeRows(3, 0)).toHaveLength(0);
    for (const [first, count] of [[3, 1], [-1, 1], [0, 4], [0.5, 1]]) {
      expect(expectGgufError(() => w.dequantizeRows(first!, count!), 'ROW_OUT_OF_RANGE').offset).toBe(w.fileOffset);
    }
  });

  it('closing the file while dequantizeAsync runs is safe: the work finishes on the old mapping', async () => {
    const path = join(tempDir(), 'async-close.gguf');
    const data = randomBytes(144 * 32768, 21); // 8M Q4_K elements, 4.7 MB
    writeGgufFile(path, { tensors: [{ name: 'w', type: 'Q4_K', shape: [256, 32768], data }] });
    const want = dequantize('Q4_K', data);
    const before = liveMappings();
    for (let i = 0; i < 5; i++) {
      const file = openGguf(path);
      const pending = file.tensor('w')!.dequantizeAsync(undefined, { threads: 2 });
      file.close();
      file.close(); // twice is fine
      expect(firstBitDifference(await pending, want)).toBe(-1);
      expect(() => file.tensor('w')!.dequantize()).toThrow(GgufError);
    }
    expect(liveMappings()).toBe(before);
  });
});

describe('WebAssembly and TypeScript async work and out', () => {
  it('a throwing onProgress rejects and leaves out untouched (several slices), as on the native path', async () => {
    const t = ggmlTypeByName('Q8_0')!;
    const nblocks = 400_000; // 13.6 MB: several 4 MB slices
    const blocks = new Uint8Array(nblocks * t.typeSize).map((_, i) => (i % 34 === 1 ? 0x3c : i & 0x7f));
    for (const backend of ['js', 'wasm'] as const) {
      const out = new Float32Array(nblocks * 32).fill(7);
      let calls = 0;
      const failing = dequantizeAsync('Q8_0', blocks, out, { backend, onProgress: () => { calls++; throw new Error('stop'); } });
      await expect(failing).rejects.toThrow('stop');
      expect(calls).toBe(1);
      expect(out.every((v) => v === 7), backend).toBe(true);
      // And when nothing fails, out gets the values.
      expect(await dequantizeAsync('Q8_0', blocks, out, { backend })).toBe(out);
      expect(out[33]).toBe(dequantize('Q8_0', blocks.subarray(34, 68), undefined, { backend: 'js' })[1]);
    }
  });
});
