import { assetPath, readAsset } from '#platform/assets';
import type { GgmlType } from '../format/ggml-types.js';
import { KERNEL_TABLES, tableBytes } from './tables.js';

/**
 * The portable C++ kernels compiled to WebAssembly (native/dequant_wasm.cc, built by
 * scripts/build-wasm.sh), for where the addon does not load. The module has its own memory:
 * blocks are copied in and floats copied out a chunk at a time, so a tensor of any size passes
 * through a scratch area of IN_FLOATS floats' blocks and OUT_FLOATS floats.
 */
interface WasmExports {
  memory: { readonly buffer: ArrayBuffer };
  _initialize(): void;
  buffer(bytes: number): number;
  set_table(name: number, bytes: number, length: number): number;
  has_kernel(typeId: number): number;
  dequantize(typeId: number, src: number, nblocks: number, out: number): number;
}

interface WasmKernels {
  exports: WasmExports;
  typeIds: ReadonlySet<number>;
}

// The part of the WebAssembly API used here (TypeScript's Node types do not declare it).
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: object };
}
const { WebAssembly } = globalThis as unknown as { WebAssembly: WebAssemblyApi };

// The C++ library's abort path can write a message to stderr through WASI; the kernels never
// reach it, and there is no file here to write to: each call fails with ENOSYS (52).
const ENOSYS = 52;
const WASI_STUBS = { wasi_snapshot_preview1: { fd_close: () => ENOSYS, fd_seek: () => ENOSYS, fd_write: () => ENOSYS } };

// Blocks are copied in for up to IN_FLOATS floats at a time (one copy of at most 512 KiB, F16's),
// then decoded OUT_FLOATS floats at a time into one small area that stays in the first-level
// cache, and copied out from there. Measured in cache: 8-10% faster for every type than decoding
// 65,536 floats per call; 1,024-2,048 a call pay more in calls than they save.
const IN_FLOATS = 1 << 18;
const OUT_FLOATS = 1 << 12;

// Views of the module's memory, made again only when it grows (its buffer replaced: the old views'
// length becomes 0) or the scratch area moves.
interface ScratchViews {
  at: number;
  floats: Float32Array;
  memory: Uint8Array;
}
let scratch: ScratchViews | undefined;

function scratchViews(exports: WasmExports, at: number, outFloats: number): ScratchViews {
  if (scratch === undefined || scratch.at !== at || scratch.floats.length !== outFloats) {
    const { buffer } = exports.memory;
    scratch = { at, floats: new Float32Array(buffer, at, outFloats), memory: new Uint8Array(buffer) };
  }
  return scratch;
}

let kernels: WasmKernels | undefined;
let unavailable: string | undefined;

/** Where the package keeps the module. */
export function wasmPath(): string {
  return assetPath('wasm/dequant.wasm');
}

function load(): WasmKernels | undefined {
  if (kernels !== undefined || unavailable !== undefined) return kernels;
  const path = wasmPath();
  try {
    const bytes = readAsset('wasm/dequant.wasm');
    if (bytes === undefined) {
      unavailable = `${path} is missing (npm run build:wasm)`;
      return undefined;
    }
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), WASI_STUBS);
    const exports = instance.exports as unknown as WasmExports;
    exports._initialize();
    for (const name of KERNEL_TABLES) {
      const bytes = tableBytes(name);
      const label = new TextEncoder().encode(`${name}\0`);
      const at = exports.buffer(label.length + bytes.length);
      if (at === 0) throw new Error('out of memory');
      const memory = new Uint8Array(exports.memory.buffer);
      memory.set(label, at);
      memory.set(bytes, at + label.length);
      if (exports.set_table(at, at + label.length, bytes.length) !== 1) throw new Error(`the module refused table ${name}`);
    }
    const typeIds = new Set<number>();
    for (let id = 0; id < 64; id++) if (exports.has_kernel(id) === 1) typeIds.add(id);
    kernels = { exports, typeIds };
  } catch (error) {
    unavailable = `${path} did not load: ${error instanceof Error ? error.message : String(error)}`;
  }
  return kernels;
}

/** Why there are no WebAssembly kernels (undefined when there are). */
export function wasmUnavailableReason(): string | undefined {
  load();
  return unavailable;
}

/** Type ids with a WebAssembly kernel; none when the module is absent. */
export function wasmTypeIds(): ReadonlySet<number> {
  return load()?.typeIds ?? new Set();
}

/**
 * Decodes `nblocks` blocks of `type` from `bytes` into `out` from `outIndex` (the caller has
 * checked the lengths), as the TypeScript kernels do; the type must have a WebAssembly kernel.
 */
export function wasmDequantize(type: GgmlType, bytes: Uint8Array, nblocks: number, out: Float32Array, outIndex: number): void {
  const { exports } = load()!;
  const { blockSize, typeSize } = type;
  const outBlocks = Math.max(1, Math.floor(OUT_FLOATS / blockSize));
  const inBlocks = Math.max(outBlocks, Math.floor(IN_FLOATS / blockSize));
  const outFloats = outBlocks * blockSize;
  // Floats first (4-byte aligned), blocks after them; the same area every call.
  const at = exports.buffer(outFloats * 4 + inBlocks * typeSize);
  if (at === 0) throw new RangeError('dequantize: the WebAssembly module is out of memory');
  const src = at + outFloats * 4;
  for (let first = 0; first < nblocks; first += inBlocks) {
    const count = Math.min(inBlocks, nblocks - first);
    scratchViews(exports, at, outFloats).memory.set(first === 0 && count * typeSize === bytes.length ? bytes : bytes.subarray(first * typeSize, (first + count) * typeSize), src);
    for (let done = 0; done < count; done += outBlocks) {
      const n = Math.min(outBlocks, count - done);
      if (exports.dequantize(type.id, src + done * typeSize, n, at) !== 1) throw new TypeError(`dequantize: the WebAssembly module has no kernel for ${type.name}`);
      // Views checked after the call: the module's memory may have grown in it.
      const { floats } = scratchViews(exports, at, outFloats);
      out.set(n === outBlocks ? floats : floats.subarray(0, n * blockSize), outIndex + (first + done) * blockSize);
    }
  }
}
