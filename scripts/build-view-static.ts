// Bundles the viewer's static page code (lib/view/static-page.ts, compiled to dist/) for the
// browser into dist/lib/view/static-app.js: one classic script (a page opened from file:// may
// not load modules), the browser build's #platform twins, no Node built-in. Part of build:ts;
// `gguf-mmap view --static DIR` copies it beside the page.
import { build } from 'esbuild';
import { join } from 'node:path';
import { packageRoot } from '../lib/package-root.js';

export async function buildViewStatic(): Promise<void> {
  const root = packageRoot();
  await build({
    entryPoints: [join(root, 'dist', 'lib', 'view', 'static-page.js')],
    outfile: join(root, 'dist', 'lib', 'view', 'static-app.js'),
    bundle: true,
    platform: 'browser',
    format: 'iife',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
}

await buildViewStatic();
