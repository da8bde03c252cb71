import { bufferConstants } from '#platform/buffer';
import { availableParallelism } from '#platform/os';
import { nextTurn } from '#platform/turn';
import { GgufError } from '../errors.js';
import { ggmlTypeById, ggmlTypeByName, type GgmlType } from '../format/ggml-types.js';
import { swapBlockFields } from '../format/byte-order.js';
import { addon, addonUnavailableReason, optionalAddon } from '#platform/native';
import type { NativeDequantJob } from '../native.js';
import { checkBuffer, checkBufferPages } from '../file/source.js';
import type { BlockKernel } from './kernel.js';
import { TS_KERNELS } from './kernels.js';
import { KERNEL_TABLES, tableBytes } from './tables.js';
import { wasmDequantize, wasmTypeIds, wasmUnavailableReason } from './wasm.js';

/**
 * 'auto' (the default) uses the addon's kernel when it has one for the type, else the
 * WebAssembly one (the same C++, for where the addon does not load), else TypeScript; 'native'
 * and 'wasm' fail with NO_NATIVE_KERNEL / NO_WASM_KERNEL when there is none; 'js' always uses
 * TypeScript. All give the same bits.
 */
export type DequantBackend = 'auto' | 'native' | 'wasm' | 'js';

export interface DequantizeOptions {
  backend?: DequantBackend;
  /** Byte order of plain element types (F16, BF16, F32, ...). Quantized blocks are always little-endian. Default true. */
  littleEndian?: boolean;
}

export interface DequantizeAsyncOptions extends DequantizeOptions {
  /** Jobs to split large work into: a number >= 1, at most MAX_THREADS are used (default: os.availableParallelism()). */
  threads?: number;
  /** Called as parts finish, with elements done and the total. */
  onProgress?: (done: number, total: number) => void;
}

/** Where the bytes sit in their file, for error offsets. */
interface Placement {
  fileOffset: number;
  /**
   * Throws CLOSED or FILE_CHANGED when the bytes' file can no longer be read (checked before the
   * work and between parts of it). Without it, a window over a mapping is checked all the same.
   */
  check?: () => void;
  /** Throws FILE_CHANGED when pages of the bytes' file were lost, even after a close (see ByteSource.checkPages). */
  checkPages?: () => void;
}

/** The most parts one dequantizeAsync call is split into, whatever `threads` asks. */
export const MAX_THREADS = 64;
const BACKENDS: readonly DequantBackend[] = ['auto', 'native', 'wasm', 'js'];

// Below this many elements a split is not worth a thread hop.
const SPLIT_MIN_ELEMENTS = 1 << 20;
// Work without a native kernel (WebAssembly or TypeScript) runs in slices of about this many
// bytes, yielding between.
const JS_SLICE_BYTES = 4 << 20;
/**
 * Outputs of at least this many floats (1 MiB), asked for without `out`, are written into memory
 * the addon maps (with huge pages from 8 MiB) and handed over: a new Float32Array of 262 MB spent
 * ~100 ms zeroing its pages one fault at a time before the kernel's ~12 ms. Smaller ones are
 * cheaper as plain Float32Arrays than as a mapping each.
 */
const ADDON_OUTPUT_MIN = 1 << 18;

/** A ggml type: its name ('Q4_K', or ggml's own spelling 'q4_K', 'iq4_nl'), its id, or its row. */
export type GgmlTypeRef = string | number | GgmlType;

function lookupType(type: GgmlTypeRef): GgmlType | undefined {
  if (typeof type === 'string') return ggmlTypeByName(type) ?? ggmlTypeByName(type.toUpperCase());
  if (typeof type === 'number') return ggmlTypeById(type);
  return type !== null && typeof type === 'object' && typeof type.name === 'string' ? ggmlTypeByName(type.name) : undefined;
}

function resolveType(type: GgmlTypeRef, fileOffset: number): GgmlType {
  const found = lookupType(type);
  if (found === undefined) throw new GgufError('UNKNOWN_TENSOR_TYPE', `unknown ggml type ${typeof type === 'string' ? `'${type}'` : typeof type === 'number' ? `id ${type}` : String(type)}`, fileOffset);
  return found;
}

