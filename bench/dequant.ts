// npm run bench: dequantizing a TinyLlama-sized tensor (32000 x 2048 = 65.5M elements, the token
// embedding) of every type into a preallocated Float32Array, as a ratio to Float32Array.fill on
// the same array measured just before, in the same run: the native kernels of each instruction set
// this CPU has (AVX-512, AVX2, portable C++), the WebAssembly ones (where built), the TypeScript
// ones, and gguf-py (numpy) where Python has it. Blocks are ggml's own (the quantizer's output in
// ../shared/reference, tiled) where present, else random quants with moderate scales; F16 and BF16
// are normally distributed weights (weightBits). Then async:
// one part on one libuv thread against one per core. Arguments, if any, restrict the first table
// to those type names.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { dequantize, GGML_TYPES, nativeDequantInfo, openGguf, writeGgufFile, type GgmlType } from '../lib/index.js';
import { canDequantize, limitNativeIsa } from '../lib/dequant/dequantize.js';
import { packageRoot } from '../lib/package-root.js';

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

/** ggml's reference blocks of the type (../shared/reference/dequant), or undefined. */
function ggmlBlocks(type: GgmlType): Uint8Array | undefined {
  const shared = process.env.GGUF_MMAP_SHARED ?? join(packageRoot(), '..', 'shared');
  // Plain types (F16, BF16) there are every bit pattern, not data: they keep the synthetic values.
  if (!type.quantized) return undefined;
  const path = join(shared, 'reference', 'dequant', `${type.name.toLowerCase().replace(/_k$/, '_K')}.blocks.bin`);
  return existsSync(path) ? new Uint8Array(readFileSync(path)) : undefined;
}

// F16 and BF16 tensors hold weights: drawn here from a normal distribution of standard deviation
// 0.02 (a usual scale for trained weights): about 1 half in 400 is subnormal or zero. The uniform
// bits used before made 1 in 16 so, which the WebAssembly F16 kernel takes on a slower path.
function weightBits(type: 'F16' | 'BF16', count: number): Uint16Array {
  const bits = new Uint16Array(count);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  let x = 0x2545f491;
  const uniform = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) + 0.5) / 2 ** 32;
  };
  for (let i = 0; i < count; i++) {
    f32[0] = 0.02 * Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
    const f = u32[0]!;
    if (type === 'BF16') {
      bits[i] = f >>> 16;
      continue;
    }
    const sign = (f >>> 16) & 0x8000;
    const exponent = ((f >>> 23) & 0xff) - 112; // the half's exponent field (truncated mantissa: data, not a conversion)
    const magnitude = Math.abs(f32[0]);
    bits[i] = sign | (exponent > 0 ? (exponent << 10) | ((f >>> 13) & 0x3ff) : Math.round(magnitude * 2 ** 24));
  }
  return bits;
}

function benchBlocks(type: GgmlType): Uint8Array {
  const bytes = new Uint8Array((ELEMENTS / type.blockSize) * type.typeSize);
  if (type.name === 'F16' || type.name === 'BF16') {
    const bits = weightBits(type.name, ELEMENTS);
    return new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength); // little-endian host
  }
  const real = ggmlBlocks(type);
  if (real !== undefined && real.length >= type.typeSize) {
    const whole = real.subarray(0, real.length - (real.length % type.typeSize));
    for (let at = 0; at < bytes.length; at += whole.length) bytes.set(whole.subarray(0, Math.min(whole.length, bytes.length - at)), at);
    return bytes;
  }
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

// gguf-py's names for the types it dequantizes (GGMLQuantizationType members); optional.
const GGUF_PY = `
import json, sys, time
import numpy as np
from gguf import GGMLQuantizationType, quants
result = {}
for name, path, rows in json.load(sys.stdin):
    try:
        qtype = GGMLQuantizationType[name]
        data = np.fromfile(path, dtype=np.uint8).reshape(rows, -1)
        quants.dequantize(data, qtype)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            quants.dequantize(data, qtype)
            times.append((time.perf_counter() - start) * 1000)
        result[name] = sorted(times)[1]
    except Exception:
        pass
print(json.dumps(result))
`;

