import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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

  it('finds the build node-gyp-build finds, in this tree and in the layouts an installed package can have', () => {
    expect(resolveAddon()).toBe(nodeGypBuild.path(packageRoot()));
    // Each layout in a fresh process (node-gyp-build reads LIBC and PREBUILDS_ONLY when loaded),
    // with empty files named as the builds are: both resolvers' answers, or null where none.
    const here = `${process.platform}-${process.arch}`;
    const elsewhere = `${process.platform === 'linux' ? 'darwin' : 'linux'}-${process.arch}`;
    const layouts: Array<{ files: string[]; env?: Record<string, string>; other?: string[] }> = [
      { files: [`prebuilds/${here}/gguf-mmap.glibc.node`] },
      { files: [`prebuilds/${here}/gguf-mmap.node`] },
      { files: [`prebuilds/${here}/gguf-mmap.node`, `prebuilds/${here}/gguf-mmap.glibc.node`] },
      { files: [`prebuilds/${here}/gguf-mmap.glibc.node`, `prebuilds/${here}/gguf-mmap.musl.node`], env: { LIBC: 'musl' } },
      { files: [`prebuilds/${here}/gguf-mmap.musl.node`] },
      { files: [`prebuilds/${elsewhere}/gguf-mmap.glibc.node`, `prebuilds/${elsewhere}/gguf-mmap.node`] },
      { files: ['build/Release/gguf_mmap.node', `prebuilds/${here}/gguf-mmap.glibc.node`] },
      { files: ['build/Release/gguf_mmap.node', `prebuilds/${here}/gguf-mmap.glibc.node`], env: { PREBUILDS_ONLY: '1' } },
      { files: [`prebuilds/${here}/gguf-mmap.node`], other: [`prebuilds/${here}/gguf-mmap.glibc.node`], env: { GGUF_MMAP_PREBUILD: 'OTHER' } },
    ];
    const native = resolve('dist/lib/native.js');
    const script = `import { createRequire } from 'node:module';
      import { resolveAddon } from ${JSON.stringify(pathToFileURL(native).href)};
      const root = process.argv[1];
      let theirs = null;
      try { theirs = createRequire(import.meta.url)('node-gyp-build').path(root); } catch {}
      console.log(JSON.stringify([resolveAddon(root) ?? null, theirs]));`;
    for (const { files, env = {}, other = [] } of layouts) {
      const root = mkdtempSync(join(tmpdir(), 'gguf-mmap-resolve-'));
      const otherDir = mkdtempSync(join(tmpdir(), 'gguf-mmap-resolve-other-'));
      try {
        writeFileSync(join(root, 'package.json'), '{ "name": "gguf-mmap" }');
        for (const [dir, names] of [[root, files], [otherDir, other]] as const) {
          for (const file of names) {
            mkdirSync(dirname(join(dir, file)), { recursive: true });
            writeFileSync(join(dir, file), '');
          }
        }
        const childEnv = { ...process.env, ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === 'OTHER' ? otherDir : v])) };
        const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, root], { encoding: 'utf8', cwd: packageRoot(), env: childEnv });
        expect(run.status, run.stderr).toBe(0);
        const [ours, theirs] = JSON.parse(run.stdout.trim()) as [string | null, string | null];
        expect(ours, `${files.join(', ')} ${JSON.stringify(env)}`).toBe(theirs);
      } finally {
        rmSync(root, { recursive: true, force: true });
        rmSync(otherDir, { recursive: true, force: true });
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
