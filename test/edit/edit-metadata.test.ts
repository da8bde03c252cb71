// Metadata edits: read back by our reader, and the file compared byte for byte outside the header.
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { editMetadata, hashTensors, openGguf, writeGgufFile } from '../../lib/index.js';
import { randomBytes } from '../helpers/random.js';
import { sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const dir = tempDir();

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, 'edit', ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function model(name: string): string {
  const path = join(dir, name);
  writeGgufFile(path, {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['general.name', { type: 'STRING', value: 'twelve chars' }],
      ['llama.block_count', { type: 'UINT32', value: 22 }],
      ['tokenizer.chat_template', { type: 'STRING', value: '{{ old }}' }],
    ],
    tensors: [0, 1].map((i) => ({ name: `t${i}`, type: 'F32', shape: [777 + i], data: randomBytes(4 * (777 + i), i + 3) })),
  });
  return path;
}

const dataOf = (path: string) => {
  using g = openGguf(path, { split: false });
  return { offset: g.dataOffset, bytes: readFileSync(path).subarray(g.dataOffset) };
};

describe('gguf-mmap edit', () => {
  it('in place when the header keeps its length: same-size scalars and strings; only header bytes change', () => {
    const path = model('inplace.gguf');
    const before = dataOf(path);
    const r = cli(path, '--set', 'llama.block_count=7', '--set', 'general.name=TWELVE CHARS');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/2 changes, in place/);
    const after = dataOf(path);
    expect(after.offset).toBe(before.offset);
    expect(after.bytes.equals(before.bytes)).toBe(true);
    using g = openGguf(path);
    expect([...g.metadata.keys()]).toEqual(['general.architecture', 'general.name', 'llama.block_count', 'tokenizer.chat_template']);
    expect([g.metadata.get('llama.block_count'), g.metadata.type('llama.block_count'), g.metadata.get('general.name')]).toEqual([7, 'UINT32', 'TWELVE CHARS']);
  });

  it('a header that no longer fits: refused without --out or --in-place (file untouched); --out a new file, --in-place a replaced one, data byte for byte', () => {
    const path = model('grow.gguf');
    const original = readFileSync(path);
    const template = join(dir, 'template.jinja');
    writeFileSync(template, '{% for m in messages %}{{ m.content }}{% endfor %}'.repeat(20));
    const refused = cli(path, '--chat-template-file', template);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/does not fit .*--out.*--in-place/);
    expect(readFileSync(path).equals(original)).toBe(true);

    const out = join(dir, 'grown.gguf');
    expect(cli(path, '--chat-template-file', template, '--delete', 'general.name', '--out', out).status).toBe(0);
    const originalData = dataOf(path);
    expect(dataOf(out).bytes.equals(originalData.bytes)).toBe(true);
    expect(dataOf(out).offset).toBeGreaterThan(originalData.offset);
    {
      using g = openGguf(out);
      using o = openGguf(path);
      expect(g.metadata.get('tokenizer.chat_template')).toBe(readFileSync(template, 'utf8'));
      expect(g.metadata.has('general.name')).toBe(false);
      expect(hashTensors(g, { kinds: ['sha256'], name: 'm' })).toEqual(hashTensors(o, { kinds: ['sha256'], name: 'm' }));
    }
    // The same edit with --in-place: the input replaced by what --out wrote.
    const replaced = cli(path, '--chat-template-file', template, '--delete', 'general.name', '--in-place');
    expect(replaced.status, replaced.stderr).toBe(0);
    expect(replaced.stdout).toMatch(/rewritten/);
    expect(readFileSync(path).equals(readFileSync(out))).toBe(true);
  });

  it('types: an existing key keeps its type, :TYPE names one, a value that is not of the type is a usage error; --out onto the input is refused', () => {
    const path = model('types.gguf');
    expect(cli(path, '--set', 'llama.block_count=x').status).toBe(1);
    expect(cli(path, '--set', 'llama.block_count=1.5').stderr).toMatch(/not a UINT32/);
    const out = join(dir, 'typed.gguf');
    expect(cli(path, '--set', 'new.flag=true:BOOL', '--set', 'new.url=http://x:8080/y', '--set', 'new.f=0.5:FLOAT32', '--out', out).status).toBe(0);
    using g = openGguf(out);
    expect(['new.flag', 'new.url', 'new.f'].map((k) => [g.metadata.type(k), g.metadata.get(k)])).toEqual([['BOOL', true], ['STRING', 'http://x:8080/y'], ['FLOAT32', 0.5]]);
    expect(cli(path, '--set', 'general.name=x', '--out', path).stderr).toContain('a file being read');
    expect(() => editMetadata(path, { delete: ['absent.key'] })).toThrow(TypeError);
  });
});

describe.skipIf(SKIP_SHARED)('gguf-mmap edit on real files', () => {
  it('alignment 64 is kept; a metadata-only edit leaves every tensor as it was', () => {
    const path = join(dir, 'align64.gguf');
    copyFileSync(sharedPath('fixtures/real/synthetic-align64.gguf'), path);
    const out = join(dir, 'align64-edited.gguf');
    const r = cli(path, '--set', 'general.name=a name long enough to move the data section forward by a block', '--out', out);
    expect(r.status, r.stderr).toBe(0);
    using g = openGguf(out);
    using o = openGguf(path);
    expect(g.alignment).toBe(64);
    expect(g.dataOffset % 64).toBe(0);
    expect(hashTensors(g, { kinds: ['sha256'], name: 'm' })).toEqual(hashTensors(o, { kinds: ['sha256'], name: 'm' }));
    expect(statSync(out).size - g.dataOffset).toBe(statSync(path).size - o.dataOffset);
  });
});