/** Milliseconds gguf-py (numpy) takes per type, on the same blocks; empty when Python lacks it. */
function ggufPy(blocks: Map<string, Uint8Array>): Map<string, number> {
  if (spawnSync('python3', ['-c', 'import gguf, numpy'], { stdio: 'ignore' }).status !== 0) return new Map();
  const jobs = [...blocks].map(([name, bytes]) => {
    const path = join(tmpdir(), `gguf-mmap-bench-${name}.bin`);
    writeFileSync(path, bytes);
    return [name, path, 32000];
  });
  const r = spawnSync('python3', ['-c', GGUF_PY], { input: JSON.stringify(jobs), encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) return new Map();
  return new Map(Object.entries(JSON.parse(r.stdout) as Record<string, number>));
}

async function main(): Promise<void> {
  const out = new Float32Array(ELEMENTS);
  out.fill(1); // fault the pages in before anything is timed
  const { isa, isas, types: nativeTypes } = nativeDequantInfo();
  // Each instruction set's kernels, widest first (a type without a kernel in a set uses the next narrower).
  const sets = [...(isas as Array<'portable' | 'avx2' | 'avx512'>)].reverse();
  const setName = (set: string) => (set === 'portable' ? 'portable C++' : set.toUpperCase());
  const fill = () => medianMs(7, () => out.fill(1.5));
  const only = process.argv.slice(2); // optional type names to restrict the table to
  const types = GGML_TYPES.filter((t) => canDequantize(t) && t.name !== 'F32' && (only.length === 0 || only.includes(t.name)));
  const blocks = new Map<string, Uint8Array>(types.map((t) => [t.name, benchBlocks(t)]));
  const real = types.filter((t) => ggmlBlocks(t) !== undefined).length;
  const py = ggufPy(blocks);

  console.log(`\nDequantize 32000 x 2048 = ${ELEMENTS.toLocaleString('en-US')} elements into a preallocated Float32Array`);
  console.log(`(time / Float32Array.fill on the same array, measured just before; native kernels: ${isa}; median of 5, TypeScript and gguf-py of 3;`);
  console.log(` blocks: ggml's quantizer output tiled for ${real} types, random quants with moderate scales for the others;`);
  console.log(` gguf-py: ${py.size > 0 ? 'numpy, same blocks' : 'not installed (optional: pip install gguf), skipped'})\n`);
  const wasmTypes = nativeDequantInfo().wasm;
  console.log(`| type | fill ms | native ms | ${sets.map((set) => `${setName(set)} / fill`).join(' | ')} | WebAssembly / fill | TypeScript / fill | gguf-py / fill |`);
  console.log(`|---|---:|---:|${sets.map(() => '---:|').join('')}---:|---:|---:|`);
  for (const type of types) {
    const bytes = blocks.get(type.name)!;
    const base = await fill();
    let nativeCells = ['', ...sets.map(() => '')];
    if (nativeTypes.includes(type.name)) {
      const times: number[] = [];
      for (const set of sets) {
        limitNativeIsa(set);
        times.push(await medianMs(5, () => dequantize(type, bytes, out, { backend: 'native' })));
      }
      limitNativeIsa('avx512');
      nativeCells = [times[0]!.toFixed(1), ...times.map((t) => ratio(t, base))];
    }
    const wasm = wasmTypes.includes(type.name) ? ratio(await medianMs(5, () => dequantize(type, bytes, out, { backend: 'wasm' })), base) : '';
    const ts = await medianMs(3, () => dequantize(type, bytes, out, { backend: 'js' }));
    const numpy = py.get(type.name);
    console.log(`| ${type.name} | ${base.toFixed(1)} | ${nativeCells.join(' | ')} | ${wasm} | ${ratio(ts, base)} | ${numpy === undefined ? '' : ratio(numpy, base)} |`);
  }

  // The kernels' own speed, their data in cache: what the WebAssembly / native target compares
  // (on days this VM's memory is slow, the table above is bound by writing memory for both).
  const HOT = 1 << 16;
  // The output at each of the four 16-byte offsets within a 64-byte line, in turn: the native
  // kernels store whole lines, and how the allocator aligned one array moved their time 20-30%
  // from process to process (the buffer is 16-byte aligned, so these four are every case once).
  const hotLines = new Float32Array(HOT + 12);
  const hotOuts = [0, 4, 8, 12].map((at) => hotLines.subarray(at, at + HOT));
  // Rounds of 48 calls of each (12 at each offset), alternating (this VM's speed drifts within
  // seconds), the first 3 of each dropped; medians, in microseconds per call.
  const interleaved = (fns: Array<(out: Float32Array) => unknown>): number[] => {
    const rounds: number[][] = fns.map(() => []);
    for (let round = 0; round < 18; round++) {
      fns.forEach((fn, k) => {
        const start = process.hrtime.bigint();
        for (let i = 0; i < 48; i++) fn(hotOuts[i & 3]!);
        if (round >= 3) rounds[k]!.push(Number(process.hrtime.bigint() - start) / 48e3);
      });
    }
    return rounds.map((times) => times.sort((a, b) => a - b)[times.length >> 1]!);
  };
  console.log(`\nkernels on data in cache: ${HOT.toLocaleString('en-US')} elements (256 KiB out) per call, the output at each 16-byte offset of a cache line in turn; medians of 15 rounds of 48 calls, native, WebAssembly and the copies alternating (native: ${isa})\n`);
  // What every WebAssembly call does besides decoding: the blocks copied into the module's memory
  // and the floats out of it (the same copies, between plain arrays).
  const scratchOut = new Float32Array(HOT);
  const scratchIn = new Uint8Array(HOT * 4);
  console.log('| type | native us/call | WebAssembly us/call | WebAssembly / native | its copies alone / native |');
  console.log('|---|---:|---:|---:|---:|');
  let within = 0;
  let compared = 0;
  for (const type of types) {
    if (!nativeTypes.includes(type.name) || !wasmTypes.includes(type.name)) continue;
    const hot = blocks.get(type.name)!.subarray(0, (HOT / type.blockSize) * type.typeSize);
    const [native, wasm, copies] = interleaved([
      (out) => dequantize(type, hot, out, { backend: 'native' }),
      (out) => dequantize(type, hot, out, { backend: 'wasm' }),
      (out) => {
        scratchIn.set(hot);
        out.set(scratchOut);
      },
    ]) as [number, number, number];
    compared++;
    if (wasm <= 2.5 * native) within++;
    console.log(`| ${type.name} | ${native.toFixed(1)} | ${wasm.toFixed(1)} | ${ratio(wasm, native)} | ${ratio(copies, native)} |`);
  }
  console.log(`target: WebAssembly within 2.5x of native for every type: ${within} of ${compared}`);

  // Threads pay where a kernel is bound by computing, not by writing memory: the portable
  // kernels and the IQ types. Measured as a service runs it: a mapped tensor (pinned, not copied),
  // no out (the output handed over), the event loop turning between calls.
  const cores = availableParallelism();
  console.log(`\ntensor.dequantizeAsync() of a mapped tensor, one part on one thread vs ${cores} parts on ${cores} threads (${cores} cores)\n`);
  console.log('| type | kernels | 1 thread ms | 1 thread / fill | ' + `${cores} threads ms | speed-up |`);
  console.log('|---|---|---:|---:|---:|---:|');
  const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-bench-async-'));
  try {
    for (const name of ['Q4_K', 'Q6_K', 'Q8_0', 'Q3_K', 'IQ2_XXS', 'IQ3_S', 'IQ1_M']) {
      const type = GGML_TYPES.find((t) => t.name === name)!;
      if (only.length > 0 && !only.includes(name)) continue;
      const path = join(dir, `${name}.gguf`);
      writeGgufFile(path, { tensors: [{ name: 'w', type: name, shape: [2048, 32000], data: blocks.get(name) ?? benchBlocks(type) }] });
      using g = openGguf(path);
      const tensor = g.tensor('w')!;
      for (const set of new Set([sets[0]!, 'portable' as const])) {
        limitNativeIsa(set);
        const base = await fill();
        const timed = async (threads: number) => {
          const times: number[] = [];
          for (let i = 0; i < 8; i++) {
            await new Promise((resolve) => setTimeout(resolve, 20));
            const start = performance.now();
            await tensor.dequantizeAsync(undefined, { threads });
            times.push(performance.now() - start);
          }
          return times.slice(1).sort((a, b) => a - b)[3]!;
        };
        const one = await timed(1);
        const many = await timed(cores);
        console.log(`| ${name} | ${set === 'portable' ? 'portable C++' : isa} | ${one.toFixed(1)} | ${ratio(one, base)} | ${many.toFixed(1)} | ${(one / many).toFixed(2)}x |`);
      }
      limitNativeIsa('avx512');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
