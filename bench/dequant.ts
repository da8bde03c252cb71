// npm run bench (second part): dequantizing a TinyLlama-sized tensor (32000 x 2048 = 65.5M
// elements, the token embedding) of every type into a preallocated Float32Array, as a ratio to
// Float32Array.fill on the same array measured just before, in the same run. Then async: one
// part on one libuv thread against two parts on two. Arguments, if any, restrict the first table
// to those type names.
import { availableParallelism } from 'node:os';
import { dequantize, dequantizeAsync, GGML_TYPES, nativeDequantInfo, type GgmlType } from '../lib/index.js';
import { canDequantize, forcePortableNativeKernels } from '../lib/dequant/dequantize.js';

const ELEMENTS = 32000 * 2048;

// Offsets of each type's f16 scale fields in its block (ggml's block structs). The benchmark
// writes a moderate scale there, as real files have: random bits would give NaN, infinite and
// subnormal scales, and subnormal arithmetic is slow on x86.
const F16_SCALES: Readonly<Record<string, number[]>> = {
  Q4_0: [0], Q4_1: [0, 2], Q5_0: [0], Q5_1: [0, 2], Q8_0: [0], Q1_0: [0], Q2_0: [0],
  Q2_K: [80, 82], Q3_K: [108], Q4_K: [0, 2], Q5_K: [0, 2], Q6_K: [208],
  IQ2_XXS: [0], IQ2_XS: [0], IQ2_S: [0], IQ3_XXS: [0], IQ3_S: [0], IQ1_S: [0], IQ4_NL: [0], IQ4_XS: [0],
  TQ1_0: [52], TQ2_0: [64],
};

function benchBlocks(type: GgmlType): Uint8Array {
  const bytes = new Uint8Array((ELEMENTS / type.blockSize) * type.typeSize);
  let x = 0x9e3779b9;
  for (let i = 0; i < bytes.length; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x;
    bytes[i + 1] = x >>> 8;
    bytes[i + 2] = x >>> 16;
    bytes[i + 3] = x >>> 24;
  }
  const view = new DataView(bytes.buffer);
  const scales = F16_SCALES[type.name] ?? [];
  for (let o = 0; o < bytes.length; o += type.typeSize) for (const at of scales) view.setUint16(o + at, 0x2c00, true); // 1/16
  if (type.name === 'Q8_K') for (let o = 0; o < bytes.length; o += type.typeSize) view.setFloat32(o, 0.01, true);
  if (type.name === 'F16' || type.name === 'BF16') for (let o = 1; o < bytes.length; o += 2) bytes[o]! &= 0x3f; // finite values
  if (type.name === 'F32') for (let o = 3; o < bytes.length; o += 4) bytes[o]! &= 0x3f;
  if (type.name === 'F64') for (let o = 7; o < bytes.length; o += 8) bytes[o]! &= 0x3f;
  return bytes;
}

async function medianMs(runs: number, fn: () => unknown): Promise<number> {
  await fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)]!;
}

const ratio = (ms: number, base: number) => `${(ms / base).toFixed(2)}x`;

async function main(): Promise<void> {
  const out = new Float32Array(ELEMENTS);
  out.fill(1); // fault the pages in before anything is timed
  const { isa, types: nativeTypes } = nativeDequantInfo();
  const fill = () => medianMs(7, () => out.fill(1.5));

  console.log(`\nDequantize 32000 x 2048 = ${ELEMENTS.toLocaleString('en-US')} elements into a preallocated Float32Array`);
  console.log(`(time / Float32Array.fill on the same array, measured just before; native kernels: ${isa}; median of 5, TypeScript of 3)\n`);
  console.log('| type | fill ms | native ms | native / fill | portable C++ / fill | TypeScript ms | TypeScript / fill |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  const only = process.argv.slice(2); // optional type names to restrict the table to
  for (const type of GGML_TYPES) {
    if (!canDequantize(type) || type.name === 'F32' || (only.length > 0 && !only.includes(type.name))) continue;
    const bytes = benchBlocks(type);
    const base = await fill();
    let nativeCells = ['', '', ''];
    if (nativeTypes.includes(type.name)) {
      const simd = await medianMs(5, () => dequantize(type, bytes, out, { backend: 'native' }));
      forcePortableNativeKernels(true);
      const portable = await medianMs(5, () => dequantize(type, bytes, out, { backend: 'native' }));
      forcePortableNativeKernels(false);
      nativeCells = [simd.toFixed(1), ratio(simd, base), ratio(portable, base)];
    }
    const ts = await medianMs(3, () => dequantize(type, bytes, out, { backend: 'js' }));
    console.log(`| ${type.name} | ${base.toFixed(1)} | ${nativeCells.join(' | ')} | ${ts.toFixed(1)} | ${ratio(ts, base)} |`);
  }

  const cores = availableParallelism();
  console.log(`\ndequantizeAsync, one part on one thread vs ${cores} parts on ${cores} threads (${cores} cores)\n`);
  console.log('| type | kernels | 1 thread ms | 1 thread / fill | ' + `${cores} threads ms | speed-up |`);
  console.log('|---|---|---:|---:|---:|---:|');
  for (const name of ['Q4_K', 'Q6_K', 'Q8_0']) {
    const type = GGML_TYPES.find((t) => t.name === name)!;
    const bytes = benchBlocks(type);
    for (const portable of [false, true]) {
      forcePortableNativeKernels(portable);
      const base = await fill();
      const one = await medianMs(7, () => dequantizeAsync(type, bytes, out, { threads: 1 }));
      const many = await medianMs(7, () => dequantizeAsync(type, bytes, out, { threads: cores }));
      console.log(`| ${name} | ${portable ? 'portable C++' : isa} | ${one.toFixed(1)} | ${ratio(one, base)} | ${many.toFixed(1)} | ${(one / many).toFixed(2)}x |`);
    }
    forcePortableNativeKernels(false);
  }
}

await main();
