// Metadata edits: read back by our reader, and the file compared byte for byte outside the header.
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, copyFileSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { editMetadata, hashTensors, openGguf, writeGgufFile } from '../../lib/index.js';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { randomBytes } from '../helpers/random.js';
import { optionalAddon } from '../../lib/native.js';
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

describe('gguf-mmap edit: what it refuses and what a rewrite keeps', () => {
  it('general.alignment cannot change; integers out of range are usage errors', () => {
    const path = join(dir, 'a64.gguf');
    writeGgufFile(path, { alignment: 64, tensors: [{ name: 't', type: 'F32', shape: [10], data: randomBytes(40, 9) }] });
    const before = readFileSync(path);
    expect(cli(path, '--delete', 'general.alignment').stderr).toMatch(/general.alignment cannot be deleted/);
    expect(cli(path, '--set', 'general.alignment=32', '--out', join(dir, 'x.gguf')).stderr).toMatch(/general.alignment stays 64/);
    expect(readFileSync(path).equals(before)).toBe(true);
    const plain = model('ranges.gguf');
    for (const bad of ['llama.block_count=99999999999', 'llama.block_count=-1', 'x=300:INT8', 'x=-5:UINT64', 'x=1e999:FLOAT32', 'x=1e300:FLOAT32']) {
      const r = cli(plain, '--set', bad);
      expect(r.status, bad).toBe(1);
      expect(r.stderr, bad).toMatch(/is not a/);
    }
  });

  it.skipIf(WINDOWS)(posixOnly('--in-place keeps the permissions and, through a symbolic link, replaces the file it names', 'no POSIX modes, links need a privilege'), () => {
    const path = model('private.gguf');
    chmodSync(path, 0o640);
    const link = join(dir, 'private-link.gguf');
    symlinkSync(path, link);
    const template = join(dir, 'long.jinja');
    writeFileSync(template, 'x'.repeat(5000));
    const r = cli(link, '--chat-template-file', template, '--in-place');
    expect(r.status, r.stderr).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o640);
    using g = openGguf(link);
    expect(g.metadata.get('tokenizer.chat_template')).toBe('x'.repeat(5000));
  });
});

describe.skipIf(SKIP_SHARED)('gguf-mmap edit of a file without tensors', () => {
  it('a vocabulary-only file that ends before its aligned data offset is rewritten whole (the header was cut short)', () => {
    const path = join(dir, 'vocab.gguf');
    copyFileSync(sharedPath('fixtures/real/vocab-llama-spm-v3.gguf'), path);
    const r = cli(path, '--set', 'x.y=abcdefghijkl', '--in-place');
    expect(r.status, r.stderr).toBe(0);
    using g = openGguf(path);
    expect(g.metadata.get('x.y')).toBe('abcdefghijkl');
    expect(g.tensorCount).toBe(0);
  });
});

describe.skipIf(process.platform !== 'linux' || optionalAddon() === undefined)('the kernel copy (copy_file_range)', () => {
  it('stops at the input\'s end and counts a trailing hole as copied: a file cut short is never reported whole', () => {
    const addon = optionalAddon()!;
    const input = join(dir, 'short.bin');
    writeFileSync(input, randomBytes(1000, 5));
    const fd = openSync(input, 'r');
    const out = openSync(join(dir, 'short-copy.bin'), 'w');
    try {
      expect(addon.copyFileRange(fd, 0, out, 0, 1 << 20)).toBe(1000);
      expect(addon.copyFileRange(fd, 5000, out, 0, 4096)).toBe(0);
      expect(readFileSync(join(dir, 'short-copy.bin')).equals(readFileSync(input))).toBe(true);
    } finally {
      closeSync(fd);
      closeSync(out);
    }
  });
});

