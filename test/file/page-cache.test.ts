// The page cache under the service's control: residency, advice, locking, prefetching.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { posixOnly, WINDOWS } from '../helpers/platform.js';
import { encodeGguf, evictFromPageCache, GgufError, openGguf, parseGguf, writeGgufFile } from '../../lib/index.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { tempDir } from '../helpers/tmp.js';
import { DIST_INDEX, runChild } from '../helpers/child.js';

const dir = tempDir();
const MiB = 1 << 20;

function model(name: string, mib: number): string {
  const path = join(dir, name);
  writeGgufFile(path, {
    tensors: [
      { name: 'big', type: 'F32', shape: [(mib * MiB) / 4] }, // a hole: pages of zeros, nothing to write
      { name: 'small', type: 'F32', shape: [1024], data: new Uint8Array(4096).fill(2) },
    ],
  });
  return path;
}

describe.skipIf(READ_MODE || WINDOWS)(posixOnly(mmapOnly('page cache'), 'no eviction and a working set in place of the page cache (README: Platforms); see "page cache on Windows"'), () => {
  it('a cold file: residency near 0, prefetch() brings it all in with progress, residency then equals the total', async () => {
    const path = model('cold.gguf', 96);
    evictFromPageCache(path);
    using g = openGguf(path);
    const cold = g.residency();
    expect(cold.total).toBe(g.fileSize);
    expect(cold.resident).toBeLessThan(cold.total / 2);
    const progress: number[] = [];
    const { bytes } = await g.prefetch({ onProgress: (done, total) => (expect(total).toBe(g.fileSize), progress.push(done)) });
    expect(bytes).toBe(g.fileSize);
    expect(progress.length).toBeGreaterThan(2); // 32 MiB slices
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(g.fileSize);
    expect(g.residency()).toEqual({ resident: g.fileSize, total: g.fileSize });
  });

  it('tensors by object or name; advice, lock and unlock on them; unknown advice and names are TypeErrors', async () => {
    const path = model('select.gguf', 8);
    evictFromPageCache(path);
    using g = openGguf(path);
    const small = g.tensor('small')!;
    expect(g.residency([small]).total).toBe(4096);
    await g.prefetch({ tensors: ['small'] });
    expect(g.residency(['small'])).toEqual({ resident: 4096, total: 4096 });
    for (const advice of ['random', 'sequential', 'willneed', 'normal', 'dontneed'] as const) g.advise(advice, ['big']);
    g.lock([small]);
    g.unlock([small]);
    expect(() => g.advise('bogus' as 'normal')).toThrow(TypeError);
    expect(() => g.residency(['absent'])).toThrow(TypeError);
  });

  it.skipIf(process.platform !== 'linux')("{ hugePages: true }: the file is mapped at a 2 MiB-aligned address, advised before anything reads it, and its pages read are 2 MiB pages where the kernel makes them", async () => {
    // A file of real data (holes are not read into folios), 8 MiB.
    const path = join(dir, 'huge.gguf');
    writeGgufFile(path, { tensors: [{ name: 'w', type: 'I8', shape: [8 * MiB], data: new Uint8Array(8 * MiB).map((_, i) => i * 7) }] });
    evictFromPageCache(path);
    using g = openGguf(path, { hugePages: true });
    expect(g.hugePages).toBe(true);
    await g.prefetch();
    const smaps = readFileSync('/proc/self/smaps', 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/);
    const entry = smaps.find((e) => e.split('\n')[0]!.endsWith(path))!;
    expect(entry, 'the mapping in /proc/self/smaps').toBeDefined();
    const start = BigInt(`0x${entry.split('-')[0]}`);
    expect(start % BigInt(2 * MiB)).toBe(0n);
    const pmd = Number(/FilePmdMapped:\s+(\d+) kB/.exec(entry)?.[1] ?? 0);
    // What this kernel and filesystem make of it (ext4 on 6.18 here: every aligned 2 MiB of the file).
    console.log(`{ hugePages: true }: ${pmd} kB of ${statSync(path).size >> 10} kB mapped by 2 MiB pages`);
    expect(g.tensor('w')!.bytes[8 * MiB - 1]).toBe(((8 * MiB - 1) * 7) & 0xff);
    using plain = openGguf(path);
    expect(plain.hugePages).toBe(false);
  });

  it('an aborted prefetch stops between slices and rejects with the reason; close() during one is safe', async () => {
    const path = model('abort.gguf', 128);
    evictFromPageCache(path);
    const g = openGguf(path);
    const controller = new AbortController();
    const seen: number[] = [];
    const aborted = g.prefetch({ signal: controller.signal, onProgress: (done) => (seen.push(done), controller.abort(new Error('stop'))) });
    await expect(aborted).rejects.toThrow('stop');
    expect(seen).toHaveLength(1);
    const closing = g.prefetch();
    g.close();
    await expect(closing).rejects.toThrow(expect.objectContaining({ code: 'CLOSED' }));
    expect(() => g.residency()).toThrow(expect.objectContaining({ code: 'CLOSED' }));
  });
});

