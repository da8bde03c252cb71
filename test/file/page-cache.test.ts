// The page cache under the service's control: residency, advice, locking, prefetching.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeGguf, evictFromPageCache, GgufError, openGguf, parseGguf, writeGgufFile } from '../../lib/index.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';
import { tempDir } from '../helpers/tmp.js';

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

describe.skipIf(READ_MODE)(mmapOnly('page cache'), () => {
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
