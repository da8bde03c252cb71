import { availableParallelism } from 'node:os';
import { GgufError } from '../errors.js';
import { ggmlTypeById, ggmlTypeByName, type GgmlType } from '../ggml-types.js';
import { addon } from '../native.js';
import { TS_KERNELS } from './kernels.js';
import { tableInt8 } from './tables.js';

/**
 * 'auto' (the default) uses the addon's kernel when it has one for the type and the TypeScript
 * kernel otherwise; 'js' always uses TypeScript; 'native' fails with NO_NATIVE_KERNEL when the
 * addon has none. Both give the same bits.
 */
export type DequantBackend = 'auto' | 'native' | 'js';

export interface DequantizeOptions {
  backend?: DequantBackend;
  /** Byte order of plain element types (F16, BF16, F32, ...). Quantized blocks are always little-endian. Default true. */
  littleEndian?: boolean;
}

export interface DequantizeAsyncOptions extends DequantizeOptions {
  /** Jobs to split large work into (default: os.availableParallelism()). */
  threads?: number;
  /** Called as parts finish, with elements done and the total. */
  onProgress?: (done: number, total: number) => void;
}

/** Where the bytes sit in their file, for error offsets. */
interface Placement {
  fileOffset: number;
  /** Whether the bytes' file was closed (checked between parts of TypeScript work). */
  closed?: () => boolean;
}

// Below this many elements a split is not worth a thread hop.
const SPLIT_MIN_ELEMENTS = 1 << 20;
// TypeScript work without a native kernel runs in slices of about this many bytes, yielding between.
const JS_SLICE_BYTES = 4 << 20;

/** The type a name ('Q4_K', or ggml's own spelling 'q4_K', 'iq4_nl') or type row stands for. */
function lookupType(type: string | GgmlType): GgmlType | undefined {
  return typeof type === 'string' ? (ggmlTypeByName(type) ?? ggmlTypeByName(type.toUpperCase())) : type;
}

function resolveType(type: string | GgmlType, fileOffset: number): GgmlType {
  const found = lookupType(type);
  if (found === undefined) throw new GgufError('UNKNOWN_TENSOR_TYPE', `unknown ggml type '${String(type)}'`, fileOffset);
  return found;
}

/** Whether values of this type can be dequantized (every type with a ggml dequantizer, plus F32/F64/I8/I16/I32). */
export function canDequantize(type: string | GgmlType): boolean {
  const t = lookupType(type);
  return t !== undefined && TS_KERNELS[t.name] !== undefined;
}

let nativeIds: Set<number> | undefined;

function nativeTypeIds(): Set<number> {
  if (nativeIds === undefined) {
    const native = addon();
    native.setIq4nlValues(tableInt8('kvalues_iq4nl'));
    nativeIds = new Set(native.dequantInfo().typeIds);
  }
  return nativeIds;
}

/** The addon's kernels: the instruction set chosen for this CPU and the types covered. */
export function nativeDequantInfo(): { isa: string; types: string[] } {
  const ids = nativeTypeIds();
  return { isa: addon().dequantInfo().isa, types: [...ids].map((id) => ggmlTypeById(id)!.name) };
}

/** Use only the portable C++ kernels (true) or the best for this CPU (false); for tests and benchmarks. */
export function forcePortableNativeKernels(portable: boolean): void {
  addon().forcePortableDequant(portable);
}

interface Plan {
  type: GgmlType;
  nblocks: number;
  nelements: number;
  out: Float32Array;
  native: boolean;
  littleEndian: boolean;
}