/** Whether values of this type can be dequantized (every type with a ggml dequantizer, plus F32/F64/I8/I16/I32). */
export function canDequantize(type: GgmlTypeRef): boolean {
  const t = lookupType(type);
  return t !== undefined && TS_KERNELS[t.name] !== undefined;
}

let nativeIds: Set<number> | undefined;

/** Type ids with a native kernel; none where the addon does not load. */
function nativeTypeIds(): Set<number> {
  if (nativeIds === undefined) {
    const native = optionalAddon();
    if (native !== undefined) for (const name of KERNEL_TABLES) native.setDequantTable(name, tableBytes(name));
    nativeIds = new Set(native?.dequantInfo().typeIds ?? []);
  }
  return nativeIds;
}

/**
 * The addon's kernels: the instruction set they are chosen for ('avx512', 'avx2' or 'portable';
 * 'none' without the addon), every set this CPU can run (narrowest first), the types covered and,
 * per type, the set its kernel comes from (a type without a kernel in the chosen set uses the next
 * narrower set's); `wasm`: the types the WebAssembly kernels cover (none when the module is not
 * there).
 */
export function nativeDequantInfo(): { isa: string; isas: string[]; types: string[]; kernels: Record<string, string>; wasm: string[] } {
  nativeTypeIds(); // hands the tables over first
  const info = optionalAddon()?.dequantInfo();
  const kernels: Record<string, string> = {};
  info?.typeIds.forEach((id, i) => (kernels[ggmlTypeById(id)!.name] = info.kernelIsas[i]!));
  const types = Object.keys(kernels);
  return { isa: info?.isa ?? 'none', isas: info?.isas ?? [], types, kernels, wasm: [...wasmTypeIds()].map((id) => ggmlTypeById(id)!.name) };
}

/**
 * Use kernels up to one instruction set only ('portable', 'avx2'; 'avx512' lifts the limit), for
 * tests that compare the sets and for benchmarks.
 */
export function limitNativeIsa(isa: 'portable' | 'avx2' | 'avx512'): void {
  addon().limitDequantIsa(isa);
}

/**
 * Whether gatherRows shares a large batch with the addon's helper thread (default true), for
 * benchmarks that compare it with the calling thread alone. @internal
 */
export function useHelperThread(use: boolean): void {
  addon().useHelperThread(use);
}

interface Plan {
  type: GgmlType;
  nblocks: number;
  nelements: number;
  native: boolean;
  /** Without a native kernel: the WebAssembly or TypeScript one. */
  kernel: BlockKernel;
  littleEndian: boolean;
  /** Throws CLOSED or FILE_CHANGED when the source can no longer be read. */
  check: () => void;
}

/** The type, if it has a dequantizer (UNKNOWN_TENSOR_TYPE or NO_DEQUANTIZER otherwise). */
function dequantizableType(typeArg: GgmlTypeRef, fileOffset: number): GgmlType {
  const type = resolveType(typeArg, fileOffset);
  if (TS_KERNELS[type.name] === undefined) {
    const why = type.removed ? 'a removed type id' : type.name === 'Q8_1' ? 'an activation format ggml never dequantizes' : 'a type without a float conversion';
    throw new GgufError('NO_DEQUANTIZER', `${type.name} cannot be dequantized: ${why}`, fileOffset);
  }
  return type;
}

