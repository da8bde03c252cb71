// The documentation's links lead somewhere: every relative link names a file of the repository,
// and every #anchor a heading of that file (as GitHub makes anchors from headings).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GGUF_ERROR_CODES } from '../lib/index.js';

const repo = join(import.meta.dirname, '..');
const docs = ['README.md', ...readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

function anchorsOf(doc: string): Set<string> {
  const anchors = new Set<string>();
  let code = false;
  for (const line of readFileSync(join(repo, doc), 'utf8').split('\n')) {
    if (line.startsWith('```')) code = !code;
    if (code || !line.startsWith('#')) continue;
    const text = line.replace(/^#+\s*/, '').toLowerCase().replace(/[`*_]/g, '').replace(/[^\w\- ]/g, '');
    anchors.add(text.replace(/ /g, '-'));
  }
  return anchors;
}

describe('documentation', () => {
  it('every relative link and anchor in README.md and docs/ resolves', () => {
    const broken: string[] = [];
    for (const doc of docs) {
      const text = readFileSync(join(repo, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const file = path === '' ? doc : normalize(join(dirname(doc), path));
        if (!existsSync(join(repo, file))) broken.push(`${doc}: ${target} (no file)`);
        else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor)) broken.push(`${doc}: ${target} (no heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README lists every error code the library throws', () => {
    const readme = readFileSync(join(repo, 'README.md'), 'utf8');
    expect(GGUF_ERROR_CODES.length).toBeGreaterThan(20);
    expect(GGUF_ERROR_CODES.filter((code) => !readme.includes(`| \`${code}\` |`))).toEqual([]);
  });
});
