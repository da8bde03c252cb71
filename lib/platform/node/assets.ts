import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../package-root.js';

/** Where the package keeps a file it ships (`wasm/dequant.wasm`, `data/tables/...`). */
export function assetPath(name: string): string {
  return join(packageRoot(), ...name.split('/'));
}

/** The bytes of a file the package ships, or undefined when it is missing. */
export function readAsset(name: string): Uint8Array | undefined {
  const path = assetPath(name);
  // (existsSync can throw too: Deno without read permission for the file.)
  if (!existsSync(path)) return undefined;
  return new Uint8Array(readFileSync(path));
}