function plan(
  typeArg: GgmlTypeRef,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  options: DequantizeOptions,
  at: Placement,
): Plan {
  const checkOpen = at.check ?? (() => checkBuffer(bytes.buffer, at.fileOffset));
  const checkPages = at.checkPages ?? (() => checkBufferPages(bytes.buffer, at.fileOffset));
  // Lost pages first: a job that read zeros and then saw its file closed must say FILE_CHANGED,
  // not CLOSED (which a job with the mapping pinned may pass over).
  const check = () => {
    checkPages();
    checkOpen();
  };
  check();
  const type = dequantizableType(typeArg, at.fileOffset);
  if (bytes.byteLength % type.typeSize !== 0) {
    throw new GgufError('BAD_DATA_LENGTH', `${bytes.byteLength} bytes is not a whole number of ${type.name} blocks (${type.typeSize} bytes)`, at.fileOffset);
  }
  const nblocks = bytes.byteLength / type.typeSize;
  const nelements = nblocks * type.blockSize;
  if (out !== undefined && !(out instanceof Float32Array)) throw new TypeError('dequantize: out must be a Float32Array');
  if (out !== undefined && out.length < nelements) {
    throw new GgufError('OUTPUT_TOO_SMALL', `out holds ${out.length} floats, ${nelements} needed`, at.fileOffset);
  }
  const littleEndian = options.littleEndian ?? true;
  const chosen = chooseKernel(type, options.backend ?? 'auto', littleEndian, at.fileOffset);
  return { type, nblocks, nelements, native: chosen.name === 'native', kernel: chosen.kernel, littleEndian, check };
}

/** Which kernel a dequantization of `type` uses: the addon's, WebAssembly or TypeScript (see DequantBackend). */
function chooseKernel(type: GgmlType, backend: DequantBackend, littleEndian: boolean, fileOffset: number): { name: 'native' | 'wasm' | 'js'; kernel: BlockKernel } {
  if (!BACKENDS.includes(backend)) throw new TypeError(`dequantize: backend is one of ${BACKENDS.join(', ')}, not '${String(backend)}'`);
  // The native kernels read little-endian data only (the file's memory as it is); the others get
  // big-endian data swapped (below). 'js' touches neither the addon nor the module.
  const nativeable = takesNativeKernel(type, backend, littleEndian);
  if (backend === 'native' && !nativeable) {
    const why = optionalAddon() === undefined ? ` (the native addon is not loaded: ${addonUnavailableReason()})` : littleEndian ? '' : ' in a big-endian file';
    throw new GgufError('NO_NATIVE_KERNEL', `no native kernel for ${type.name}${why}`, fileOffset);
  }
  if (nativeable) return { name: 'native', kernel: TS_KERNELS[type.name]! };
  // 'auto' takes the WebAssembly kernels where the addon is not loaded (where it is, they cover
  // no type it lacks: the same C++), so dequantizing never loads the module in a process with the
  // addon (nativeDequantInfo() does, to list its types).
  const wasmable = (backend === 'wasm' || (backend === 'auto' && optionalAddon() === undefined)) && hasWasmKernel(type);
  if (backend === 'wasm' && !wasmable) {
    const reason = wasmUnavailableReason();
    const why = reason !== undefined ? ` (${reason})` : '';
    throw new GgufError('NO_WASM_KERNEL', `no WebAssembly kernel for ${type.name}${why}`, fileOffset);
  }
  const chosen = wasmable ? { name: 'wasm' as const, kernel: wasmKernelFor(type) } : { name: 'js' as const, kernel: TS_KERNELS[type.name]! };
  // The kernels read little-endian blocks (the TypeScript ones plain elements in either order): a
  // big-endian file's data is swapped into a copy first.
  return littleEndian || (chosen.name === 'js' && !type.quantized) ? chosen : { name: chosen.name, kernel: swappedFirst(type, chosen.kernel) };
}

/** `kernel` run on a little-endian copy of big-endian blocks. */
function swappedFirst(type: GgmlType, kernel: BlockKernel): BlockKernel {
  return (src, nblocks, out, at) => {
    const copy = src.slice(0, nblocks * type.typeSize);
    swapBlockFields(type, copy);
    kernel(copy, nblocks, out, at, true);
  };
}

/**
 * The kernel `dequantize(type, bytes, out, options)` would use: 'native' (the addon's), 'wasm'
 * (the same C++ as WebAssembly, where the addon is not loaded) or 'js' (TypeScript). Throws as
 * dequantize does for an unknown type, a type without a dequantizer, or a backend that has none.
 */