describe.skipIf(READ_MODE)(mmapOnly('page cache on every system'), () => {
  // What each system can do (README: Platforms): Windows counts this process's working set, has no
  // access-pattern hint for a view and cannot evict one file's pages; POSIX systems can.
  it('prefetch() makes the range resident here; lock and unlock; the advice the system has, ENOTSUP for the rest', async () => {
    const path = model('everywhere.gguf', 40);
    using g = openGguf(path);
    const { bytes } = await g.prefetch();
    expect(bytes).toBe(g.fileSize);
    expect(g.residency()).toEqual({ resident: g.fileSize, total: g.fileSize });
    g.lock(['small']);
    g.unlock(['small']);
    for (const advice of ['willneed', 'normal', 'dontneed'] as const) g.advise(advice, ['big']);
    for (const advice of ['random', 'sequential'] as const) {
      if (WINDOWS) expect(() => g.advise(advice, ['big'])).toThrow(expect.objectContaining({ code: 'ENOTSUP' }));
      else g.advise(advice, ['big']);
    }
    if (WINDOWS) expect(() => evictFromPageCache(path)).toThrow(expect.objectContaining({ code: 'ENOTSUP' }));
    else evictFromPageCache(path);
  });
});

describe('page cache without a mapping', () => {
  it('read mode and parseGguf files are NOT_MAPPED', () => {
    const bytes = encodeGguf({ tensors: [{ name: 't', type: 'F32', shape: [4] }] });
    const path = join(dir, 'read.gguf');
    writeGgufFile(path, { tensors: [{ name: 't', type: 'F32', shape: [4] }] });
    using read = openGguf(path, { mode: 'read' });
    for (const g of [read, parseGguf(bytes)]) {
      expect(() => g.residency()).toThrow(GgufError);
      expect(() => g.lock()).toThrow(expect.objectContaining({ code: 'NOT_MAPPED' }));
    }
  });
});

describe.skipIf(READ_MODE)(mmapOnly('page cache: truncation, close, foreign tensors, eviction paths'), () => {
  it.skipIf(WINDOWS)(posixOnly('prefetch() of a file truncated while mapped rejects with FILE_CHANGED (not a bare EFAULT), and later access says so too', 'Windows refuses to shrink a mapped file (scripts/windows-lost-pages.ts checks lost pages there)'), async () => {
    const path = model('shrinks.gguf', 8);
    using g = openGguf(path);
    const { truncateSync } = await import('node:fs');
    truncateSync(path, 4096);
    const error = await g.prefetch().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GgufError);
    expect((error as GgufError).code).toBe('FILE_CHANGED');
    expect(() => g.tensor('small')!.bytes).toThrow(expect.objectContaining({ code: 'FILE_CHANGED' }));
  });

  it('close() during the only slice of a small file rejects with CLOSED, not as warmed', async () => {
    const path = model('closes.gguf', 4);
    const g = openGguf(path);
    const pending = g.prefetch();
    g.close();
    await expect(pending).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it("a tensor of another file is a TypeError, not this file's bytes at its offset", () => {
    using a = openGguf(model('a.gguf', 1));
    using b = openGguf(model('b.gguf', 1));
    for (const call of [() => a.residency([b.tensor('small')!]), () => a.advise('random', [b.tensor('small')!]), () => a.lock([b.tensor('small')!])]) {
      expect(call).toThrow(TypeError);
    }
    expect(a.residency([a.tensor('small')!]).total).toBe(4096);
  });

  it.skipIf(WINDOWS)(posixOnly('evictFromPageCache: a FIFO is ENODEV at once (no wait for a writer; child process), a NUL byte is a TypeError, not another file', 'no FIFOs, no eviction'), async () => {
    const { execFileSync } = await import('node:child_process');
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const r = runChild(`
      import { evictFromPageCache } from ${JSON.stringify(DIST_INDEX)};
      try { evictFromPageCache(${JSON.stringify(fifo)}); console.log(JSON.stringify('evicted')); } catch (e) { console.log(JSON.stringify(e.code)); }
    `);
    expect(r.result).toBe('ENODEV');
    const real = model('real.gguf', 1);
    expect(() => evictFromPageCache(`${real}\0ignored`)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => evictFromPageCache(dir)).toThrow(expect.objectContaining({ code: 'EISDIR' }));
    evictFromPageCache(real);
  });
});
