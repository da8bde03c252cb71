// The writers (edit, split, merge, convert-endian, hash, dequant --out) against what the third
// outside review did to them (issue 27, items 18-30): each case wrote a wrong file, replaced one
// it should not have, or failed on a valid request before.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  convertEndian,
  editMetadata,
  hashTensors,
  hashTensorsAsync,
  mergeModel,
  openGguf,
  splitModel,
  writeGgufFile,
  writeGgufSplit,
  type GgufWriteSpec,
} from '../../lib/index.js';
import { journalPath, recoverHeaderEdit, writeJournal } from '../../lib/edit/header-journal.js';
import { DIST_INDEX } from '../helpers/child.js';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = tempDir();
let n = 0;
const fresh = (name: string) => join(dir, `${n++}-${name}`);

function f32(values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

/** Three F32 tensors of distinct values (`tag` shifts them), 4 KiB each. */
function spec(tag: number): GgufWriteSpec {
  return {
    metadata: { 'general.name': { type: 'STRING', value: `model ${tag}` } },
    tensors: [0, 1, 2].map((i) => ({ name: `t${i}`, type: 'F32' as const, shape: [1024], data: f32(Array.from({ length: 1024 }, (_, j) => tag * 1000 + i * 100 + j)) })),
  };
}

function dataSection(path: string): Buffer {
  using g = openGguf(path, { split: false, mode: 'read' });
  return readFileSync(path).subarray(g.dataOffset);
}

function keysOf(path: string): string[] {
  using g = openGguf(path, { split: false, mode: 'read' });
  return [...g.metadata.keys()];
}

describe('merge and split', () => {
  it('18: merge refuses a set whose parts are in different byte orders (CANNOT_REWRITE), writing nothing', () => {
    const parts = writeGgufSplit(fresh('mixed'), spec(1), { maxTensors: 2 });
    const big = fresh('part2-big.gguf');
    convertEndian(parts[1]!, big, 'big');
    renameSync(big, parts[1]!);
    const out = fresh('merged.gguf');
    expect(() => mergeModel(parts[0]!, out)).toThrow(expect.objectContaining({ code: 'CANNOT_REWRITE', message: expect.stringContaining('big-endian') }));
    expect(existsSync(out)).toBe(false);
  });

  it('19: split and merge of a sparse model write parts and a merge of their full length', () => {
    // Tensors without data are holes; the kernel's copy skips them and wrote nothing at a part's end.
    const input = fresh('sparse.gguf');
    writeGgufFile(input, { tensors: [0, 1, 2].map((i) => ({ name: `hole${i}`, type: 'F32' as const, shape: [1 << 16] })) });
    const parts = splitModel(input, fresh('sparse-split'), { maxTensors: 1 });
    for (const part of parts) {
      using g = openGguf(part, { split: false, mode: 'read' });
      const t = g.tensors[0]!;
      expect(statSync(part).size, part).toBe(t.fileOffset + t.nbytes);
    }
    const merged = fresh('sparse-merged.gguf');
    mergeModel(parts[0]!, merged);
    using m = openGguf(merged, { mode: 'read' });
    expect(statSync(merged).size).toBe(m.dataOffset + 3 * (1 << 18));
    expect(dataSection(merged).equals(dataSection(input))).toBe(true);
  });

  it('21: split into more than 65,535 parts is refused before anything is written (split.count is a UINT16)', () => {
    const input = fresh('many.gguf');
    const tensors = Array.from({ length: 65536 }, (_, i) => ({ name: `t${i}`, type: 'F32' as const, shape: [1] }));
    writeGgufFile(input, { tensors });
    const outDir = join(dir, 'many-parts');
    mkdirSync(outDir);
    expect(() => splitModel(input, join(outDir, 'p'), { maxTensors: 1 })).toThrow(expect.objectContaining({ code: 'CANNOT_REWRITE', message: expect.stringContaining('65535') }));
    expect(readdirSync(outDir)).toEqual([]);
    expect(() => writeGgufSplit(join(outDir, 'w'), { tensors }, { maxTensors: 1 })).toThrow(RangeError);
    expect(readdirSync(outDir)).toEqual([]);
  });

  it("28: writeGgufSplit orders the split keys as llama-gguf-split and splitModel do: split.no, split.tensors.count, split.count", () => {
    const written = writeGgufSplit(fresh('order'), spec(2), { maxTensors: 2 });
    const input = fresh('order-whole.gguf');
    writeGgufFile(input, spec(2));
    const split = splitModel(input, fresh('order-tool'), { maxTensors: 2 });
    expect(keysOf(written[1]!)).toEqual(['split.no', 'split.tensors.count', 'split.count']);
    expect(keysOf(written[1]!)).toEqual(keysOf(split[1]!));
    expect(keysOf(written[0]!).slice(-3)).toEqual(['split.no', 'split.tensors.count', 'split.count']);
  });

  it.skipIf(WINDOWS)(posixOnly('29: split and merge read the files they opened: an input replaced by a rename meanwhile is not read at the old offsets', 'Windows refuses to replace an open file'), () => {
    const input = fresh('replaced.gguf');
    writeGgufFile(input, spec(3));
    const original = dataSection(input);
    const other = fresh('replacement.gguf');
    writeGgufFile(other, spec(4));
    let swapped = false;
    const parts = splitModel(input, fresh('replaced-split'), {
      maxTensors: 1,
      onProgress: () => {
        if (!swapped) renameSync(other, input);
        swapped = true;
      },
    });
    expect(swapped).toBe(true);
    const merged = fresh('replaced-merged.gguf');
    // Merge too, with part 2 replaced by part 3's bytes under its name as it runs.
    const spare = fresh('spare.gguf');
    writeFileSync(spare, readFileSync(parts[2]!));
    let moved = false;
    mergeModel(parts[0]!, merged, {
      onProgress: () => {
        if (!moved) renameSync(spare, parts[1]!);
        moved = true;
      },
    });
    expect(dataSection(merged).equals(original)).toBe(true);
  });
});

describe('edit', () => {
  it.skipIf(WINDOWS)(posixOnly('20: an in-place edit killed at any moment leaves the old header or the new one, after the next edit recovers it from the journal', 'SIGKILL'), async () => {
    // A 12 MB header (a long tokens array), rewritten whole in place: old and new differ in
    // every token, so a cut write would show.
    const path = fresh('killed.gguf');
    const tokens = (c: string) => Array.from({ length: 200_000 }, (_, i) => `${c}${String(i).padStart(57, c)}`);
    writeGgufFile(path, {
      metadata: { 'general.name': { type: 'STRING', value: 'old' }, 'tokenizer.ggml.tokens': { type: 'ARRAY', arrayType: 'STRING', value: tokens('a') } },
      tensors: [{ name: 'w', type: 'F32', shape: [1024], data: f32(Array.from({ length: 1024 }, (_, i) => i)) }],
    });
    const before = readFileSync(path);
    using g0 = openGguf(path, { mode: 'read' });
    const headerLength = g0.dataOffset;
    g0.close();
    const script = `
      import { editMetadata } from ${JSON.stringify(DIST_INDEX)};
      const tokens = Array.from({ length: 200000 }, (_, i) => 'b' + String(i).padStart(57, 'b'));
      editMetadata(${JSON.stringify(path)}, { set: [['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }], ['general.name', { type: 'STRING', value: 'new' }]] });
      console.log('done');
    `;
    const outcomes = new Set<string>();
    for (const delayMs of [0, 5, 20, 60]) {
      writeFileSync(path, before);
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // Kill once the journal is there (the header write follows it), after `delayMs`.
      for (let i = 0; i < 20_000 && !existsSync(journalPath(path)) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 1));
      await new Promise((r) => setTimeout(r, delayMs));
      child.kill('SIGKILL');
      await exited;
      // What the next edit does first: the old header back if the write was cut.
      recoverHeaderEdit(path);
      const after = readFileSync(path);
      const header = after.subarray(0, headerLength);
      const name = readName(path);
      expect(['old', 'new']).toContain(name);
      const want = name === 'old' ? before.subarray(0, headerLength) : undefined;
      if (want !== undefined) expect(header.equals(want)).toBe(true);
      else expect(header.includes(Buffer.from('a'.repeat(57)))).toBe(false);
      expect(after.subarray(headerLength).equals(before.subarray(headerLength))).toBe(true);
      expect(existsSync(journalPath(path))).toBe(false);
      outcomes.add(name);
    }
    expect(outcomes.size).toBeGreaterThan(0);
  }, 120_000);

  it('20: a journal left by a killed in-place write puts the old header back at the next edit; a journal not whole is dropped', () => {
    const path = fresh('journal.gguf');
    writeGgufFile(path, spec(5));
    const before = readFileSync(path);
    using g = openGguf(path, { mode: 'read' });
    const headerLength = g.dataOffset;
    g.close();
    // What a writer killed half-way through the header leaves: its journal, and a torn header.
    writeJournal(path, before.subarray(0, headerLength), before.length);
    const torn = Buffer.from(before);
    torn.fill(0x5a, 8, headerLength >> 1);
    writeFileSync(path, torn);
    expect(recoverHeaderEdit(path)).toBe(true);
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(existsSync(journalPath(path))).toBe(false);
    // The same through an edit, which then applies its own change.
    writeJournal(path, before.subarray(0, headerLength), before.length);
    writeFileSync(path, torn);
    editMetadata(path, { set: [['general.name', { type: 'STRING', value: 'model 6' }]] });
    expect(readName(path)).toBe('model 6');
    expect(readFileSync(path).subarray(headerLength).equals(before.subarray(headerLength))).toBe(true);
    // The journal of a file another one has replaced under the name is dropped, not applied.
    const replacedBy = fresh('replacing.gguf');
    writeGgufFile(replacedBy, spec(6));
    const stranger = readFileSync(replacedBy);
    writeJournal(path, before.subarray(0, headerLength), before.length);
    renameSync(replacedBy, path);
    expect(recoverHeaderEdit(path)).toBe(false);
    expect(readFileSync(path).equals(stranger)).toBe(true);
    expect(existsSync(journalPath(path))).toBe(false);
    // A journal cut short (killed while writing it, before the file was touched) is dropped.
    const intact = readFileSync(path);
    writeFileSync(journalPath(path), 'GGUFJRNL cut short');
    expect(recoverHeaderEdit(path)).toBe(false);
    expect(existsSync(journalPath(path))).toBe(false);
    expect(readFileSync(path).equals(intact)).toBe(true);
  });

  it.skipIf(WINDOWS)(posixOnly('22: outputs with long names (up to 255 bytes) are written: the temporary name stays within the limit', 'names in UTF-16 there, and paths limited'), () => {
    const input = fresh('short.gguf');
    writeGgufFile(input, spec(7));
    const long = join(dir, `${'é'.repeat(100)}${'x'.repeat(50)}.gguf`); // 255 bytes
    expect(Buffer.byteLength(long.split('/').pop()!)).toBe(255);
    editMetadata(input, { set: [['general.name', { type: 'STRING', value: 'a much longer name than before' }]] }, { out: long });
    expect(readFileSync(long).length).toBeGreaterThan(0);
    const converted = join(dir, `${'c'.repeat(250)}.gguf`);
    convertEndian(input, converted, 'big');
    expect(existsSync(converted)).toBe(true);
    const prefix = join(dir, 'p'.repeat(235));
    const parts = splitModel(input, prefix, { maxTensors: 2 });
    expect(parts.map((p) => Buffer.byteLength(p.split('/').pop()!))).toEqual([255, 255]);
  });

  it('23: an output that is another part of the set read is refused (edit --out, convert-endian --out, dequant --no-split --out)', () => {
    const parts = writeGgufSplit(fresh('set'), spec(8), { maxTensors: 1 });
    const before = parts.map((p) => readFileSync(p));
    const r1 = cli('edit', parts[0]!, '--set', 'general.name=x', '--out', parts[1]!);
    const r2 = cli('convert-endian', parts[0]!, '--to', 'big', '--out', parts[2]!);
    const r3 = cli('dequant', '--no-split', parts[0]!, 't0', '--out', parts[1]!);
    for (const r of [r1, r2, r3]) {
      expect(r.status, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(/a file being read/);
    }
    parts.forEach((p, i) => expect(readFileSync(p).equals(before[i]!), p).toBe(true));
    expect(() => editMetadata(parts[0]!, { set: [['general.name', { type: 'STRING', value: 'y' }]] }, { out: parts[2]! })).toThrow(/a file being read/);
  });

  it('24: numbers a type cannot hold are refused, by the library (RangeError) and the CLI (usage, exit 1), and the file is unchanged', () => {
    const path = fresh('numbers.gguf');
    writeGgufFile(path, spec(9));
    const before = readFileSync(path);
    for (const [type, value] of [['UINT32', -1], ['UINT8', 256], ['UINT32', 1.5], ['FLOAT32', 1e40], ['INT64', 2 ** 63]] as const) {
      expect(() => editMetadata(path, { set: [['x.k', { type, value } as never]] }, { out: fresh('o.gguf') }), `${type} ${value}`).toThrow(RangeError);
    }
    for (const text of ['-1:UINT32', '256:UINT8', '1.5:UINT32', '1e40:FLOAT32']) {
      const r = cli('edit', path, '--set', `x.k=${text}`, '--out', fresh('o.gguf'));
      expect(r.status, text).toBe(1);
      expect(r.stderr.split('\n')[0]).toMatch(/is not a (UINT32|UINT8|FLOAT32)/);
    }
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('30: --chat-template-file with bytes that are not UTF-8 is refused, naming the first one', () => {
    const path = fresh('template.gguf');
    writeGgufFile(path, spec(10));
    const before = readFileSync(path);
    const template = fresh('bad.jinja');
    writeFileSync(template, Buffer.from([0x7b, 0x7b, 0x20, 0x61, 0x20, 0xff, 0x7d, 0x7d]));
    const r = cli('edit', path, '--chat-template-file', template);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/byte 5 \(0xff\) is not UTF-8/);
    expect(readFileSync(path).equals(before)).toBe(true);
    // A lone surrogate's bytes (ED A0 80) and an overlong form (C0 AF) are not UTF-8 either.
    for (const [bytes, at] of [[[0x61, 0xed, 0xa0, 0x80], 1], [[0xc0, 0xaf], 0]] as const) {
      writeFileSync(template, Buffer.from(bytes));
      expect(cli('edit', path, '--chat-template-file', template).stderr).toContain(`byte ${at} `);
    }
    writeFileSync(template, '{{ "héllo ✓ 😀" }}');
    expect(cli('edit', path, '--chat-template-file', template, '--out', fresh('ok.gguf')).status).toBe(0);
  });
});

describe('outputs that are not regular files', () => {
  it.skipIf(WINDOWS)(posixOnly('27: a FIFO named as a model output is refused and stays a FIFO; dequant --out streams into it, and into /dev/null', 'mkfifo'), async () => {
    const input = fresh('fifo-in.gguf');
    writeGgufFile(input, spec(11));
    const fifo = fresh('out.fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const args of [['edit', input, '--set', 'general.name=x', '--out', fifo], ['convert-endian', input, '--to', 'big', '--out', fifo]]) {
      const r = cli(...args);
      expect(r.status, r.stderr).toBe(3);
      expect(r.stderr).toMatch(/CANNOT_REWRITE.*not a regular file/);
      expect(statSync(fifo).isFIFO()).toBe(true);
    }
    expect(() => mergeModel(writeGgufSplit(fresh('fifo-set'), spec(11), { maxTensors: 2 })[0]!, fifo)).toThrow();
    expect(statSync(fifo).isFIFO()).toBe(true);
    // dequant's floats are written in order: straight into the FIFO, for a reader at its end.
    const reader = spawn('cat', [fifo]);
    const chunks: Buffer[] = [];
    reader.stdout.on('data', (c: Buffer) => chunks.push(c));
    const ended = new Promise((resolve) => reader.once('exit', resolve));
    const r = await new Promise<number | null>((resolve) => spawn(process.execPath, [CLI, 'dequant', input, 't1', '--out', fifo], { stdio: 'ignore' }).once('exit', resolve));
    await ended;
    expect(r).toBe(0);
    expect(Buffer.concat(chunks).equals(Buffer.from(f32(Array.from({ length: 1024 }, (_, j) => 11000 + 100 + j))))).toBe(true);
    expect(statSync(fifo).isFIFO()).toBe(true);
    expect(cli('dequant', input, 't1', '--out', '/dev/null').status).toBe(0);
    expect(statSync('/dev/null').isCharacterDevice()).toBe(true);
  });
});

describe('hash', () => {
  it('25: hash escapes control and bidi characters in tensor names, as inspect does', () => {
    const path = fresh('names.gguf');
    writeGgufFile(path, { tensors: [{ name: 'evil\u001b[31m\u202e', type: 'F32', shape: [4], data: f32([1, 2, 3, 4]) }] });
    const r = cli('hash', path);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/[\u001b\u202e]/);
    expect(r.stdout).toContain('evil\\u001b[31m\\u202e');
    // Its own output checks back as a manifest (the escaped names found too).
    const manifest = fresh('names.manifest');
    writeFileSync(manifest, r.stdout);
    const check = cli('hash', '--check', manifest, path);
    expect(check.status, check.stdout).toBe(0);
    expect(check.stdout).not.toContain('Not Found');
  });

  it.skipIf(WINDOWS)(posixOnly('26: hashTensorsAsync hashes the open file after its name was given to another file', 'Windows refuses to replace an open file'), async () => {
    const path = fresh('renamed.gguf');
    writeGgufFile(path, spec(12));
    // The built package: its worker script is there (hashTensorsAsync runs on one thread without).
    const built = (await import(DIST_INDEX)) as { openGguf: typeof openGguf; hashTensors: typeof hashTensors; hashTensorsAsync: typeof hashTensorsAsync };
    using g = built.openGguf(path);
    const want = built.hashTensors(g, { kinds: ['sha256'] });
    const other = fresh('other.gguf');
    writeGgufFile(other, spec(13));
    renameSync(other, path);
    const got = await built.hashTensorsAsync(g, { kinds: ['sha256'], threads: 2 });
    expect(got).toEqual(want);
    expect(got.some((l) => l.name.endsWith(':t0'))).toBe(true);
  });
});

function readName(path: string): string {
  using g = openGguf(path, { mode: 'read' });
  return g.metadata.get('general.name') as string;
}
