// Hash flooding: names from a file must not choose their slots in the name index.
import { describe, expect, it } from 'vitest';
import { encodeGguf, parseGguf } from '../../lib/index.js';
import { parseLayout } from '../../lib/format/parse.js';
import { fnvCollidingNames } from '../../scripts/colliding-names.js';

const fnv1aLow16 = (name: string) => {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(name)) h = Math.imul(h ^ b, 0x01000193);
  return h & 0xffff;
};

function layoutOf(names: string[], keys: string[] = []) {
  const bytes = encodeGguf({
    metadata: keys.map((k) => [k, { type: 'UINT8', value: 1 }] as const),
    tensors: names.map((name) => ({ name, type: 'I8', shape: [1], data: new Uint8Array(1) })),
  });
  return { bytes, layout: parseLayout(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), bytes.byteLength) };
}

describe('name index', () => {
  it('names built to collide in an unkeyed FNV-1a table spread out: no long probe runs, every name found', () => {
    const names = fnvCollidingNames(20_000);
    // The names do collide in the low 16 bits of FNV-1a (the table's slots before it was keyed).
    expect(new Set(names.map(fnv1aLow16)).size).toBe(1);
    const { bytes, layout } = layoutOf(names);
    // 20,000 names in 65,536 slots: a random hash gives runs of a few dozen at most; the
    // unkeyed hash walked runs of up to 20,000.
    expect(layout.tensors.names.longestProbe).toBeLessThan(64);
    const g = parseGguf(bytes);
    for (const name of [names[0]!, names[9_999]!, names.at(-1)!]) expect(g.tensor(name)?.name).toBe(name);
    expect(g.tensor(`${names[0]!}x`)).toBeUndefined();
  });

  it('integer-like metadata keys (which V8 hashes by value, unkeyed) and colliding keys spread out too; duplicates are still found', () => {
    const keys = [...Array.from({ length: 5_000 }, (_, i) => String(i * 65_536)), ...fnvCollidingNames(5_000)];
    const { layout } = layoutOf([], keys);
    expect(layout.kvs.map((kv) => kv.key)).toEqual(keys);
    // 10,000 keys in 32,768 slots: short runs (the integer-like keys share their low 16 bits).
    expect(layout.keyProbe).toBeLessThan(64);
    const bytes = encodeGguf({ metadata: [['a.b', { type: 'UINT8', value: 1 }], ['65536', { type: 'UINT8', value: 1 }], ['65536', { type: 'UINT8', value: 2 }]] });
    expect(() => parseGguf(bytes)).toThrow(expect.objectContaining({ code: 'DUPLICATE_KEY' }));
  });

  it('the hash is keyed per process: the same names land in other slots in another process', async () => {
    const { spawnSync } = await import('node:child_process');
    const script = `import('${new URL('../../dist/lib/format/name-index.js', import.meta.url).href}').then((m) => console.log(m.keyedHash(new TextEncoder().encode('token_embd.weight'), 0, 17)))`;
    const runs = [0, 1, 2].map(() => spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' }).stdout.trim());
    expect(runs.every((r) => /^\d+$/.test(r))).toBe(true);
    expect(new Set(runs).size).toBe(3);
  });
});