export function dequantKernelFor(type: GgmlTypeRef, options: DequantizeOptions = {}): 'native' | 'wasm' | 'js' {
  return chooseKernel(dequantizableType(type, 0), options.backend ?? 'auto', options.littleEndian ?? true, 0).name;
}

const wasmKernels = new Map<number, BlockKernel>();

/** A type's WebAssembly kernel in the TypeScript kernels' shape (it reads little-endian data only, as plan() checks). */
function wasmKernelFor(type: GgmlType): BlockKernel {
  let kernel = wasmKernels.get(type.id);
  if (kernel === undefined) {
    kernel = (bytes, nblocks, out, outIndex) => wasmDequantize(type, bytes, nblocks, out, outIndex);
    wasmKernels.set(type.id, kernel);
  }
  return kernel;
}

/** The WebAssembly module has a kernel for the type (big-endian data reaches it swapped, see chooseKernel). */
function hasWasmKernel(type: GgmlType): boolean {
  return wasmTypeIds().has(type.id);
}

/**
 * Decodes `bytes` (whole blocks of `type`, as stored in a GGUF tensor) to float32, bit for bit as
 * ggml's dequantizer. With `out` it writes there (it must hold every element) and returns it.
 */
export function dequantize(type: GgmlTypeRef, bytes: Uint8Array, out?: Float32Array, options: DequantizeOptions = {}): Float32Array {
  return dequantizeAt(type, bytes, out, options, { fileOffset: 0 });
}

export function dequantizeAt(
  type: GgmlTypeRef,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  options: DequantizeOptions,
  at: Placement,
): Float32Array {
  const p = plan(type, bytes, out, options, at);
  if (p.native && out === undefined && p.nelements >= ADDON_OUTPUT_MIN) {
    if (p.nelements * 4 > bufferConstants.MAX_LENGTH) {
      throw new GgufError('TENSOR_TOO_LARGE', `${p.nelements} floats do not fit in one ArrayBuffer (at most ${bufferConstants.MAX_LENGTH} bytes); dequantize rows at a time`, at.fileOffset);
    }
    return addon().dequantizeNew(p.type.id, bytes, p.nblocks) as Float32Array;
  }
  const target = out ?? new Float32Array(p.nelements);
  if (p.native) {
    addon().dequantize(p.type.id, bytes, p.nblocks, target, 0);
  } else {
    p.kernel(bytes, p.nblocks, target, 0, p.littleEndian);
  }
  return target;
}

/**
 * Whether the native kernels decode this type (the addon loaded, a kernel for the type, backend
 * 'auto' or 'native', and little-endian data). False for an invalid backend:
 * chooseKernel (or a caller's fallback through it) reports that.
 */
export function takesNativeKernel(type: GgmlType, backend: DequantBackend | undefined, littleEndian: boolean): boolean {
  return (backend === undefined || backend === 'auto' || backend === 'native') && hasNativeKernel(type, littleEndian);
}

/** The addon has a kernel for the type, and the data is what it reads: little-endian (it works on the file's memory, where nothing is swapped). */
function hasNativeKernel(type: GgmlType, littleEndian: boolean): boolean {
  return littleEndian && nativeTypeIds().has(type.id);
}

/** Rows of a tensor in memory JS holds (`tensorBytes`) into `out`; see Addon.gatherRows. */
export function gatherRowsFromBytes(type: GgmlType, tensorBytes: Uint8Array, rowBytes: number, rows: number | Int32Array | Uint32Array, count: number, out: Float32Array): boolean {
  return addon().gatherRows(tensorBytes, type.id, rowBytes, rows, count, out);
}

/**
 * `dequantize` off the event loop: native kernels run on libuv's pool, a large input split into
 * `threads` parts run at once, on memory the addon owns (a transferred `out` cannot be written
 * to after it is gone); a type without a native kernel runs in WebAssembly or TypeScript slices
 * that yield to the event loop between them.
 */
