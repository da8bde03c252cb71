import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonPath, resolveAddon } from '../lib/native.js';
import { packageRoot } from '../lib/package-root.js';

const nodeGypBuild = createRequire(import.meta.url)('node-gyp-build') as { path(dir: string): string };

describe('native addon', () => {
  it('loads the build that GGUF_MMAP_ADDON names, else node-gyp build/Release, else the prebuilt binary', () => {
    const path = addonPath();
    expect(existsSync(path)).toBe(true);
    const wanted = process.env.GGUF_MMAP_ADDON;
    if (wanted) expect(resolve(path)).toBe(resolve(wanted));
    else expect(path).toMatch(/build\/Release\/gguf_mmap\.node$|prebuilds\/linux-x64\/gguf-mmap\.glibc\.node$/);
    console.info(`addon under test: ${path}`);
  });

  it('finds the build node-gyp-build finds, in this tree and in package layouts without build/', () => {
    expect(resolveAddon()).toBe(nodeGypBuild.path(packageRoot()));
    // Layouts as installed packages have them: a prebuilt binary for this system, one for
    // another system only, and build/Release beside a prebuilt one.
    const here = `${process.platform}-${process.arch}`;
    const tagged = process.platform === 'linux' ? 'gguf-mmap.glibc.node' : 'gguf-mmap.node';
    const layouts = [[`prebuilds/${here}/${tagged}`], [`prebuilds/${here}-other/gguf-mmap.node`], ['build/Release/gguf_mmap.node', `prebuilds/${here}/${tagged}`]];
    for (const files of layouts) {
      const root = mkdtempSync(join(tmpdir(), 'gguf-mmap-resolve-'));
      try {
        writeFileSync(join(root, 'package.json'), '{ "name": "gguf-mmap" }');
        for (const file of files) {
          mkdirSync(dirname(join(root, file)), { recursive: true });
          writeFileSync(join(root, file), '');
        }
        let theirs: string | undefined;
        try {
          theirs = nodeGypBuild.path(root);
        } catch {
          theirs = undefined; // node-gyp-build throws where it finds nothing
        }
        expect(resolveAddon(root), files.join(', ')).toBe(theirs);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    }
  });
});
