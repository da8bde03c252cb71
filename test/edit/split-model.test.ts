// gguf-mmap split / merge against llama.cpp's llama-gguf-split: the shared sets are what it wrote
// for the shared inputs (../shared/fixtures/split/README.md gives the commands).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashTensors, openGguf, writeGgufFile } from '../../lib/index.js';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { randomBytes } from '../helpers/random.js';
import { sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The data section of a file (everything from its data offset on). */
function dataSection(path: string): Buffer {
  using g = openGguf(path, { split: false });
  return readFileSync(path).subarray(g.dataOffset);
}

const SETS = [
  { input: 'tiny-llama-q4_k_m.gguf', prefix: 'tiny-llama-q4_k_m', args: ['--split-max-tensors', '8'], parts: 3 },
  { input: 'tiny-llama-odd-q4_k_m.gguf', prefix: 'tiny-llama-odd-q4_k_m', args: ['--split-max-tensors', '9', '--no-tensor-first-split'], parts: 4 },
];

describe.skipIf(SKIP_SHARED)('split and merge against llama-gguf-split', () => {
  it("split writes llama-gguf-split's parts byte for byte for the same commands", () => {
    const dir = tempDir();
    for (const set of SETS) {
      const r = cli('split', sharedPath('fixtures/quantized', set.input), join(dir, set.prefix), ...set.args);
      expect(r.status, r.stderr).toBe(0);
      const written = r.stdout.trim().split('\n');
      expect(written).toHaveLength(set.parts);
      for (const part of written) {
        expect(readFileSync(part).equals(readFileSync(sharedPath('fixtures/split', basename(part)))), basename(part)).toBe(true);
      }
    }
  });

  it("merge gives the unsplit model's data section and tensors; its header is the input's keys and split.* (split.count 0)", () => {
    const dir = tempDir();
    for (const set of SETS) {
      const out = join(dir, set.input);
      const r = cli('merge', sharedPath('fixtures/split', `${set.prefix}-00002-of-0000${set.parts}.gguf`), out);
      expect(r.status, r.stderr).toBe(0);
      const input = sharedPath('fixtures/quantized', set.input);
      expect(dataSection(out).equals(dataSection(input))).toBe(true);
      using merged = openGguf(out);
      using original = openGguf(input);
      expect(merged.parts).toHaveLength(1); // split.count 0: not taken for a part
      expect([...merged.metadata.keys()].filter((k) => !k.startsWith('split.'))).toEqual([...original.metadata.keys()]);
      expect(['split.no', 'split.count', 'split.tensors.count'].map((k) => merged.metadata.get(k))).toEqual([0, 0, original.tensorCount]);
      expect(statSync(out).size).toBe(statSync(input).size + 96);
      expect(hashTensors(merged, { kinds: ['sha256'], name: 'm' })).toEqual(hashTensors(original, { kinds: ['sha256'], name: 'm' }));
      // merge writes a new file only.
      expect(cli('merge', sharedPath('fixtures/split', `${set.prefix}-00001-of-0000${set.parts}.gguf`), out).status).toBe(1);
    }
  });
});

describe('split and merge of writer-built models', () => {
  const dir = tempDir();
  const model = (name: string, sizes: number[]) => {
    const path = join(dir, name);
    writeGgufFile(path, {
      metadata: { 'general.name': { type: 'STRING', value: name } },
      tensors: sizes.map((n, i) => ({ name: `t${i}`, type: 'F32', shape: [n], data: randomBytes(4 * n, i + 1) })),
    });
    return path;
  };

  it('--split-max-size counts tensor bytes padded to 32 and splits before a tensor that would pass it; round trip by merge', () => {
    const input = model('sized.gguf', [1000, 1000, 10, 2000, 1]); // 4000, 4000, 40 -> 64, 8000, 4 -> 32 bytes
    const r = cli('split', input, join(dir, 'sized'), '--split-max-size', '8064');
    expect(r.status, r.stderr).toBe(0);
    const parts = r.stdout.trim().split('\n');
    // 4000 + 4000 + 64 = 8064 (not past it); then 8000 + 32.
    expect(
      parts.map((p) => {
        using g = openGguf(p, { split: false }); // closed: Windows cannot delete a mapped file
        return g.tensorCount;
      }),
    ).toEqual([3, 2]);
    const merged = join(dir, 'sized-merged.gguf');
    expect(cli('merge', parts[0]!, merged).status).toBe(0);
    expect(dataSection(merged).equals(dataSection(input))).toBe(true);
  });

  it('refuses a part without tensors, an output that is the input, and a file not split; leaves no temporary file', () => {
    const input = model('big.gguf', [4096, 10]);
    const tooSmall = cli('split', input, join(dir, 'small'), '--split-max-size', '1000');
    expect(tooSmall.status).toBe(3); // not possible for this file
    expect(tooSmall.stderr).toMatch(/CANNOT_REWRITE/);
    // A one-part set named as the input: writing it would destroy the model being read.
    const self = join(dir, 'self-00001-of-00001.gguf');
    copyFileSync(input, self);
    const before = readFileSync(self);
    const onto = cli('split', self, join(dir, 'self'), '--split-max-tensors', '5');
    expect(onto.status).toBe(1);
    expect(onto.stderr).toContain('a file being read');
    expect(readFileSync(self).equals(before)).toBe(true);
    expect(cli('merge', input, join(dir, 'not-a-set.gguf')).stderr).toMatch(/CANNOT_REWRITE: .* is not a part of a split model/);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(existsSync(join(dir, 'not-a-set.gguf'))).toBe(false);
  });

  it.skipIf(WINDOWS)(posixOnly('a write that fails (a file size limit) leaves no output and the input intact', 'no ulimit'), () => {
    const input = model('limited.gguf', [100_000, 100_000]);
    const before = readFileSync(input);
    // ulimit -f counts 512-byte blocks; SIGXFSZ ignored so that the write fails with EFBIG.
    const r = spawnSync('bash', ['-c', `trap '' XFSZ; ulimit -f 300; exec "${process.execPath}" "${CLI}" split "${input}" "${join(dir, 'limited')}" --split-max-tensors 1`], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/EFBIG/);
    expect(readdirSync(dir).filter((f) => f.startsWith('limited-'))).toEqual([]); // no part at all, not some
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(readFileSync(input).equals(before)).toBe(true);
  });
});

describe('split and merge refuse what would not read back, and leave nothing behind', () => {
  const dir = tempDir();

  it('an alignment other than 32 is CANNOT_REWRITE (llama-gguf-split pads to 32 and writes no alignment key in later parts)', () => {
    const path = join(dir, 'a64.gguf');
    writeGgufFile(path, { alignment: 64, tensors: [0, 1, 2].map((i) => ({ name: `t${i}`, type: 'F32', shape: [10], data: randomBytes(40, i + 1) })) });
    const r = cli('split', path, join(dir, 'a64'), '--split-max-tensors', '1');
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/CANNOT_REWRITE: .*alignment 64/);
    expect(readdirSync(dir).filter((f) => f.startsWith('a64-') || f.endsWith('.tmp'))).toEqual([]);
  });

  it('a rename that fails (a directory in the way of part 2) removes every temporary file and says the set is incomplete', () => {
    const input = join(dir, 'in.gguf');
    writeGgufFile(input, { tensors: [0, 1, 2].map((i) => ({ name: `t${i}`, type: 'F32', shape: [10], data: randomBytes(40, i + 1) })) });
    mkdirSync(join(dir, 'r-00002-of-00003.gguf'));
    const r = cli('split', input, join(dir, 'r'), '--split-max-tensors', '1');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('the set is incomplete');
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(existsSync(join(dir, 'r-00003-of-00003.gguf'))).toBe(false);
  });
});