function plan(
  typeArg: string | GgmlType,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  options: DequantizeOptions,
  at: Placement,
): Plan {
  const type = resolveType(typeArg, at.fileOffset);
  if (TS_KERNELS[type.name] === undefined) {
    const why = type.removed ? 'a removed type id' : type.name === 'Q8_1' ? 'an activation format ggml never dequantizes' : 'a type without a float conversion';
    throw new GgufError('NO_DEQUANTIZER', `${type.name} cannot be dequantized: ${why}`, at.fileOffset);
  }
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
  const backend = options.backend ?? 'auto';
  // The native kernels read little-endian data only (quantized blocks always are). 'js' never
  // touches the addon.
  const nativeable = backend !== 'js' && (littleEndian || type.quantized) && nativeTypeIds().has(type.id);
  if (backend === 'native' && !nativeable) {
    throw new GgufError('NO_NATIVE_KERNEL', `no native kernel for ${type.name}${littleEndian ? '' : ' in a big-endian file'}`, at.fileOffset);
  }
  return { type, nblocks, nelements, out: out ?? new Float32Array(nelements), native: nativeable, littleEndian };
}

function runSync(p: Plan, bytes: Uint8Array): void {
  if (p.native) {
    addon().dequantize(p.type.id, bytes, p.nblocks, p.out, 0);
  } else {
    TS_KERNELS[p.type.name]!(bytes, p.nblocks, p.out, 0, p.littleEndian);
  }
}

/**
 * Decodes `bytes` (whole blocks of `type`, as stored in a GGUF tensor) to float32, bit for bit as
 * ggml's dequantizer. With `out` it writes there (it must hold every element) and returns it.
 */
export function dequantize(type: string | GgmlType, bytes: Uint8Array, out?: Float32Array, options: DequantizeOptions = {}): Float32Array {
  return dequantizeAt(type, bytes, out, options, { fileOffset: 0 });
}

export function dequantizeAt(
  type: string | GgmlType,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  options: DequantizeOptions,
  at: Placement,
): Float32Array {
  const p = plan(type, bytes, out, options, at);
  runSync(p, bytes);
  return p.out;
}

/**
 * `dequantize` off the event loop: native kernels run on libuv's pool, a large input split into
 * `threads` parts run at once; a type without a native kernel runs in TypeScript slices that
 * yield to the event loop between them.
 */
export function dequantizeAsync(
  type: string | GgmlType,
  bytes: Uint8Array,
  out?: Float32Array,
  options: DequantizeAsyncOptions = {},
): Promise<Float32Array> {
  return dequantizeAsyncAt(type, bytes, out, options, { fileOffset: 0 });
}

export async function dequantizeAsyncAt(
  type: string | GgmlType,
  bytes: Uint8Array,
  out: Float32Array | undefined,
  options: DequantizeAsyncOptions,
  at: Placement,
): Promise<Float32Array> {
  const p = plan(type, bytes, out, options, at);
  const { typeSize, blockSize } = p.type;
  const report = options.onProgress;
  if (p.nblocks === 0) return p.out;
  if (p.native) {
    const threads = Math.max(1, Math.floor(options.threads ?? availableParallelism()));
    const parts = p.nelements < SPLIT_MIN_ELEMENTS ? 1 : Math.min(threads, p.nblocks);
    const per = Math.ceil(p.nblocks / parts);
    let done = 0;
    const jobs: Promise<void>[] = [];
    for (let first = 0; first < p.nblocks; first += per) {
      const count = Math.min(per, p.nblocks - first);
      const src = bytes.subarray(first * typeSize, (first + count) * typeSize);
      jobs.push(
        addon()
          .dequantizeAsync(p.type.id, src, count, p.out, first * blockSize)
          .then(() => {
            done += count * blockSize;
            report?.(done, p.nelements);
          }),
      );
    }
    await Promise.all(jobs);
    return p.out;
  }
  const kernel = TS_KERNELS[p.type.name]!;
  const slice = Math.max(1, Math.floor(JS_SLICE_BYTES / typeSize));
  for (let first = 0; first < p.nblocks; first += slice) {
    if (at.closed?.()) throw new GgufError('CLOSED', 'file closed during dequantizeAsync', at.fileOffset);
    const count = Math.min(slice, p.nblocks - first);
    kernel(bytes.subarray(first * typeSize, (first + count) * typeSize), count, p.out, first * blockSize, p.littleEndian);
    report?.((first + count) * blockSize, p.nelements);
    if (first + count < p.nblocks) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return p.out;
}
