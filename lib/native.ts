import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, isAbsolute, join } from 'node:path';
import { packageRoot } from './package-root.js';

/** Device, inode, size and mtime in nanoseconds, as decimal strings (they may not fit a double). */
export interface FileIdentity {
  readonly dev: string;
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
}

/** The addon's Mapping: one private copy-on-write mmap of a whole file (native/region.h). */
export interface NativeMapping {
  readonly size: number;
  readonly closed: boolean;
  /** False when the kernel would not commit a writable mapping and it is read-only. */
  readonly copyOnWrite: boolean;
  /** The file as it was when mapped. */
  readonly identity: FileIdentity;
  /** The mapped file as it is now (fstat of the file itself, not its path); null after close. */
  currentIdentity(): FileIdentity | null;
  /** A 4-byte buffer over the status word the SIGBUS handler sets (bit 0: pages lost). */
  status(): ArrayBuffer;
  /** An external ArrayBuffer over file bytes [offset, offset + length). */
  window(offset: number, length: number): ArrayBuffer;
  /** Lets go of the file: every window stays valid and reads zeros. Idempotent. */
  close(): void;
}

/** Native dequantization off the JS thread, on memory the job owns (native/dequant_napi.cc). */
export interface NativeDequantJob {
  run(firstBlock: number, count: number): Promise<void>;
  /** The output, handed over without a copy (once, when no run is in flight). */
  take(): Float32Array;
  /** Or the output copied into `out` from `outIndex` (once, when no run is in flight). */
  copyTo(out: Float32Array, outIndex: number): void;
}

interface Addon {
  Mapping: new (path: string, maxWindow: number) => NativeMapping;
  liveMappings(): number;
  skipStrings(view: DataView, pos: number, count: number, width: number, littleEndian: boolean): number;
  dequantize(typeId: number, src: Uint8Array, nblocks: number, out: Float32Array, outIndex: number): boolean;
  DequantJob: new (typeId: number, src: Uint8Array, nblocks: number) => NativeDequantJob;
  dequantInfo(): { isa: string; typeIds: number[] };
  forcePortableDequant(portable: boolean): void;
  setIq4nlValues(values: Int8Array): void;
}

/**
 * Which build of the addon to load: GGUF_MMAP_ADDON if set (CI uses it to test the cmake-js and
 * sanitizer builds), else node-gyp's build/Release, else cmake-js's build-cmake/Release.
 * The override must be an absolute path to a `.node` file: anything else given to require()
 * could run as JavaScript, or be resolved against the working directory.
 */
function resolveAddon(): string {
  const override = process.env.GGUF_MMAP_ADDON;
  if (override) {
    if (!isAbsolute(override) || extname(override) !== '.node' || override.includes('\0')) {
      throw new Error(`gguf-mmap: GGUF_MMAP_ADDON must be an absolute path to a .node file, not '${override}'`);
    }
    return override;
  }
  const root = packageRoot();
  const candidates = [join(root, 'build/Release/gguf_mmap.node'), join(root, 'build-cmake/Release/gguf_mmap.node')];
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) {
    throw new Error(`gguf-mmap: native addon not built (looked for ${candidates.join(', ')}); run npm install`);
  }
  return found;
}

let loaded: { addon: Addon; path: string } | undefined;

function load(): { addon: Addon; path: string } {
  if (loaded === undefined) {
    const path = resolveAddon();
    loaded = { addon: createRequire(import.meta.url)(path) as Addon, path };
  }
  return loaded;
}

/** The addon itself, for modules that wrap one of its functions (dequantization). */
export function addon(): Addon {
  return load().addon;
}

export function mapFile(path: string, maxWindow: number): NativeMapping {
  return new (load().addon.Mapping)(path, maxWindow);
}

/** Mappings not yet unmapped, across every thread of this process. */
export function liveMappings(): number {
  return load().addon.liveMappings();
}

/**
 * Steps over `count` GGUF strings (length fields of `width` bytes) at `pos` in `view`: returns the
 * offset past the last, or -1 - the offset of the first length field that does not fit the view.
 */
export function walkStrings(view: DataView, pos: number, count: number, width: number, littleEndian: boolean): number {
  return load().addon.skipStrings(view, pos, count, width, littleEndian);
}

/** Path of the loaded native addon. */
export function addonPath(): string {
  return load().path;
}
