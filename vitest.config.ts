import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// With forward slashes, as vite names modules on Windows too (the suite runs under wine).
const LIB = fileURLToPath(new URL('./lib/', import.meta.url)).replace(/\\/g, '/');

// Under wine (scripts/windows-smoke.sh runs the suite with the Windows node.exe) fetch cannot
// reach a local server (undici's connect fails with UNKNOWN under wine 8, while node:http
// works), so the tests of downloads and remote files do not run there.
const underWine = process.platform === 'win32' && process.env.WINEPREFIX !== undefined;
// (Every file that serves the Hub imitation: test/helpers/hub.ts.)
const needsFetch = [
  'test/remote/**',
  'test/cache/pull.test.ts',
  'test/cache/pull-faults.test.ts',
  'test/integration/download.test.ts',
  'test/estimate/estimate-remote.test.ts',
  'test/chat/apply.test.ts',
  'test/chat/chat-cli.test.ts',
  'test/view/server.test.ts',
  'test/view/page.test.ts',
];
// The browser tests drive Debian's chromium, a Linux program the Windows node.exe cannot start.
const needsChromium = ['test/web/browser.test.ts', 'test/view/static-page.test.ts'];
if (underWine) {
  console.log(`under wine: not running ${needsFetch.join(', ')} (fetch cannot connect under wine 8)`);
  console.log(`under wine: not running ${needsChromium.join(', ')} (chromium is a Linux program)`);
}

export default defineConfig({
  // The package's imports map (package.json) names the compiled twins in dist/: what dist/ imports
  // (tests that load the compiled package) gets those; the sources get Node's twins as sources
  // (lib/platform/README.md).
  plugins: [
    {
      name: 'gguf-mmap-platform-sources',
      enforce: 'pre',
      resolveId(source: string, importer: string | undefined) {
        const twin = /^#platform\/([a-z-]+)$/.exec(source);
        if (twin === null || importer === undefined || !importer.replace(/\\/g, '/').startsWith(LIB)) return null;
        return `${LIB}platform/node/${twin[1]}.ts`;
      },
    },
  ],
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...(underWine ? [...needsFetch, ...needsChromium] : [])],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Files share no state, but several map large sparse files: two at a time suits 2 cores.
    maxWorkers: 2,
  },
});
