// The addon's walk of tensor infos (native/tensor_info_walk.cc) against the TypeScript reader it
// stands in for: on thousands of mutated files both give the same tensors or the same error (code
// and offset), and on the cases it hands back (non-ASCII names, huge shapes, duplicates) too.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { encodeGguf, GgufError, parseGguf, type GgufWriteSpec } from '../../lib/index.js';
import { useNativeTensorWalk } from '../../lib/format/parse.js';
import { optionalAddon } from '../../lib/native.js';
import { loadSeeds, makeCase } from '../../scripts/fuzz-cases.js';
import { SHARED_DIR } from '../helpers/shared.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';

/** What parsing gives: every tensor's info, or the error's code and offset. */
function outcome(bytes: Uint8Array, native: boolean): unknown {
  useNativeTensorWalk(native);
  try {
    const g = parseGguf(bytes, { split: false });
    return g.tensors.map((t) => [t.name, t.typeId, t.shape.join('x'), t.offset, t.nbytes, g.tensor(t.name) === t]);
  } catch (error) {
    if (!(error instanceof GgufError)) throw error;
    return { code: error.code, offset: error.offset, message: error.message };
  } finally {
    useNativeTensorWalk(true);
  }
}

const tensors = (names: string[]): GgufWriteSpec['tensors'] =>
  names.map((name, i) => ({ name, type: 'F32' as const, shape: [1 + (i % 3), 2], data: new Uint8Array(4 * 2 * (1 + (i % 3))) }));

