// The CLI against files that try to harm the terminal or the files beside them, files that change
// while it reads them, and what it cannot do here: each case one line on stderr and its exit status.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { encodeGguf, writeGgufSplit, type GgufWriteSpec } from '../../lib/index.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const dir = tempDir();

function cli(args: string[], env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []) {
  const r = spawnSync(process.execPath, [...nodeArgs, CLI, ...args], { encoding: 'utf8', maxBuffer: 64 << 20, env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
const u8 = (value: number) => ({ type: 'UINT8', value }) as const;
const ESCAPES = '\x1b]2;owned\x07\x1b[2J';

function file(name: string, spec: GgufWriteSpec): string {
  const path = join(dir, name);
  writeFileSync(path, encodeGguf(spec));
  return path;
}

describe('CLI error lines', () => {
  it('escape what the file says: a duplicate key, a tensor name with an unknown type id (no ESC or BEL reaches the terminal)', () => {
    const duplicate = file('dup.gguf', { metadata: [[`k${ESCAPES}`, u8(1)], [`k${ESCAPES}`, u8(2)]] });
    const unknownType = file('type.gguf', { tensors: [{ name: `t${ESCAPES}`, type: 'F32', shape: [1], data: f32([1]), forgeTypeId: 99 }] });
    for (const args of [['inspect', duplicate], ['inspect', unknownType, '--json'], ['dequant', unknownType, 't'], ['dequant', duplicate, 'x']]) {
      const r = cli(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f]/);
      expect(r.stderr).toContain('\\u001b]2;owned\\u0007');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('exit 3 for what cannot be done here: no native kernel for the backend, a type without a float conversion, no addon', () => {
    const path = file('kinds.gguf', { tensors: [{ name: 'f', type: 'F32', shape: [2], data: f32([1, 2]) }, { name: 'i', type: 'I64', shape: [1], data: new Uint8Array(8) }] });
    const noKernel = cli(['dequant', path, 'f', '--backend', 'native']);
    expect([noKernel.status, noKernel.stderr]).toEqual([3, expect.stringMatching(/^gguf-mmap: NO_NATIVE_KERNEL: /)]);
    const noDequantizer = cli(['dequant', path, 'i']);
    expect([noDequantizer.status, noDequantizer.stderr]).toEqual([3, expect.stringMatching(/^gguf-mmap: NO_DEQUANTIZER: /)]);
    const noAddon = cli(['warm', path], { GGUF_MMAP_ADDON: 'off' });
    expect([noAddon.status, noAddon.stderr]).toEqual([3, expect.stringMatching(/^gguf-mmap: ADDON_UNAVAILABLE: /)]);
    expect(cli(['inspect', join(dir, 'kinds-missing.gguf')]).status).toBe(1);
  });
});

describe('inspect', () => {
  it('one long key (2 MB) does not pad every line to its width', () => {
    const metadata: GgufWriteSpec['metadata'] = [['x'.repeat(2 << 20), u8(1)], ...Array.from({ length: 2000 }, (_, i) => [`k.${i}`, u8(1)] as const)];
    const r = cli(['inspect', file('long-key.gguf', { metadata })]);
    expect(r.status, r.stderr.slice(0, 200)).toBe(0);
    expect(r.stdout.length).toBeLessThan(3 << 20); // padded, it would be 2000 x 2 MB
    expect(r.stdout).toMatch(/^ {2}k\.7 {2,70}UINT8 +1$/m);
  });

  it('--json lists summary.hyperparameters in file order, integer-like names too', () => {
    const path = file('hyper.gguf', {
      metadata: [
        ['general.architecture', { type: 'STRING', value: 'llama' }],
        ['llama.context_length', { type: 'UINT32', value: 64 }],
        ['llama.7', { type: 'UINT32', value: 7 }],
        ['llama.block_count', { type: 'UINT32', value: 2 }],
      ],
    });
    const r = cli(['inspect', path, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(/"hyperparameters":\{([^}]*)\}/.exec(r.stdout)![1]).toBe('"context_length":64,"7":7,"block_count":2');
    expect(cli(['inspect', path]).stdout).toMatch(/^hyper {6}context_length 64, 7 7, block_count 2$/m);
  });

  it('--no-split shows one part of a split model alone', () => {
    const [part1, part2] = writeGgufSplit(join(dir, 'set'), { tensors: [0, 1, 2].map((i) => ({ name: `t${i}`, type: 'F32', shape: [2], data: f32([i, i]) })) }, { maxTensors: 2 });
    const whole = cli(['inspect', part2!]);
    expect(whole.stdout).toContain('parts (2): a split model');
    const alone = cli(['inspect', part2!, '--no-split']);
    expect(alone.status, alone.stderr).toBe(0);
    expect(alone.stdout).not.toContain('parts (');
    expect(alone.stdout).toContain('tensors (1)');
    expect(cli(['inspect', part1!, '--no-split', '--json']).stdout).toContain('"split.count"');
  });
});

describe('dequant --out', () => {
  it('refuses any part of the split model being read, not only the named file', () => {
    const [part1, part2] = writeGgufSplit(join(dir, 'victim'), { tensors: [0, 1, 2].map((i) => ({ name: `t${i}`, type: 'F32', shape: [2], data: f32([i, i]) })) }, { maxTensors: 2 });
    const before = readFileSync(part2!);
    const r = cli(['dequant', part1!, 't0', '--out', part2!]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('a file being read');
    expect(readFileSync(part2!).equals(before)).toBe(true);
  });

  it('a final rename that fails leaves no temporary file behind', () => {
    const path = file('rename.gguf', { tensors: [{ name: 't', type: 'F32', shape: [2], data: f32([1, 2]) }] });
    const target = join(dir, 'occupied');
    mkdirSync(join(target, 'inside'), { recursive: true }); // renaming a file over a non-empty directory fails
    const r = cli(['dequant', path, 't', '--out', target]);
    expect(r.status).toBe(1);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('--backend wasm decodes with the WebAssembly kernels, as the native ones', () => {
    const q = new Uint8Array(34 * 4).map((_, i) => (i % 34 === 1 ? 0x3c : (i * 37) & 0xff));
    const path = file('wasm.gguf', { tensors: [{ name: 'q', type: 'Q8_0', shape: [32, 4], data: q }] });
    const wasm = cli(['dequant', path, 'q', '--backend', 'wasm']);
    expect(wasm.status, wasm.stderr).toBe(0);
    expect(wasm.stdout).toBe(cli(['dequant', path, 'q', '--backend', 'js']).stdout);
  });
});

describe.skipIf(READ_MODE || WINDOWS)(posixOnly(mmapOnly('warm on a file that changes meanwhile'), 'Windows refuses to shrink a mapped file (scripts/windows-lost-pages.ts checks lost pages there)'), () => {
  it('is one FILE_CHANGED line and exit 2, not an unhandled rejection', () => {
    const path = file('changes.gguf', { tensors: [{ name: 't', type: 'F32', shape: [1 << 20], data: new Uint8Array(4 << 20).fill(1) }] });
    // The file is truncated just as warm starts its prefetch (a preloaded module wraps it).
    const hook = join(dir, 'truncate-hook.mjs');
    const gguf = pathToFileURL(join(import.meta.dirname, '../../dist/lib/file/gguf-file.js')).href;
    writeFileSync(
      hook,
      `import { truncateSync } from 'node:fs';
       import { GgufFile } from ${JSON.stringify(gguf)};
       const prefetch = GgufFile.prototype.prefetch;
       GgufFile.prototype.prefetch = function (options) { truncateSync(${JSON.stringify(path)}, 4096); return prefetch.call(this, options); };`,
    );
    const r = cli(['warm', path], {}, ['--import', pathToFileURL(hook).href]);
    expect(r.stderr).toMatch(/^gguf-mmap: FILE_CHANGED: [^\n]*\n$/);
    expect(r.status).toBe(2);
  });
});

