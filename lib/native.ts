import { existsSync, statSync } from 'node:fs';
import { extname, isAbsolute, join, toNamespacedPath } from 'node:path';
import { GgufError } from './errors.js';
import { toFilePath } from './file/path.js';
import { packageRoot } from './package-root.js';
import { walkStringsJs } from './format/walk-strings.js';

/** Device, inode, size and mtime in nanoseconds, as decimal strings (they may not fit a double). */
export interface FileIdentity {
  readonly dev: string;
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
}

/** Where a walk of tensor infos starts: the records from tensor `first` at `pos` of `view`, names stored from `nameAt`. */
type WalkStart = [view: DataView, pos: number, first: number, count: number, wideCounts: boolean, littleEndian: boolean, alignment: number, nameAt: number, fileSize: number];

/** Where the walk of tensor infos writes what it reads (lib/format/tensor-table.ts's columns), and what it reads by. */
export interface TensorInfoTargets {
  readonly blockSizes: Uint32Array;
  readonly typeSizes: Uint32Array;
  readonly key: Int32Array;
  readonly nameBytes: Uint8Array;
  readonly starts: Uint32Array;
  readonly ends: Uint32Array;
  readonly hashes: Uint32Array;
  readonly slots: Int32Array;
  readonly typeIds: Uint8Array;
  readonly dims: Uint8Array;
  readonly ne: Float64Array;
  readonly offsets: Float64Array;
  readonly nbytes: Float64Array;
  readonly infoOffsets: Float64Array;
}

/** The addon's Mapping: one private copy-on-write mmap of a whole file (native/region.h). */
export interface NativeMapping {
  readonly size: number;
  readonly closed: boolean;
  /** False when the kernel would not commit a writable mapping and it is read-only. */
  readonly copyOnWrite: boolean;
  /** Whether windows (and status()) are SharedArrayBuffers. */
  readonly sharedArrayBuffers: boolean;
  /** Whether the mapping was advised to use 2 MiB pages (MADV_HUGEPAGE; Linux). */
  readonly hugePages: boolean;
  /** The file as it was when mapped. */
  readonly identity: FileIdentity;
  /** The mapped file as it is now (fstat of the file itself, not its path); null after close. */
  currentIdentity(): FileIdentity | null;
  /** A 4-byte buffer over the status word the SIGBUS handler sets (bit 0: pages lost). */
  status(): ArrayBuffer | SharedArrayBuffer;
  /** An external ArrayBuffer (or SharedArrayBuffer, see sharedArrayBuffers) over file bytes [offset, offset + length). */
  window(offset: number, length: number): ArrayBuffer | SharedArrayBuffer;
  /**
   * A function decoding rows of the tensor at [offset, offset + length) straight from the mapping
   * (no window): `rows` the first of `count`, or their ids; false without a native kernel for the type.
   */
  rowReader(offset: number, length: number, typeId: number, rowBytes: number): RowReader;
  /** Lets go of the file: every window stays valid and reads zeros. Idempotent. */
  close(): void;
  /** Bytes of [offset, offset + length) in memory (mincore). */
  residency(offset: number, length: number): number;
  /** madvise over the range's pages. */
  advise(offset: number, length: number, advice: PageAdvice): void;
  /** mlock / munlock over the range's pages; a Node-style error (EPERM, ENOMEM) naming RLIMIT_MEMLOCK. */
  lock(offset: number, length: number): void;
  unlock(offset: number, length: number): void;
  /** Faults the range's pages in on a libuv pool thread (MADV_POPULATE_READ, else a read per page). */
  prefetch(offset: number, length: number): Promise<void>;
}

/** Decodes rows into out (see NativeMapping.rowReader). */
export type RowReader = (rows: number | Int32Array | Uint32Array, count: number, out: Float32Array) => boolean;

/** Access-pattern advice for the kernel (madvise). */
export type PageAdvice = 'normal' | 'random' | 'sequential' | 'willneed' | 'dontneed';

/** Native dequantization off the JS thread, on memory the job owns (native/dequant_napi.cc). */
export interface NativeDequantJob {
  run(firstBlock: number, count: number): Promise<void>;
  /** The output, handed over without a copy (once, when no run is in flight). */
  take(): Float32Array;
  /** Or the output copied into `out` from `outIndex` (once, when no run is in flight). */
  copyTo(out: Float32Array, outIndex: number): void;
}

