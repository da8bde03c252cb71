import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WINDOWS } from '../helpers/platform.js';
import { encodeGguf, openGguf } from '../../lib/index.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { tempDir } from '../helpers/tmp.js';
import { ensureTinyllamaShaped } from '../../scripts/tinyllama-shape.js';

// The CLI is tested as users run it: the compiled dist/lib/cli/cli.js (npm test builds it first).
const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 256 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('gguf-mmap inspect', () => {
  it('summarizes the embedded sample without a FILE', () => {
    const r = cli('inspect');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('GGUF v3, little-endian, alignment 32');
    expect(r.stdout).toMatch(/token_embd\.weight\s+Q4_K\s+\[256, 32\]/);
    expect(r.stdout).toContain('general.name');
    expect(r.stdout).toContain('6 tensors');
    expect(r.stderr).toBe('');
  });

  it('shows the model summary: architecture, parameters, bits per weight, hyperparameters; --json has it whole', () => {
    const file = ensureTinyllamaShaped(join(tempDir(), 'tinyllama-shaped.gguf'));
    const r = cli('inspect', file);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("model      llama 'tinyllama_tinyllama-1.1b-chat-v1.0 (shape only)', 1.10 B parameters, 4.85 bits per weight");
    expect(r.stdout).toMatch(/^hyper .*context_length 2048, embedding_length 2048, block_count 22, .*attention\.layer_norm_rms_epsilon 0\.00001(,|$)/m);
    expect(r.stdout).toMatch(/^by type    Q4_K x\d+ \(.*, 4\.50 bpw\), Q6_K x\d+ \(.*, 6\.56 bpw\), F32 x45 /m);
    const json = JSON.parse(cli('inspect', file, '--json').stdout);
    using g = openGguf(file);
    expect(json.summary).toEqual({ ...JSON.parse(JSON.stringify(g.summary())), hyperparameters: expect.any(Object) });
    // Hyperparameters spelled as the metadata is: the FLOAT32 epsilon and the numbers exact.
    expect(json.summary.hyperparameters).toEqual({ ...JSON.parse(JSON.stringify(g.summary().hyperparameters)) });
    expect(json.summary.parameters).toBe(1_100_048_384);
  });

  it('shows the typed hyperparameters (llama.cpp\'s defaults filled in); --json has them, absent fields as null', () => {
    const file = ensureTinyllamaShaped(join(tempDir(), 'tinyllama-shaped.gguf'));
    // TinyLlama 1.1B: 32 heads sharing 4 KV heads of 2048 / 32 = 64, rope over the whole head
    expect(cli('inspect', file).stdout).toContain(
      'family     transformer: 22 blocks, embedding 2048, context 2048, heads 32 (KV 4) of 64, FFN 5632, rope 64 dims base 10000, rms norm eps 0.00001, vocabulary 32000\n',
    );
    const json = JSON.parse(cli('inspect', file, '--json').stdout);
    expect(json.hyperparameters).toMatchObject({ family: 'transformer', blockCount: 22, headCountKv: 4, keyLength: 64, experts: null, ssm: null, slidingWindow: null });
    expect(json.hyperparameters.rope.scaling).toEqual({ type: 'linear', factor: 1, originalContextLength: 2048, attentionFactor: 1, finetuned: false });
  });

  it('a header whose hyperparameters llama.cpp would refuse: the reason instead of the typed line', () => {
    const path = join(tempDir(), 'no-embedding.gguf');
    writeFileSync(path, encodeGguf({ metadata: { 'general.architecture': { type: 'STRING', value: 'llama' }, 'llama.block_count': { type: 'UINT32', value: 2 } }, tensors: [] }));
    const r = cli('inspect', path);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^family {5}none: BAD_HYPERPARAMETER: llama\.embedding_length is missing/m);
    const json = JSON.parse(cli('inspect', path, '--json').stdout);
    expect(json.hyperparameters).toBeNull();
    expect(json.hyperparametersError).toMatchObject({ code: 'BAD_HYPERPARAMETER', message: expect.stringContaining('llama.embedding_length') });
  });

  it('the sample parses with the library and holds the types the summary names', () => {
    using g = openGguf(join(import.meta.dirname, '../../dist/sample.gguf'));
    expect(g.tensors.map((t) => t.type)).toEqual(['Q4_K', 'F32', 'F32', 'F16', 'Q8_0', 'Q6_K']);
    expect(g.metadata.get('general.architecture')).toBe('llama');
  });

  it.skipIf(SKIP_SHARED)('--json --sha256 agrees with the independent inspector', () => {
    const file = sharedPath('fixtures/real/tinystories656k-q8_0.gguf');
    const want = readJson<{ tensors: Array<{ name: string; type: string; type_id: number; shape: number[]; offset: number; nbytes: number; sha256: string }>; metadata: Record<string, { type: string; array_type?: string; length?: number }> }>(
      sharedPath('fixtures/real/expected/tinystories656k-q8_0.json'),
    );
    const r = cli('inspect', file, '--json', '--sha256');
    expect(r.status).toBe(0);
    const got = JSON.parse(r.stdout);
    expect(got).toMatchObject({ version: 3, endian: 'little', alignment: 32, dataOffset: 50848, fileSize: 749728 });
    expect(got.tensors).toEqual(
      want.tensors.map((t) => ({ name: t.name, type: t.type, typeId: t.type_id, shape: t.shape, offset: t.offset, nbytes: t.nbytes, sha256: t.sha256 })),
    );
    for (const [key, entry] of Object.entries(want.metadata)) {
      expect(got.metadata[key].type).toBe(entry.type);
      if (entry.array_type) {
        expect(got.metadata[key].arrayType).toBe(entry.array_type);
        expect(got.metadata[key].value).toHaveLength(entry.length!);
      }
    }
  });

  it('--json spells 64-bit integers as strings and non-finite floats by name', () => {
    const dir = tempDir();
    const file = join(dir, 'values.gguf');
    writeFileSync(
      file,
      encodeGguf({
        endian: 'big',
        metadata: {
          big: { type: 'UINT64', value: 2n ** 64n - 1n },
          small: { type: 'INT64', value: -5 },
          nan: { type: 'FLOAT32', value: NaN },
          inf: { type: 'FLOAT64', value: -Infinity },
          arr: { type: 'ARRAY', arrayType: 'FLOAT32', value: [Infinity, 1.5] },
          i64s: { type: 'ARRAY', arrayType: 'INT64', value: [1n, -(2n ** 63n)] },
        },
      }),
    );
    const r = cli('inspect', file, '--json');
    expect(r.status).toBe(0);
    const { summary, ...rest } = JSON.parse(r.stdout);
    expect(summary).toMatchObject({ parameters: 0, bytes: 0, byType: [], parts: 1 });
    expect(rest).toEqual({
      version: 3,
      endian: 'big',
      alignment: 32,
      dataOffset: expect.any(Number),
      fileSize: readFileSync(file).length,
      metadata: {
        big: { type: 'UINT64', value: '18446744073709551615' },
        small: { type: 'INT64', value: '-5' },
        nan: { type: 'FLOAT32', value: 'NaN' },
        inf: { type: 'FLOAT64', value: '-Infinity' },
        arr: { type: 'ARRAY', arrayType: 'FLOAT32', value: ['Infinity', 1.5] },
        i64s: { type: 'ARRAY', arrayType: 'INT64', value: ['1', '-9223372036854775808'] },
      },
      // no general.architecture: no typed hyperparameters
      hyperparameters: null,
      tensors: [],
    });
  });

  it('an invalid file exits 2 with one line naming the code and byte', () => {
    const dir = tempDir();
    const file = join(dir, 'bad.gguf');
    const bytes = encodeGguf({ tensors: [{ name: 'x', type: 'F32', shape: [8] }] });
    writeFileSync(file, bytes.subarray(0, bytes.length - 1));
    const r = cli('inspect', file);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^gguf-mmap: TENSOR_OUT_OF_BOUNDS: .* \(at byte \d+\)\n$/);
  });

  it.skipIf(SKIP_SHARED)('the pre-release file exits 2 with BAD_MAGIC at byte 0', () => {
    const r = cli('inspect', sharedPath('fixtures/real/invalid/prerelease-magic-fugg.gguf'), '--json');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^gguf-mmap: BAD_MAGIC: .*\(at byte 0\)\n$/);
  });

  it('I/O and usage errors exit 1 without a stack trace', () => {
    for (const args of [['inspect', '/no/such/file.gguf'], ['inspect', '/tmp'], ['frobnicate'], ['inspect', 'a', 'b'], ['inspect', '--nope']]) {
      const r = cli(...args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(/^gguf-mmap: /);
      expect(r.stderr, args.join(' ')).not.toMatch(/\n\s+at /);
    }
    expect(cli('inspect', '/no/such/file.gguf').stderr).toContain('ENOENT');
  });

  it('--sha256 hashes exactly the tensor bytes', () => {
    const dir = tempDir();
    const file = join(dir, 't.gguf');
    const data = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    writeFileSync(file, encodeGguf({ tensors: [{ name: 'w', type: 'I8', shape: [8], data }] }));
    const got = JSON.parse(cli('inspect', file, '--json', '--sha256').stdout);
    expect(got.tensors[0].sha256).toBe(createHash('sha256').update(data).digest('hex'));
  });
});