describe('rewriting a file this process has open, faults, and what a killed writer leaves', () => {
  it.skipIf(optionalAddon() === undefined)('editing the input in place while this process maps it (any thread) is CANNOT_REWRITE (the open file would read the new header at the old offsets); after close() it works; --out is fine', async () => {
    const path = model('open.gguf');
    const before = readFileSync(path);
    const open = openGguf(path, { mode: 'mmap' });
    try {
      expect(() => editMetadata(path, { set: [['llama.block_count', { type: 'UINT32', value: 23 }]] })).toThrow(expect.objectContaining({ code: 'CANNOT_REWRITE' }));
      expect(() => editMetadata(path, { set: [['tokenizer.chat_template', { type: 'STRING', value: 'x'.repeat(4000) }]] }, { inPlace: true })).toThrow(/mapped\) in this process/);
      expect(readFileSync(path).equals(before)).toBe(true);
      const out = join(dir, 'open-copy.gguf');
      expect(editMetadata(path, { set: [['llama.block_count', { type: 'UINT32', value: 23 }]] }, { out }).inPlace).toBe(false);
      expect(open.metadata.get('llama.block_count')).toBe(22);
    } finally {
      open.close();
    }
    expect(editMetadata(path, { set: [['llama.block_count', { type: 'UINT32', value: 23 }]] }).inPlace).toBe(true);
    // A file opened in read mode holds no mapping: nothing refuses it.
    {
      using read = openGguf(path, { mode: 'read' });
      expect(editMetadata(path, { set: [['llama.block_count', { type: 'UINT32', value: 24 }]] }).inPlace).toBe(true);
    }
    // Mapped by a worker thread: refused too, until the worker closes it.
    const { Worker } = await import('node:worker_threads');
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       import(${JSON.stringify(pathToFileURL(join(import.meta.dirname, '../../dist/lib/index.js')).href)}).then(({ openGguf }) => {
         const g = openGguf(${JSON.stringify(path)}, { mode: 'mmap' });
         parentPort.postMessage('open');
         parentPort.once('message', () => { g.close(); parentPort.postMessage('closed'); });
       });`,
      { eval: true },
    );
    const next = () => new Promise((resolve) => worker.once('message', resolve));
    expect(await next()).toBe('open');
    expect(() => editMetadata(path, { set: [['llama.block_count', { type: 'UINT32', value: 25 }]] })).toThrow(expect.objectContaining({ code: 'CANNOT_REWRITE' }));
    worker.postMessage('close');
    expect(await next()).toBe('closed');
    expect(editMetadata(path, { set: [['llama.block_count', { type: 'UINT32', value: 25 }]] }).inPlace).toBe(true);
    await worker.terminate();
  });

  it.skipIf(WINDOWS)(posixOnly('a file size limit (EFBIG) part way through: edit --out and convert-endian leave no output and the input intact', 'no ulimit'), () => {
    const input = join(dir, 'big-input.gguf');
    writeGgufFile(input, { tensors: [{ name: 'w', type: 'F32', shape: [100_000], data: randomBytes(400_000, 9) }] });
    const before = readFileSync(input);
    for (const args of [['edit', input, '--set', 'x=y', '--out', join(dir, 'limited-edit.gguf')], ['convert-endian', input, '--to', 'big', '--out', join(dir, 'limited-be.gguf')]]) {
      const r = spawnSync('bash', ['-c', `trap '' XFSZ; ulimit -f 300; exec "$0" "$@"`, process.execPath, CLI, ...args], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/EFBIG/);
    }
    expect(readdirSync(dir).filter((f) => f.startsWith('limited-') || f.endsWith('.tmp'))).toEqual([]);
    expect(readFileSync(input).equals(before)).toBe(true);
  });

  it.skipIf(WINDOWS)(posixOnly('a writer killed mid-write (SIGKILL after the header, and again just before the rename) leaves the input intact and no output; the next run removes what it left', 'no /proc'), () => {
    const input = join(dir, 'killed.gguf');
    writeGgufFile(input, { tensors: [0, 1, 2].map((i) => ({ name: `t${i}`, type: 'F32', shape: [50_000], data: randomBytes(200_000, i + 20) })) });
    const before = readFileSync(input);
    for (const [i, fn] of ['writeSync', 'fsyncSync'].entries()) {
      // The hook kills the process at its first call of fn on a temporary file.
      const hook = join(dir, `kill-at-${fn}.mjs`);
      writeFileSync(
        hook,
        `import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
         const real = fs.${fn};
         fs.${fn} = function (fd, ...rest) {
           if (fs.readlinkSync('/proc/self/fd/' + fd).endsWith('.tmp')) process.kill(process.pid, 'SIGKILL');
           return real.call(this, fd, ...rest);
         };
         syncBuiltinESMExports();`,
      );
      const out = join(dir, `killed-out-${i}.gguf`);
      const r = spawnSync(process.execPath, ['--import', pathToFileURL(hook).href, CLI, 'edit', input, '--set', 'general.name=renamed', '--out', out], { encoding: 'utf8' });
      expect(r.signal, r.stderr).toBe('SIGKILL');
      expect(existsSync(out)).toBe(false);
      expect(readFileSync(input).equals(before)).toBe(true);
      const left = readdirSync(dir).filter((f) => f.startsWith(`.killed-out-${i}.gguf.`) && f.endsWith('.tmp'));
      expect(left).toHaveLength(1);
      // The next writer of that output removes the dead writer's temporary file, and finishes.
      expect(cli(input, '--set', 'general.name=renamed', '--out', out).status).toBe(0);
      expect(readdirSync(dir).filter((f) => f.startsWith(`.killed-out-${i}.gguf.`))).toEqual([]);
      using g = openGguf(out);
      expect(g.metadata.get('general.name')).toBe('renamed');
    }
    // Another host's temporary file (a folder shared over NFS), its pid not running here, stays.
    const foreign = join(dir, '.killed-out-x.gguf.some-other-host.999999.0123456789ab.tmp');
    writeFileSync(foreign, 'being written elsewhere');
    expect(cli(input, '--set', 'general.name=renamed', '--out', join(dir, 'killed-out-x.gguf')).status).toBe(0);
    expect(existsSync(foreign)).toBe(true);
  });
});
