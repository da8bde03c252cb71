// The documentation's examples compile under `strict` with no casts: every ```ts block of README.md
// and docs/*.md, and test/types/consumer.ts, checked against the library's sources here (scripts/package-test.sh
// checks them against the installed package, with node16, nodenext and bundler resolution).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..');

describe('types for consumers', () => {
  it("the README's and docs' TypeScript examples and the consumer example type-check under strict with no casts", () => {
    // Inside the repository (its ignored .cache/): the sources' #platform/* imports (package.json
    // `imports`, naming dist/) are read as the sources they compile from only for files under the
    // rootDir whose outDir is dist/, as in the repository's own tsconfig.
    mkdirSync(join(repo, '.cache'), { recursive: true });
    const dir = mkdtempSync(join(repo, '.cache', 'types-'));
    // The examples use top-level await: ES modules, whatever lies above the temporary folder.
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const docs = ['README.md', ...readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const blocksOf = (doc: string) => [...readFileSync(join(repo, doc), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    for (const doc of ['README.md', 'docs/api.md']) expect(blocksOf(doc).length, doc).toBeGreaterThan(0);
    const blocks = docs.flatMap(blocksOf);
    const files = blocks.map((code, i) => {
      const file = join(dir, `readme-${i}.ts`);
      writeFileSync(file, `${code}\nexport {};\n`);
      return file;
    });
    const config = {
      compilerOptions: {
        strict: true,
        noUncheckedIndexedAccess: true,
        noEmit: true,
        target: 'ES2022',
        lib: ['ES2022', 'ESNext.Disposable'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        typeRoots: [join(repo, 'node_modules/@types')],
        skipLibCheck: true,
        rootDir: repo,
        outDir: join(repo, 'dist'),
        // The "In tests" example imports vitest.
        paths: { 'gguf-mmap': [join(repo, 'lib/index.ts')], vitest: [join(repo, 'node_modules/vitest/dist/index.d.ts')] },
      },
      files: [join(repo, 'test/types/consumer.ts'), ...files],
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
    const r = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    rmSync(dir, { recursive: true, force: true });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, 60_000);
});