describe.skipIf(optionalAddon() === undefined)('the addon’s walk of tensor infos', () => {
  it('gives what the TypeScript reader gives on 3,000 mutated files (tensors, or the same error at the same offset)', () => {
    const seeds = loadSeeds(SHARED_DIR);
    let differ = 0;
    let opened = 0;
    for (let index = 0; index < 3000; index++) {
      const { bytes, label } = makeCase(seeds, 7, index);
      const js = outcome(bytes, false);
      const native = outcome(bytes, true);
      if (Array.isArray(js)) opened++;
      if (JSON.stringify(js) !== JSON.stringify(native)) {
        differ++;
        expect(native, `case ${index} (${label})`).toEqual(js);
      }
    }
    expect(differ).toBe(0);
    expect(opened).toBeGreaterThan(30);
  });

  it('every name is found by the TypeScript index after the walk (one hash, one key); names of every length mod 4', () => {
    const names = Array.from({ length: 5000 }, (_, i) => `blk.${i % 61}.ffn_${['gate', 'up', 'down'][i % 3]}.${i}${'x'.repeat(i % 7)}.weight`);
    const g = parseGguf(encodeGguf({ tensors: tensors(names) }));
    for (const name of names) expect(g.tensor(name)?.name).toBe(name);
    expect(g.tensor('blk.0.ffn_gate.0.weightx')).toBeUndefined();
  });

  it('hands back what it does not take, and the reader goes on or reports it: non-ASCII names, duplicates, invalid UTF-8', () => {
    /** The file with the first name `from` renamed `to` (same byte length): what a writer refuses to make. */
    const renamed = (bytes: Uint8Array, from: string, to: string) => {
      const [f, t] = [new TextEncoder().encode(from), new TextEncoder().encode(to)];
      const copy = bytes.slice();
      const at = Buffer.from(copy).indexOf(Buffer.from(f));
      copy.set(t, at);
      return copy;
    };
    const cases: Array<[string, Uint8Array]> = [
      ['non-ASCII names among ASCII ones', encodeGguf({ tensors: tensors(['a', 'b.é', 'c', '数', 'd']) })],
      ['a duplicate far in', renamed(encodeGguf({ tensors: tensors(['a', 'b', 'c', 'd', 'x']) }), 'x', 'b')],
      ['a duplicate of a non-ASCII name', renamed(encodeGguf({ tensors: tensors(['é', 'q', 'zz']) }), 'zz', 'é')],
      ['a non-ASCII duplicate of an ASCII-walked run', renamed(encodeGguf({ tensors: tensors([...'abcdefgh', 'é', 'zz']) }), 'zz', 'é')],
      ['invalid UTF-8 in a name', encodeGguf({ tensors: tensors(['a', 'zz', 'c']) })],
      ['a name of 63 bytes', encodeGguf({ tensors: tensors(['y'.repeat(63), 'z']) })],
    ];
    const invalid = cases[4]![1];
    invalid.set([0xc3, 0x28], Buffer.from(invalid).indexOf(Buffer.from('zz')));
    for (const [what, bytes] of cases) {
      expect(outcome(bytes, true), what).toEqual(outcome(bytes, false));
    }
    expect(outcome(cases[1]![1], true)).toMatchObject({ code: 'DUPLICATE_TENSOR' });
    expect(outcome(cases[2]![1], true)).toMatchObject({ code: 'DUPLICATE_TENSOR' });
    expect(outcome(cases[3]![1], true)).toMatchObject({ code: 'DUPLICATE_TENSOR' });
    expect(outcome(cases[4]![1], true)).toMatchObject({ code: 'BAD_UTF8' });
    expect(Array.isArray(outcome(cases[0]![1], true))).toBe(true);
  });

  it('ends the walk, in bounds, on index arrays no reader makes (slots of garbage, a full table), in a child process', () => {
    // The binding is internal, but its arrays come from JavaScript: whatever they hold, it must
    // neither read outside them nor probe forever.
    const script = `import { encodeGguf } from ${JSON.stringify(pathToFileURL(resolve('dist/lib/index.js')).href)};
      import { parseLayout } from ${JSON.stringify(pathToFileURL(resolve('dist/lib/format/parse.js')).href)};
      import { TensorTable } from ${JSON.stringify(pathToFileURL(resolve('dist/lib/format/tensor-table.js')).href)};
      import { nativeTensorInfoWalk } from ${JSON.stringify(pathToFileURL(resolve('dist/lib/native.js')).href)};
      const names = Array.from({ length: 200 }, (_, i) => 'blk.' + i + '.w');
      const bytes = encodeGguf({ tensors: names.map((name) => ({ name, type: 'F32', shape: [2], data: new Uint8Array(8) })) });
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const infoAt = parseLayout(view, bytes.length).tensors.infoOffset(0);
      const walk = nativeTensorInfoWalk();
      const results = [];
      for (const fill of ['garbage', 'full', 'far']) {
        const table = new TensorTable(200, 4096);
        const targets = table.walkTargets();
        if (fill === 'garbage') for (let i = 0; i < targets.slots.length; i++) targets.slots[i] = (Math.random() * 2 ** 31) | 0;
        if (fill === 'full') targets.slots.fill(1); // every slot names tensor 0, whose name is empty
        if (fill === 'far') { targets.slots.fill(1); targets.starts[0] = 4000; targets.ends[0] = 4000000; }
        results.push(walk(view, infoAt, 0, 200, true, true, 32, 0, bytes.length, targets)[0]);
      }
      console.log(JSON.stringify(results));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    const walked = JSON.parse(run.stdout.trim()) as number[];
    // Each stops at a record it cannot index soundly and leaves it to the reader.
    for (const n of walked) expect(n).toBeLessThan(200);
  });
});

// Linux's transparent huge pages set to be given on request ('madvise'), where the test tells the
// advice's pages from others ('always' gives them to every large allocation, advised or not), and
// this process's huge pages are counted.
const thpOnRequest = (() => {
  if (process.platform !== 'linux') return false; // (wine's node.exe can read the Linux files too)
  try {
    return /\[madvise\]/.test(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8')) &&
      /AnonHugePages:/.test(readFileSync('/proc/self/smaps_rollup', 'utf8'));
  } catch {
    return false;
  }
})();

describe.skipIf(typeof optionalAddon()?.adviseHugePages !== 'function' || !thpOnRequest)('a large header’s table of tensor infos', () => {
  it('is written on huge pages (AnonHugePages grows), where a plain buffer written alike is not, in a child process', () => {
    // 300,000 tensor infos: a table of about 42 MB, over the 32 MiB from which it asks for them.
    const script = `
      import { readFileSync } from 'node:fs';
      import { encodeGguf, parseGguf } from ${JSON.stringify(DIST_INDEX)};
      const hugeKb = () => Number(/AnonHugePages:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))[1]);
      const bytes = encodeGguf({ tensors: Array.from({ length: 300000 }, (_, i) => ({ name: 'blk.' + i + '.ffn_gate.weight', type: 'I8', shape: [2, 2] })) });
      let before = hugeKb();
      const plain = new Uint8Array(40 << 20);
      for (let i = 0; i < plain.length; i += 4096) plain[i] = 1;
      const plainKb = hugeKb() - before;
      before = hugeKb();
      const g = parseGguf(bytes);
      const tableKb = hugeKb() - before;
      console.log(JSON.stringify({ plainKb, tableKb, found: g.tensor('blk.299999.ffn_gate.weight')?.shape }));`;
    const run = runChild(script);
    expect(run.status, run.stderr).toBe(0);
    const { plainKb, tableKb, found } = run.result as { plainKb: number; tableKb: number; found: number[] };
    expect(found).toEqual([2, 2]);
    expect(plainKb).toBe(0);
    expect(tableKb).toBeGreaterThanOrEqual(8192);
  });
});
