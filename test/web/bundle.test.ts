// The browser build as bundlers see it (issue 37): the package under the `browser` and `worker`
// conditions bundles with no Node built-in and no addon, and what a page imports alone does not
// pull in the rest. Needs `npm run build:ts` (the bundles are made from dist/, as an installed
// package's are).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundle } from '../../scripts/bundle-package.js';

const repo = join(import.meta.dirname, '..', '..');

const nodeImports = (code: string) => [...code.matchAll(/\bfrom\s*["'](node:[^"']+)["']|\bimport\(\s*["'](node:[^"']+)["']\)|\brequire\(\s*["']([^"'.][^"']*)["']\)/g)].map((m) => m[1] ?? m[2] ?? m[3]);

describe('the browser build, bundled', () => {
  it('bundles for the browser with no shims: the browser entry, the web twins, no Node built-in, no addon', async () => {
    const { code, inputs, parsed } = await bundle(`export * from 'gguf-mmap';`);
    expect(parsed).toContain('dist/lib/browser.js');
    expect(parsed).not.toContain('dist/lib/index.js');
    expect(parsed.filter((f) => f.startsWith('dist/lib/platform/node/'))).toEqual([]);
    expect(inputs).not.toContain('dist/lib/index.js');
    expect(inputs.filter((f) => f.startsWith('dist/lib/platform/node/'))).toEqual([]);
    expect(inputs.filter((f) => /dist\/lib\/(native|package-root|cache|edit|hash|cli|view)\b/.test(f))).toEqual([]);
    expect(nodeImports(code)).toEqual([]);
    // Globals only Node has: a page would throw ReferenceError the first time it ran them.
    expect(code).not.toMatch(/\b(Buffer\.from|process\.env|setImmediate|__dirname)\b/);
  }, 60_000);

  it("bundles for a Worker (the 'worker' condition, platform neutral: no node: module resolves)", async () => {
    const { code, parsed } = await bundle(`export { openGgufRemote, parseGguf, estimateMemory, renderChatTemplate, Tokenizer } from 'gguf-mmap';`, 'worker');
    expect(parsed).toContain('dist/lib/browser.js');
    expect(parsed.filter((f) => f.startsWith('dist/lib/platform/node/'))).toEqual([]);
    expect(nodeImports(code)).toEqual([]);
  }, 60_000);

  it('leaves out of the browser build what needs Node (openGguf, pullModel, the writers)', async () => {
    const entry = await import('../../lib/browser.js');
    for (const name of ['openGguf', 'pullModel', 'writeGgufFile', 'encodeGguf', 'hashTensors', 'editMetadata', 'startViewServer', 'liveMappings']) {
      expect(Object.keys(entry), name).not.toContain(name);
    }
    for (const name of ['openGgufRemote', 'openGgufBlob', 'parseGguf', 'estimateMemory', 'largestContext', 'fitGpuLayers', 'renderChatTemplate', 'Tokenizer', 'dequantizeAsync', 'GgufError']) {
      expect(Object.keys(entry), name).toContain(name);
    }
  });

  it('tree-shakes: templates alone, and the tokenizer alone, leave out the estimates, the WebAssembly kernels and the HTTP client', async () => {
    const templates = await bundle(`export { renderChatTemplate } from 'gguf-mmap';`);
    expect(templates.inputs.filter((f) => /dist\/lib\/(estimate|dequant|remote|tokenizer|platform\/web\/assets)/.test(f))).toEqual([]);
    const tokenizer = await bundle(`export { Tokenizer } from 'gguf-mmap';`);
    expect(tokenizer.inputs.some((f) => f.includes('dist/lib/tokenizer/'))).toBe(true);
    expect(tokenizer.inputs.filter((f) => /dist\/lib\/(estimate|dequant|remote|chat)\/|assets-data/.test(f))).toEqual([]);
  }, 60_000);

  it("gives TypeScript the browser build's types under the browser condition: what needs Node is absent", () => {
    // Inside the package (its ignored .cache/), so that 'gguf-mmap' resolves to the package itself.
    mkdirSync(join(repo, '.cache'), { recursive: true });
    const dir = mkdtempSync(join(repo, '.cache', 'browser-types-'));
    try {
      writeFileSync(join(dir, 'page.ts'), [
        "import { estimateMemory, openGgufBlob, openGgufRemote, renderChatTemplate, type GgufFile } from 'gguf-mmap';",
        '// @ts-expect-error openGguf maps files: Node only',
        "import { openGguf } from 'gguf-mmap';",
        '// @ts-expect-error the cache: Node only',
        "import { pullModel } from 'gguf-mmap';",
        'declare const picked: Blob;',
        'const file: GgufFile = await openGgufBlob(picked);',
        "const remote = await openGgufRemote('hf:org/repo/model.gguf');",
        "export const ids: Int32Array = file.tokenizer().encode('hi');",
        'export const total: number = estimateMemory(remote).total + file.summary().parameters;',
        "export const text: string = renderChatTemplate('{{ 1 }}', { messages: [] });",
        '// @ts-expect-error page-cache control needs a mapping',
        'file.residency();',
        '// @ts-expect-error a synchronous sha256 needs Node',
        'file.tensors[0]!.sha256();',
        'export const mode: "memory" | "remote" | "blob" = file.mode;',
        '',
      ].join('\n'));
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', customConditions: ['browser'], lib: ['ES2022', 'DOM', 'ESNext.Disposable'], types: [], skipLibCheck: true },
        files: ['page.ts'],
      }));
      const r = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