interface Addon {
  Mapping: new (path: string, maxWindow: number, sharedArrayBuffers: boolean, hugePages: boolean) => NativeMapping;
  externalSharedArrayBuffers(): boolean;
  /** XXH64, seed 0 (native/xxh64.cc): update() returns the state, digest() 16 hex digits. */
  Xxh64: new () => { update(bytes: Uint8Array): unknown; digest(): string };
  liveMappings(): number;
  rearmFaultGuard(): boolean;
  /** The CPUs this process may use at once: its affinity, capped by its cgroup's CPU limit on Linux (native/os/cpus.h). */
  usableCpus(): number;
  /** Whether a file open in this process (any thread) is the one with this device and inode (decimal strings). */
  mapsFile(dev: string, ino: string): boolean;
  evictFile(path: string): void;
  tryLockFile(path: string): number;
  /** copy_file_range: bytes copied inside the kernel, or a Node-style error (ENOSYS: not here). */
  copyFileRange(inFd: number, inOffset: number, outFd: number, outOffset: number, length: number): number;
  unlockFile(fd: number): void;
  skipStrings(view: DataView, pos: number, count: number, width: number, littleEndian: boolean): number;
  /** Older builds lack it. */
  indexStrings?(
    bytes: Uint8Array, count: number, width: number, littleEndian: boolean, seed: number, key0: number, key1: number, mode: number,
    keepLast: boolean, probeLimit: number, starts: Uint32Array, ends: Uint32Array, slots: Int32Array,
  ): number;
  /** Huge pages for the first writes into a large new buffer (native/os/memory.h); absent in addons before it. */
  adviseHugePages?(buffer: ArrayBuffer): void;
  /** See native/tensor_info_walk.h and TensorInfoWalk below; `result` gets [records accepted, offset after them, name bytes used, longest probe]. */
  walkTensorInfoRecords(
    ...args: [
      ...WalkStart,
      blockSizes: Uint32Array,
      typeSizes: Uint32Array,
      key: Int32Array,
      nameBytes: Uint8Array,
      starts: Uint32Array,
      ends: Uint32Array,
      hashes: Uint32Array,
      slots: Int32Array,
      typeIds: Uint8Array,
      dims: Uint8Array,
      ne: Float64Array,
      offsets: Float64Array,
      nbytes: Float64Array,
      infoOffsets: Float64Array,
      result: Float64Array,
    ]
  ): void;
  dequantize(typeId: number, src: Uint8Array, nblocks: number, out: Float32Array, outIndex: number): boolean;
  dequantizeNew(typeId: number, src: Uint8Array, nblocks: number): Float32Array | false;
  /** Rows (the first of `count`, or their ids) of the tensor `src` into out; false without a native kernel for the type. */
  gatherRows(src: Uint8Array, typeId: number, rowBytes: number, rows: number | Int32Array | Uint32Array, count: number, out: Float32Array): boolean;
  DequantJob: new (typeId: number, src: Uint8Array, nblocks: number, rowBytes?: number, ids?: Int32Array | Uint32Array) => NativeDequantJob;
  dequantInfo(): { isa: string; isas: string[]; typeIds: number[]; kernelIsas: string[] };
  limitDequantIsa(isa: string): void;
  /** Whether large row batches are shared with the addon's helper thread (native/helper_thread.h). */
  useHelperThread(use: boolean): void;
  setDequantTable(name: string, bytes: Uint8Array | Int8Array): void;
  externalBuffers(): boolean;
  refuseExternalBuffers(refuse: boolean): void;
}

type LoadResult = { addon: Addon; path: string; error?: undefined } | { addon?: undefined; path?: undefined; error: string };

/**
 * GGUF_MMAP_ADDON's build (CI uses it to test the cmake-js and sanitizer builds): an absolute
 * path to a regular `.node` file, loaded as exactly that file with process.dlopen (require()
 * would try `X.node.js` beside a missing one, or a directory's index, and run it as JavaScript).
 * Anything else is a load error, which read mode and liveMappings() do not need.
 */
function loadOverride(path: string): LoadResult {
  if (!isAbsolute(path) || extname(path) !== '.node' || path.includes('\0')) {
    return { error: `GGUF_MMAP_ADDON must be an absolute path to a .node file (or 'off'), not '${path}'` };
  }
  let kind: ReturnType<typeof statSync>;
  try {
    kind = statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    return { error: `GGUF_MMAP_ADDON names no file it can read: '${path}' (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` };
  }
  if (kind === undefined || !kind.isFile()) return { error: `GGUF_MMAP_ADDON names ${kind === undefined ? 'no file' : 'something other than a regular file'}: '${path}'` };
  return dlopen(path);
}

/**
 * Which build of the addon to load: GGUF_MMAP_ADDON if set (`off` loads none, as where no build
 * exists), else what node-gyp-build picks for the files this package has: node-gyp's
 * build/Release (not with PREBUILDS_ONLY set), else prebuilds/PLATFORM-ARCH/ (GGUF_MMAP_PREBUILD
 * names another folder to look in), the binary tagged with this libc before an untagged one, else
 * cmake-js's build-cmake/Release. Found here rather than by node-gyp-build itself: requiring it
 * started the CommonJS loader, 4-5 ms of every process's first open (test/addon.test.ts checks
 * the two agree). Not followed: npm_config_arch and npm_config_platform (a binary for another
 * system cannot load), build/Debug, and names with napi or abi tags (prebuildify --napi writes none).
 */