export function dequantizeAsync(
  type: GgmlTypeRef,
  bytes: Uint8Array,
  out?: Float32Array,
  options: DequantizeAsyncOptions = {},
): Promise<Float32Array> {
  try {
    return dequantizeAsyncAt(type, bytes, out, options, { fileOffset: 0 });
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Parts to split `nblocks` into: `threads` checked, and clamped to MAX_THREADS and the blocks. */
function partCount(threads: unknown, nblocks: number, nelements: number): number {
  if (threads !== undefined && !(typeof threads === 'number' && threads >= 1)) {
    throw new RangeError(`dequantizeAsync: threads must be a number >= 1, not ${String(threads)}`);
  }
  if (nelements < SPLIT_MIN_ELEMENTS) return 1;
  return Math.min(Math.floor(threads ?? availableParallelism()), MAX_THREADS, nblocks);
}

/** `out` no longer holds the values (transferred or detached while the work ran). */
function outputGone(out: Float32Array, nelements: number, fileOffset: number): GgufError {
  return new GgufError('OUTPUT_TOO_SMALL', `out was detached or transferred during dequantizeAsync (${out.length} of ${nelements} floats left); nothing was written to it`, fileOffset);
}

export function dequantizeAsyncAt(
  type: GgmlTypeRef,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  options: DequantizeAsyncOptions,
  at: Placement,
): Promise<Float32Array> {
  const p = plan(type, bytes, out, options, at);
  const parts = partCount(options.threads, p.nblocks, p.nelements);
  if (p.nblocks === 0) return Promise.resolve(out ?? new Float32Array(0));
  return p.native ? nativeAsync(p, bytes, out, parts, options.onProgress, at) : scriptAsync(p, bytes, out, options.onProgress, at);
}

async function nativeAsync(
  p: Plan,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  parts: number,
  report: DequantizeAsyncOptions['onProgress'],
  at: Placement,
): Promise<Float32Array> {
  if (out === undefined && p.nelements * 4 > bufferConstants.MAX_LENGTH) {
    throw new GgufError('TENSOR_TOO_LARGE', `${p.nelements} floats do not fit in one ArrayBuffer (at most ${bufferConstants.MAX_LENGTH} bytes); dequantize rows at a time`, at.fileOffset);
  }
  const job = new (addon().DequantJob)(p.type.id, bytes, p.nblocks);
  return runJob(job, { units: p.nblocks, unitElements: p.type.blockSize, parts, report, check: p.check, out, at });
}

interface JobRun {
  /** Blocks or rows, as the job counts them, and the elements of each. */
  units: number;
  unitElements: number;
  parts: number;
  report: DequantizeAsyncOptions['onProgress'];
  check: () => void;
  out: Float32Array | undefined;
  at: Placement;
}

/** Runs a job's units in `parts` parts at once, then hands its output over (or copies it into `out`). */
async function runJob(job: NativeDequantJob, r: JobRun): Promise<Float32Array> {
  const nelements = r.units * r.unitElements;
  const per = Math.ceil(r.units / r.parts);
  let done = 0;
  let progressFailed: { error: unknown } | undefined;
  const runs: Promise<void>[] = [];
  for (let first = 0; first < r.units; first += per) {
    const count = Math.min(per, r.units - first);
    runs.push(
      job.run(first, count).then(() => {
        done += count * r.unitElements;
        if (r.report === undefined || progressFailed !== undefined) return;
        try {
          r.report(done, nelements);
        } catch (error) {
          progressFailed = { error };
        }
      }),
    );
  }
  // Every part ends before anything is handed over, whatever a progress callback did.
  await Promise.all(runs);
  // Pages lost while the job read them came back as zeros: report that, not the values. (A close
  // meanwhile is fine: the job had the mapping pinned.)
  try {
    r.check();
  } catch (error) {
    if (error instanceof GgufError && error.code === 'FILE_CHANGED') {
      job.take();
      throw error;
    }
  }
  if (progressFailed !== undefined) {
    job.take(); // lets go of the source now rather than at GC
    throw progressFailed.error;
  }
  if (r.out === undefined) return job.take();
  if (r.out.length < nelements) {
    job.take();
    throw outputGone(r.out, nelements, r.at.fileOffset);
  }
  job.copyTo(r.out, 0);
  return r.out;
}

/**
 * Rows `ids` (checked by the caller) of a tensor whose bytes are `tensorBytes`, off the event
 * loop: native kernels on libuv's pool (split into `threads` parts for large batches), else the
 * WebAssembly or TypeScript kernels a slice of rows at a time between turns of the event loop
 * (into memory of their own, then `out`: see handOver).
 */
export async function gatherRowsAsyncAt(
  type: GgmlType,
  tensorBytes: Uint8Array,
  rowBytes: number,
  ids: Int32Array | Uint32Array,
  out: Float32Array | undefined,
  options: DequantizeAsyncOptions,
  at: Placement,
): Promise<Float32Array> {
  const rowLength = (rowBytes / type.typeSize) * type.blockSize;
  const p = plan(type, tensorBytes.subarray(0, 0), undefined, options, at);
  const nelements = ids.length * rowLength;
  if (out !== undefined && !(out instanceof Float32Array)) throw new TypeError('out must be a Float32Array');
  if (out !== undefined && out.length < nelements) throw new GgufError('OUTPUT_TOO_SMALL', `out holds ${out.length} floats, ${nelements} needed`, at.fileOffset);
  const parts = partCount(options.threads, Math.max(1, ids.length), nelements);
  if (ids.length === 0) return out ?? new Float32Array(0);
  if (p.native) {
    if (out === undefined && nelements * 4 > bufferConstants.MAX_LENGTH) {
      throw new GgufError('TENSOR_TOO_LARGE', `${nelements} floats do not fit in one ArrayBuffer (at most ${bufferConstants.MAX_LENGTH} bytes)`, at.fileOffset);
    }
    const job = new (addon().DequantJob)(type.id, tensorBytes, tensorBytes.byteLength / type.typeSize, rowBytes, ids);
    return runJob(job, { units: ids.length, unitElements: rowLength, parts, report: options.onProgress, check: p.check, out, at });
  }
  const target = new Float32Array(nelements);
  const kernel = p.kernel;
  const perSlice = Math.max(1, Math.floor(JS_SLICE_BYTES / rowBytes));
  for (let i = 0; i < ids.length; i++) {
    if (i > 0 && i % perSlice === 0) {
      await nextTurn();
      p.check();
    }
    const start = ids[i]! * rowBytes;
    kernel(tensorBytes.subarray(start, start + rowBytes), rowBytes / type.typeSize, target, i * rowLength, p.littleEndian);
    if ((i + 1) % perSlice === 0 || i + 1 === ids.length) options.onProgress?.((i + 1) * rowLength, nelements);
  }
  p.check(); // pages lost while the last slice read them came back as zeros
  return handOver(target, out, at);
}

/**
 * The values of work done in slices, into `out` at the end (as the native jobs do): a slice that
 * fails (a throwing onProgress, CLOSED, FILE_CHANGED) leaves `out` untouched, and an `out`
 * transferred meanwhile is never written.
 */
function handOver(values: Float32Array, out: Float32Array | undefined, at: Placement): Float32Array {
  if (out === undefined) return values;
  if (out.length < values.length) throw outputGone(out, values.length, at.fileOffset);
  out.set(values);
  return out;
}

async function scriptAsync(
  p: Plan,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  report: DequantizeAsyncOptions['onProgress'],
  at: Placement,
): Promise<Float32Array> {
  const { typeSize, blockSize } = p.type;
  const target = new Float32Array(p.nelements);
  const kernel = p.kernel;
  const slice = Math.max(1, Math.floor(JS_SLICE_BYTES / typeSize));
  for (let first = 0; first < p.nblocks; first += slice) {
    if (first > 0) {
      await nextTurn();
      p.check();
    }
    const count = Math.min(slice, p.nblocks - first);
    kernel(bytes.subarray(first * typeSize, (first + count) * typeSize), count, target, first * blockSize, p.littleEndian);
    report?.((first + count) * blockSize, p.nelements);
  }
  p.check(); // pages lost while the last slice read them came back as zeros
  return handOver(target, out, at);
}