describe('gguf-mmap dequant', () => {
  it.skipIf(SKIP_SHARED)('--out writes ggml’s float32 bytes (sha256 from the fixture), --rows a slice of them', () => {
    const dir = tempDir();
    const file = sharedPath('fixtures/quantized/tiny-llama-q4_k_m.gguf');
    const want = readJson<{ tensors: Array<{ name: string; type: string; shape: number[]; f32_sha256: string }> }>(
      sharedPath('fixtures/quantized/tiny-llama-q4_k_m.json'),
    );
    for (const t of want.tensors.filter((x) => x.type === 'Q4_K' || x.type === 'Q6_K').slice(0, 3)) {
      const out = join(dir, `${t.name}.f32`);
      const r = cli('dequant', file, t.name, '--out', out);
      expect(r.status, r.stderr).toBe(0);
      const bytes = readFileSync(out);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(t.f32_sha256);
      const rowBytes = t.shape[0]! * 4;
      const part = join(dir, 'part.f32');
      expect(cli('dequant', file, t.name, '--rows', '1:3', '--out', part).status).toBe(0);
      expect(readFileSync(part).equals(bytes.subarray(rowBytes, 3 * rowBytes))).toBe(true);
    }
  });

  it('prints min, max, mean and NaN count of the values', () => {
    const dir = tempDir();
    const values = new Float32Array([1.5, -2, NaN, 4, 0.25, NaN]);
    const path = join(dir, 'v.gguf');
    writeFileSync(path, encodeGguf({ tensors: [{ name: 'v', type: 'F32', shape: [3, 2], data: new Uint8Array(values.buffer) }] }));
    const r = cli('dequant', path, 'v');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('v  F32  [3, 2]  rows 0:2  6 values');
    expect(r.stdout).toContain('min -2  max 4  mean 0.9375  NaN 2  Inf 0');
    expect(cli('dequant', path, 'v', '--rows', '1').stdout).toContain('min 0.25  max 4  mean 2.125  NaN 1');
  });

  it('usage errors exit 1, an invalid file exits 2', () => {
    const dir = tempDir();
    const path = join(dir, 'w.gguf');
    writeFileSync(path, encodeGguf({ tensors: [{ name: 'w', type: 'F32', shape: [4, 2] }] }));
    expect(cli('dequant', path, 'missing').status).toBe(1);
    expect(cli('dequant', path, 'w', '--rows', '1:9').status).toBe(1);
    expect(cli('dequant', path, 'w', '--rows', 'x').status).toBe(1);
    expect(cli('dequant', path, 'w', '--backend', 'gpu').status).toBe(1);
    expect(cli('dequant', path).status).toBe(1);
    const bad = join(dir, 'bad.gguf');
    writeFileSync(bad, 'GGUF but not really');
    const r = cli('dequant', bad, 'w');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^gguf-mmap: [A-Z_]+: /);
  });
});

