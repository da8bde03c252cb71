// The package bundled as a user's app bundles it (for test/web and bench/bundle-size.ts): esbuild resolves `gguf-mmap` (the package
// itself, through its `exports`) under the conditions a web page or a Worker build uses.
import { build } from 'esbuild';
import { packageRoot } from '../lib/package-root.js';

export interface Bundle {
  code: string;
  /** The files with code in the output (after tree-shaking), relative to the package root. */
  inputs: string[];
  /** Every file the bundler read (tree-shaken or not). */
  parsed: string[];
  /** Bytes each input contributes to the output. */
  bytesByInput: Record<string, number>;
}

/**
 * `source` (a module importing from 'gguf-mmap') bundled for the browser (platform browser: the
 * `browser` condition) or for a Worker (platform neutral with the `worker` condition, as
 * Cloudflare's tooling builds). No Node built-in is marked external or shimmed: one imported
 * anywhere fails the build.
 */
export async function bundle(source: string, target: 'browser' | 'worker' = 'browser', minify = false): Promise<Bundle> {
  const result = await build({
    stdin: { contents: source, resolveDir: packageRoot(), sourcefile: 'app.js', loader: 'js' },
    bundle: true,
    write: false,
    format: 'esm',
    minify,
    metafile: true,
    logLevel: 'silent',
    ...(target === 'browser' ? { platform: 'browser' } : { platform: 'neutral', conditions: ['worker'], mainFields: ['module', 'main'] }),
  });
  const output = Object.values(result.metafile.outputs)[0]!;
  return {
    code: result.outputFiles[0]!.text,
    inputs: Object.entries(output.inputs).filter(([, v]) => v.bytesInOutput > 0).map(([k]) => k),
    parsed: Object.keys(result.metafile.inputs),
    bytesByInput: Object.fromEntries(Object.entries(output.inputs).map(([k, v]) => [k, v.bytesInOutput])),
  };
}
