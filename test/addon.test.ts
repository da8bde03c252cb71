import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addon, addonPath, optionalAddon, resolveAddon } from '../lib/native.js';
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

  it.skipIf(optionalAddon() === undefined)('counts the CPUs the process may use as libuv does (affinity), one under taskset -c 0, as the helper thread decides', () => {
    const cpus = addon().usableCpus();
    // libuv counts the affinity mask; the addon caps it by a cgroup CPU limit too, where one is set.
    expect(cpus).toBeGreaterThanOrEqual(1);
    expect(cpus).toBeLessThanOrEqual(availableParallelism());
    const pinned = spawnSync('taskset', ['-c', '0', process.execPath, '-e', `const m = { exports: {} }; process.dlopen(m, ${JSON.stringify(addonPath())}); console.log(m.exports.usableCpus())`], { encoding: 'utf8' });
    if (pinned.error !== undefined || pinned.status !== 0) {
      console.info(`taskset could not run here (${pinned.error?.message ?? pinned.stderr.trim()}): the pinned case is skipped`);
      return;
    }
    expect(Number(pinned.stdout.trim())).toBe(1);
  });
});