export function resolveAddon(root = packageRoot()): string | undefined {
  const env = process.env;
  const dir = env.GGUF_MMAP_PREBUILD || root;
  const prebuilt = join(dir, 'prebuilds', `${process.platform}-${process.arch}`);
  // node-gyp-build's libc: the LIBC variable, else musl where /etc/alpine-release exists (Linux),
  // else glibc (every other system: prebuildify --tag-libc tags their binaries glibc too).
  const libc = env.LIBC || (process.platform === 'linux' && existsSync('/etc/alpine-release') ? 'musl' : 'glibc');
  const candidates = [
    ...(env.PREBUILDS_ONLY ? [] : [join(dir, 'build/Release/gguf_mmap.node')]),
    join(prebuilt, `gguf-mmap.${libc}.node`),
    join(prebuilt, 'gguf-mmap.node'),
    join(root, 'build-cmake/Release/gguf_mmap.node'),
  ];
  return candidates.find((path) => existsSync(path));
}

function dlopen(path: string): LoadResult {
  const module = { exports: {} as Addon };
  try {
    // As require() loads one: the namespaced path (\\?\ on Windows) has no MAX_PATH limit.
    process.dlopen(module, toNamespacedPath(path));
  } catch (error) {
    return { error: `${path} does not load: ${(error as Error).message.split('\n')[0]}` };
  }
  keepFaultGuardInFront(module.exports);
  return { addon: module.exports, path };
}

/**
 * Node installs a SIGBUS handler of its own when a process.on('SIGBUS') listener is added, and
 * restores the default action when the last one is removed; either way the addon's handler of
 * lost pages (a truncated file) was gone, and a read of a lost page hung or killed the process.
 * Node's own listener hooks run first (they are registered at start-up), so these put the addon's
 * handler back in front right after, with Node's as the one other signals are handed to.
 */
function keepFaultGuardInFront(loadedAddon: Addon): void {
  if (typeof loadedAddon.rearmFaultGuard !== 'function' || typeof process.on !== 'function') return;
  const rearm = (event: string | symbol) => {
    if (event === 'SIGBUS') loadedAddon.rearmFaultGuard();
  };
  process.on('newListener', rearm);
  process.on('removeListener', rearm);
}

let loaded: LoadResult | undefined;

function load(): LoadResult {
  if (loaded !== undefined) return loaded;
  const override = process.env.GGUF_MMAP_ADDON;
  if (override === 'off') {
    loaded = { error: 'GGUF_MMAP_ADDON is off' };
  } else if (override) {
    loaded = loadOverride(override);
  } else {
    const path = resolveAddon();
    loaded = path === undefined ? { error: `no build and no prebuilt binary for ${process.platform}-${process.arch}` } : dlopen(path);
  }
  return loaded;
}

/** The addon, or undefined where it cannot load (the library then reads files instead of mapping them). */
export function optionalAddon(): Addon | undefined {
  return load().addon;
}

/** Why the addon is not loaded, or undefined when it is. */
export function addonUnavailableReason(): string | undefined {
  return load().error;
}

/** What to do about a load error: fix the variable that named the build, or build one. */
export function addonFix(error: string): string {
  return error.startsWith('GGUF_MMAP_ADDON')
    ? "unset GGUF_MMAP_ADDON or name a built gguf_mmap.node, or open files with { mode: 'read' }"
    : "run `npm rebuild gguf-mmap` with a C++ compiler on PATH, or open files with { mode: 'read' }";
}

/** The addon itself, for modules that wrap one of its functions; ADDON_UNAVAILABLE where it cannot load. */
export function addon(): Addon {
  const result = load();
  if (result.addon !== undefined) return result.addon;
  throw new GgufError(
    'ADDON_UNAVAILABLE',
    `the native addon is not loaded (${result.error}): ${addonFix(result.error)}`,
    0,
  );
}

/** Whether files can be mapped here: the addon loads and the runtime allows ArrayBuffers over external memory. */
export function canMap(): boolean {
  return optionalAddon()?.externalBuffers() ?? false;
}

/**
 * Maps `path`; windows are SharedArrayBuffers when `sharedArrayBuffers` and the runtime has
 * node_api_create_external_sharedarraybuffer (Node 22.23, 24.22, 26.12 and later).
 */
export function mapFile(path: string, maxWindow: number, sharedArrayBuffers: boolean, hugePages = false): NativeMapping {
  return new (addon().Mapping)(path, maxWindow, sharedArrayBuffers, hugePages);
}