describe('the CLI reads what the file says, and writes nothing it should not', () => {
  const dir = tempDir();

  it('inspect --json: every key in file order (__proto__ and integer-like keys too), -0 kept', () => {
    const file = join(dir, 'keys.gguf');
    writeFileSync(
      file,
      encodeGguf({
        metadata: [
          ['b', { type: 'FLOAT32', value: -0 }],
          ['__proto__', { type: 'STRING', value: 'kept' }],
          ['42', { type: 'ARRAY', arrayType: 'FLOAT32', value: [1, -0] }],
        ],
      }),
    );
    const r = cli('inspect', file, '--json');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('"b":{"type":"FLOAT32","value":-0}');
    expect(r.stdout).toContain('"value":[1,-0]');
    const metadata = JSON.parse(r.stdout).metadata;
    expect(Object.keys(metadata)).toEqual(['42', 'b', '__proto__']); // JSON.parse's object reorders; the text must not
    expect(r.stdout.indexOf('"b"')).toBeLessThan(r.stdout.indexOf('"__proto__"'));
    expect(r.stdout.indexOf('"__proto__"')).toBeLessThan(r.stdout.indexOf('"42"'));
    expect(Object.getOwnPropertyDescriptor(metadata, '__proto__')?.value.value).toBe('kept');
  });

  it('inspect shows control characters in keys, names and values as escapes', () => {
    const file = join(dir, 'escapes.gguf');
    const evil = '\x1b]0;owned\x07\x1b[2J\u009b31m';
    writeFileSync(
      file,
      encodeGguf({ metadata: { [`k${evil}`]: { type: 'STRING', value: evil } }, tensors: [{ name: `t${evil}`.slice(0, 20), type: 'F32', shape: [1] }] }),
    );
    const r = cli('inspect', file);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    expect(r.stdout).toContain('\\u001b]0;owned');
  });

  it('dequant --out refuses the input file itself (also through a link) and leaves it intact; output is written whole', () => {
    const file = join(dir, 'in.gguf');
    writeFileSync(file, encodeGguf({ tensors: [{ name: 't', type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) }] }));
    const before = readFileSync(file);
    // Through a symbolic link too, where links can be made (Windows needs a privilege for them).
    const link = join(dir, 'link.gguf');
    if (!WINDOWS) symlinkSync(file, link);
    for (const out of WINDOWS ? [file] : [file, link]) {
      const r = cli('dequant', file, 't', '--out', out);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('a file being read');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(readFileSync(file).equals(before)).toBe(true);
    const out = join(dir, 'out.f32');
    writeFileSync(out, 'old contents');
    expect(cli('dequant', file, 't', '--out', out).status).toBe(0);
    expect([...new Float32Array(new Uint8Array(readFileSync(out)).buffer)]).toEqual([1, 2, 3, 4]);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });
});

