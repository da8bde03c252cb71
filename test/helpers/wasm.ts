import { existsSync } from 'node:fs';
import { wasmPath } from '../../lib/dequant/wasm.js';

/** The WebAssembly kernels are built (npm run build:wasm; CI builds them before the suite). */
export const WASM_BUILT = existsSync(wasmPath());
if (!WASM_BUILT) {
  console.warn(`gguf-mmap tests: ${wasmPath()} not built (npm run build:wasm); WebAssembly kernel tests are skipped`);
}
