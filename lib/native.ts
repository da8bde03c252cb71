import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot } from './package-root.js';

/** The addon's Mapping: one read-only mmap of a whole file (native/addon.cc). */
export interface NativeMapping {
  readonly size: number;
  readonly closed: boolean;
  /** The file as it was when mapped: device, inode and mtime in nanoseconds, as decimal strings. */
  readonly identity: { dev: string; ino: string; mtimeNs: string };
  /** An external ArrayBuffer over file bytes [offset, offset + length). */
  window(offset: number, length: number): ArrayBuffer;
  /** Detaches every window handed out, then unmaps. Idempotent. */
  close(): void;
}

interface Addon {
  Mapping: new (path: string, maxWindow: number) => NativeMapping;
  liveMappings(): number;
  skipStrings(view: DataView, pos: number, count: number, width: number, littleEndian: boolean): number;
  dequantize(typeId: number, src: Uint8Array, nblocks: number, out: Float32Array, outIndex: number): boolean;
  dequantizeAsync(typeId: number, src: Uint8Array, nblocks: number, out: Float32Array, outIndex: number): Promise<void>;
  dequantInfo(): { isa: string; typeIds: number[] };
  forcePortableDequant(portable: boolean): void;
  setIq4nlValues(values: Int8Array): void;
}

/**
 * Which build of the addon to load: GGUF_MMAP_ADDON if set (CI uses it to test the cmake-js
 * build), else node-gyp's build/Release, else cmake-js's build-cmake/Release.
 */
function resolveAddon(): string {
  const override = process.env.GGUF_MMAP_ADDON;
  if (override) return override;
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
