// Hashes of tensor data against llama.cpp's llama-gguf-hash (its outputs for every shared fixture,
// ../shared/reference/gguf-hash), and the properties manifests are for: the same across a model,
// its split set and a copy with other metadata.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hashTensors, openGguf, writeGgufFile, writeGgufSplit } from '../../lib/index.js';
import { createXxh64, ScriptXxh64 } from '../../lib/hash/xxh64.js';
import { randomBytes } from '../helpers/random.js';
import { sharedPath, SKIP_SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const dir = tempDir();

function cli(cwd: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, 'hash', ...args], { cwd, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every reference output: [fixture folder, file name, options, expected text]. */
function references(): Array<[string, string, string[], string]> {
  const out: Array<[string, string, string[], string]> = [];
  for (const folder of ['real', 'quantized', 'split']) {
    for (const name of readdirSync(sharedPath('reference/gguf-hash', folder))) {
      const m = /^(.*\.gguf)\.(default|all-uuid)\.txt$/.exec(name);
      if (m === null) continue;
      out.push([folder, m[1]!, m[2] === 'default' ? [] : ['--all', '--uuid'], readFileSync(sharedPath('reference/gguf-hash', folder, name), 'utf8')]);
    }
  }
  return out;
}

describe.skipIf(SKIP_SHARED)('gguf-mmap hash against llama-gguf-hash', () => {
  // Over 30 runs of the CLI, each a new process: under wine about a minute.
  it('prints what llama-gguf-hash prints for every shared fixture, line for line (xxh64; --all --uuid)', () => {
    const cases = references();
    expect(cases.length).toBeGreaterThanOrEqual(30);
    for (const [folder, name, options, expected] of cases) {
      const r = cli(sharedPath('fixtures', folder), ...options, name);
      expect(r.status, `${name} ${options.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout, `${folder}/${name} ${options.join(' ')}`).toBe(expected);
    }
  }, 180_000);

  it('--check of its manifest prints what llama-gguf-hash prints, exit 0; a changed digest is Mismatch, exit 1', () => {
    // The reference ran with the manifest at this path; the header line names it.
    const manifest = '/tmp/ggufhash/check/manifests/tiny-llama-q4_k_m.all.manifest';
    const text = readFileSync(sharedPath('reference/gguf-hash/check/tiny-llama-q4_k_m.all.manifest'), 'utf8');
    mkdirSync(dirname(manifest), { recursive: true });
    writeFileSync(manifest, text);
    const model = sharedPath('fixtures/quantized');
    const ok = cli(model, '--check', manifest, '--all', 'tiny-llama-q4_k_m.gguf');
    expect(ok.stdout).toBe(readFileSync(sharedPath('reference/gguf-hash/check/same-file-all.txt'), 'utf8'));
    expect(ok.status).toBe(0);

    const changed = join(dir, 'changed.manifest');
    writeFileSync(changed, text.replace(/^(sha256 +)([0-9a-f])/m, (_, kind: string, c: string) => kind + (c === '0' ? '1' : '0')));
    const bad = cli(model, '--check', changed, 'tiny-llama-q4_k_m.gguf');
    expect(bad.status).toBe(1);
    expect(bad.stdout.split('\n')[0]).toBe(`manifest  ${changed}  sha256  sha1  xxh64`);
    expect(bad.stdout).toContain('  -  Mismatch\n');
    expect(bad.stdout.trimEnd().split('\n').at(-1)).toBe(`Verification results for ${changed} - Failure`);
    // Without a kind asked for, only the strongest in the manifest (sha256) is checked.
    expect(bad.stdout.split('\n').slice(1, -3).every((l) => l.startsWith('sha256  '))).toBe(true);
  });

  it('exit 3 when nothing matches, 4 for a manifest of no known kind, 5 for one that cannot be read; uuid lines are checked as uuids', () => {
    const model = sharedPath('fixtures/quantized');
    const other = cli(model, '--check', sharedPath('reference/gguf-hash/check/tiny-llama-q4_k_m.all.manifest'), 'tiny-llama-odd-q4_k_m.gguf');
    expect(other.status).toBe(3);
    expect(other.stdout.trimEnd().split('\n').at(-1)).toMatch(/ - Manifest Missing Entry$/);
    const unknown = join(dir, 'unknown.manifest');
    writeFileSync(unknown, 'md5  0123  x.gguf\n');
    expect(cli(model, '--check', unknown, 'tiny-llama-q4_k_m.gguf')).toMatchObject({ status: 4, stdout: `ERROR manifest does not have any known hash format in ${unknown}\n` });
    expect(cli(model, '--check', join(dir, 'absent.manifest'), 'tiny-llama-q4_k_m.gguf').status).toBe(5);
    // llama-gguf-hash compares a uuid line as if it were sha256 (always Mismatch): not imitated.
    const uuids = join(dir, 'uuid.manifest');
    writeFileSync(uuids, cli(model, '--uuid', '--no-layer', 'tiny-llama-q4_k_m.gguf').stdout);
    const checked = cli(model, '--check', uuids, 'tiny-llama-q4_k_m.gguf');
    expect(checked.stdout).toContain('tiny-llama-q4_k_m.gguf  -  Ok\n');
    expect(checked.status).toBe(0);
  });

  it('files llama-gguf-hash crashes on: an invalid one is one error line and exit 2; GGUF v1 is hashed', () => {
    const good = readFileSync(sharedPath('fixtures/quantized/tiny-llama-q4_k_m.gguf'));
    writeFileSync(join(dir, 'bad-magic.gguf'), Buffer.concat([Buffer.from('GGUX'), good.subarray(4)]));
    writeFileSync(join(dir, 'truncated.gguf'), good.subarray(0, good.length - 1000));
    const bad = [sharedPath('fixtures/real/invalid/prerelease-magic-fugg.gguf'), join(dir, 'bad-magic.gguf'), join(dir, 'truncated.gguf')];
    for (const path of bad) {
      const r = cli(dir, path);
      expect(r.status, path).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n'), path).toHaveLength(1);
    }
    const v1 = cli(sharedPath('fixtures/real'), 'vocab-llama-v1.gguf');
    expect(v1.status, v1.stderr).toBe(0);
    expect(v1.stdout).toBe('xxh64     ef46db3751d8e999  vocab-llama-v1.gguf\n'); // no tensors: the empty input
  });
});

describe('hashes of tensor data', () => {
  const spec = (name: string) => ({
    metadata: { 'general.name': { type: 'STRING' as const, value: name } },
    tensors: [0, 1, 2, 3].map((i) => ({ name: `t${i}`, type: 'F32' as const, shape: [1000 + i], data: randomBytes(4 * (1000 + i), i + 1) })),
  });

  it('are the same for a model, a copy with other metadata, and its split set (per part; --merge-parts whole)', () => {
    const a = join(dir, 'a.gguf');
    const b = join(dir, 'b.gguf');
    writeGgufFile(a, spec('first'));
    writeGgufFile(b, spec('a much longer name that moves the data section'));
    const parts = writeGgufSplit(join(dir, 'set'), spec('set'), { maxTensors: 3 });
    const kinds = ['xxh64', 'sha1', 'sha256', 'uuid'] as const;
    const digests = (path: string, split?: boolean) => {
      using g = openGguf(path, { split: split ?? false });
      return hashTensors(g, { kinds, name: 'm' }).map((l) => `${l.kind} ${l.digest} ${l.name}`);
    };
    const whole = digests(a);
    expect(digests(b)).toEqual(whole);
    expect(digests(parts[1]!, true)).toEqual(whole);
    // Part by part, the tensor lines of the parts in order are the unsplit file's.
    const tensorLines = (lines: string[]) => lines.filter((l) => l.includes(' m:'));
    expect([...tensorLines(digests(parts[0]!)), ...tensorLines(digests(parts[1]!))]).toEqual(tensorLines(whole));
    // And by the CLI, as a manifest: one model's checks the other.
    const manifest = join(dir, 'a.manifest');
    writeFileSync(manifest, cli(dir, '--all', '--uuid', 'a.gguf').stdout.replaceAll('a.gguf', 'b.gguf'));
    expect(cli(dir, '--check', manifest, '--all', '--uuid', 'b.gguf').status).toBe(0);
    const merged = cli(dir, '--merge-parts', basename(parts[0]!));
    expect(merged.stdout.split('\n').map((l) => l.split('  ')[1])).toEqual(cli(dir, 'a.gguf').stdout.split('\n').map((l) => l.split('  ')[1]));
  });

  it('hashTensorsAsync (the built package, where its worker script is) gives hashTensors\' lines with 0 to 5 worker threads, for a file, a split set whole, and read mode; a part replaced meanwhile is FILE_CHANGED', async () => {
    const built = (await import(pathToFileURL(join(import.meta.dirname, '../../dist/lib/index.js')).href)) as typeof import('../../lib/index.js');
    const a = join(dir, 'async.gguf');
    writeGgufFile(a, spec('async'));
    const parts = writeGgufSplit(join(dir, 'async-set'), spec('set'), { maxTensors: 1 });
    const kinds = ['xxh64', 'sha1', 'sha256', 'uuid'] as const;
    for (const [path, split, mode] of [[a, false, 'mmap'], [parts[2]!, true, 'mmap'], [a, false, 'read']] as const) {
      using g = built.openGguf(path, { split, mode });
      const want = built.hashTensors(g, { kinds, name: 'm' });
      expect(want.length).toBe(4 * 3 + 4);
      for (const threads of [0, 1, 2, 3, 5]) expect(await built.hashTensorsAsync(g, { kinds, name: 'm', threads }), `${path} ${threads}`).toEqual(want);
      expect(await built.hashTensorsAsync(g, { kinds, name: 'm', layers: false })).toEqual(want.slice(-4));
    }
    const changing = join(dir, 'changing.gguf');
    writeGgufFile(changing, spec('changing'));
    using g = built.openGguf(changing, { mode: 'read' });
    writeGgufFile(changing, spec('x'.repeat(500))); // 500 bytes more before the data
    await expect(built.hashTensorsAsync(g, { threads: 1 })).rejects.toMatchObject({ code: 'FILE_CHANGED' });
  });

  it('XXH64: the addon and the TypeScript one agree on every length and split point; the empty input is ef46db3751d8e999', () => {
    expect(new ScriptXxh64().digest()).toBe('ef46db3751d8e999');
    expect(createXxh64().digest()).toBe('ef46db3751d8e999');
    const data = randomBytes(300, 7);
    for (let length = 0; length <= 300; length += length < 70 ? 1 : 23) {
      const bytes = data.subarray(0, length);
      const whole = new ScriptXxh64().update(bytes).digest();
      expect(createXxh64().update(bytes).digest(), `length ${length}`).toBe(whole);
      for (const cut of [1, 7, 31, 32, 33]) {
        if (cut >= length) continue;
        const split = createXxh64().update(bytes.subarray(0, cut)).update(bytes.subarray(cut)).digest();
        expect(split, `length ${length} cut at ${cut}`).toBe(whole);
        expect(new ScriptXxh64().update(bytes.subarray(0, cut)).update(bytes.subarray(cut)).digest()).toBe(whole);
      }
    }
  });
});