describe.skipIf(READ_MODE)(mmapOnly('gguf-mmap warm, and residency in inspect'), () => {
  it('warm brings the file in and says how much is resident; inspect shows it', () => {
    const dir = tempDir();
    const file = join(dir, 'warm.gguf');
    writeFileSync(file, encodeGguf({ tensors: [{ name: 't', type: 'F32', shape: [262144], data: new Uint8Array(1 << 20).fill(1) }] }));
    const r = cli('warm', file);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^warmed 1\.00 MiB in \d+ ms \(\d+ MB\/s\); 1\.00 MiB of 1\.00 MiB resident\n$/);
    // On Windows resident means in this process's working set, and inspect is another process.
    if (!WINDOWS) expect(cli('inspect', file).stdout).toMatch(/resident {3}1\.00 MiB of 1\.00 MiB in memory \(100%\)/);
    expect(cli('warm').status).toBe(1);
  });
});

describe.skipIf(SKIP_SHARED)('the CLI on a split model', () => {
  it('inspect on any part shows the whole model with a parts table; --json adds parts and each tensor part; dequant works across parts', () => {
    const part = sharedPath('fixtures/split/tiny-llama-odd-q4_k_m-00003-of-00004.gguf');
    const text = cli('inspect', part);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain('parts (4): a split model');
    expect(text.stdout).toContain('21 tensors');
    const json = JSON.parse(cli('inspect', part, '--json').stdout) as { parts: { tensorCount: number }[]; tensors: { part: number; offset: number }[] };
    expect(json.parts.map((p) => p.tensorCount)).toEqual([0, 9, 9, 3]);
    expect(json.tensors.map((t) => t.part)).toEqual([...Array(9).fill(1), ...Array(9).fill(2), ...Array(3).fill(3)]);
    expect(json.tensors[9]!.offset).toBe(0); // relative to its own part
    const d = cli('dequant', part, 'output.weight');
    expect(d.status, d.stderr).toBe(0);
    expect(d.stdout).toContain('43520 values');
  });
});