/** Whether windows over a mapping can be SharedArrayBuffers in this runtime (false without the addon). */
export function canShareWindows(): boolean {
  return optionalAddon()?.externalSharedArrayBuffers() ?? false;
}

/**
 * Drops the file's clean pages from the page cache (after writing dirty ones back); pages a
 * process has mapped stay. For cold-start benchmarks and tests. Paths as openGguf takes them (a NUL
 * byte is a TypeError); only a regular file is evicted (ENODEV for a FIFO or device, never a wait).
 */
export function evictFromPageCache(path: string | URL | Buffer): void {
  addon().evictFile(toFilePath(path, 'evictFromPageCache'));
}

/** Mapped files not yet let go of, across every thread of this process (0 without the addon). */
export function liveMappings(): number {
  return optionalAddon()?.liveMappings() ?? 0;
}

/**
 * Walks up to `count` tensor infos from `pos` into `targets` (native/tensor_info_walk.h): [records
 * accepted, offset after them, name bytes used, longest probe].
 */
export type TensorInfoWalk = (...args: [...WalkStart, targets: TensorInfoTargets]) => [walked: number, end: number, nameEnd: number, probes: number];

let tensorInfoWalk: TensorInfoWalk | null | undefined;

/**
 * The addon's walk of tensor infos, or undefined without the addon (or with a build that has
 * another version of it, as GGUF_MMAP_ADDON may name: then every record is read in TypeScript).
 */
export function nativeTensorInfoWalk(): TensorInfoWalk | undefined {
  if (tensorInfoWalk === undefined) {
    const native = optionalAddon();
    if (typeof native?.walkTensorInfoRecords !== 'function') {
      tensorInfoWalk = null;
    } else {
      // The targets as arguments, the results in one reused array: the addon reads each with one
      // Node-API call (named properties and a returned array cost it 6-8 us per walk, per part).
      const result = new Float64Array(4);
      tensorInfoWalk = (view, pos, first, count, wideCounts, littleEndian, alignment, nameAt, fileSize, t) => {
        native.walkTensorInfoRecords(view, pos, first, count, wideCounts, littleEndian, alignment, nameAt, fileSize,
          t.blockSizes, t.typeSizes, t.key, t.nameBytes, t.starts, t.ends, t.hashes, t.slots, t.typeIds, t.dims, t.ne, t.offsets, t.nbytes, t.infoOffsets, result);
        return [result[0]!, result[1]!, result[2]!, result[3]!];
      };
    }
  }
  return tensorInfoWalk ?? undefined;
}

let hugePageAdvice = true;

/**
 * Asks that the first writes into `buffer`, large and freshly mapped, fault once per 2 MiB instead
 * of once per 4 KiB (Linux's transparent huge pages where set to `madvise`; where they are
 * `always` it gets them anyway), where the addon is loaded.
 * A million tensor infos' table is 141 MB: on a VM whose page faults cost ~11 us each (measured
 * here) its 4 KiB faults took most of the open.
 */
export function adviseHugePages(buffer: ArrayBuffer): void {
  if (hugePageAdvice) optionalAddon()?.adviseHugePages?.(buffer);
}

/** For benchmarks: whether adviseHugePages asks (default true). @internal */
export function useHugePageAdvice(on: boolean): void {
  hugePageAdvice = on;
}

/**
 * Steps over `count` GGUF strings (length fields of `width` bytes) at `pos` in `view`: returns the
 * offset past the last, or -1 - the offset of the first length field that does not fit the view.
 * The addon's loop (the hot loop of opening a model), else the same walk in TypeScript.
 */
export function walkStrings(view: DataView, pos: number, count: number, width: number, littleEndian: boolean): number {
  const native = optionalAddon();
  if (native !== undefined) return native.skipStrings(view, pos, count, width, littleEndian);
  return walkStringsJs(view, pos, count, width, littleEndian);
}

/**
 * The tokenizer's string index built by the addon (see lib/tokenizer/byte-index.ts): 0, -1 (a
 * string past the bytes), -2 (a probe past the limit in mode 0); undefined without the addon.
 */
export function indexStringsNative(
  bytes: Uint8Array, count: number, width: number, littleEndian: boolean, seed: number, key: Int32Array, mode: number,
  keepLast: boolean, probeLimit: number, starts: Uint32Array, ends: Uint32Array, slots: Int32Array,
): number | undefined {
  const native = optionalAddon();
  if (native?.indexStrings === undefined || bytes.byteLength > 0xffffffff) return undefined;
  return native.indexStrings(bytes, count, width, littleEndian, seed >>> 0, key[0]! >>> 0, key[1]! >>> 0, mode, keepLast, probeLimit, starts, ends, slots);
}

/** Path of the loaded native addon. */
export function addonPath(): string {
  const result = load();
  if (result.path === undefined) throw new Error(`gguf-mmap: ${result.error}`);
  return result.path;
}
