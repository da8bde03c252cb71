// openGgufBlob (issue 37): a file given as a Blob (a page's dropped File; in Node fs.openAsBlob),
// against the same bytes opened with openGguf. Only the header is read at open; tensor bytes on
// demand.
import { openAsBlob } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeGguf, GgufError, openGguf, openGgufBlob, writeGgufFile, writeGgufSplit, type GgufWriteSpec } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';
import { randomBytes } from '../helpers/random.js';

function spec(tokens: number): GgufWriteSpec {
  return {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: tokens }, (_, i) => `token-${i}`) }],
    ],
    tensors: [
      { name: 'a', type: 'F32', shape: [4, 3], data: new Uint8Array(new Float32Array(12).map((_, i) => i - 5.5).buffer) },
      { name: 'big', type: 'Q8_0', shape: [32, 1 << 18], data: randomBytes(34 << 18, 7).map((b, i) => (i % 34 === 1 ? b & 0x3b : b)) },
    ],
  };
}

/** Whether two arrays hold the same bytes (toEqual walks millions of elements slowly). */
const same = (a: ArrayBufferView, b: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** A Blob over `blob` that records every range sliced from it. */
function counted(blob: Blob): { blob: Blob; slices: Array<[number, number]> } {
  const slices: Array<[number, number]> = [];
  const wrapped = Object.create(blob) as Blob;
  Object.defineProperty(wrapped, 'size', { value: blob.size });
  wrapped.slice = (start?: number, end?: number) => {
    slices.push([start ?? 0, end ?? blob.size]);
    return blob.slice(start, end);
  };
  return { blob: wrapped, slices };
}

describe('openGgufBlob', () => {
  it('reads the header from slices, never the whole file, and tensors on demand as openGguf has them', async () => {
    const path = join(tempDir(), 'model.gguf');
    writeGgufFile(path, spec(300_000)); // a header of ~4.7 MB: past the first 4 MiB read
    using local = openGguf(path);
    const { blob, slices } = counted(await openAsBlob(path));
    const file = await openGgufBlob(blob);
    expect(file.mode).toBe('blob');
    expect(file.fileSize).toBe(local.fileSize);
    expect(file.metadata.array('tokenizer.ggml.tokens')?.length).toBe(300_000);
    expect(file.summary()).toEqual(local.summary());
    // Two reads: the first 4 MiB, then the rest of the header as the parser guessed it.
    expect(slices.length).toBe(2);
    const headerRead = slices.reduce((sum, [s, e]) => sum + e - s, 0);
    expect(headerRead).toBeLessThanOrEqual(8 << 20);
    expect(headerRead).toBeLessThan(local.fileSize);
    slices.length = 0;
    const big = file.tensor('big')!;
    expect(() => big.bytes).toThrow(expect.objectContaining({ code: 'REMOTE_FILE' }));
    expect(same(await big.fetchBytes(), local.tensor('big')!.bytes)).toBe(true);
    expect(slices).toEqual([[big.fileOffset, big.fileOffset + big.nbytes]]);
    expect(same(await big.dequantizeAsync(), local.tensor('big')!.dequantize())).toBe(true);
    expect(await big.gatherRowsAsync([3, 0, 262143])).toEqual(local.tensor('big')!.gatherRows([3, 0, 262143]));
    expect(await file.tensor('a')!.dequantizeAsync()).toEqual(local.tensor('a')!.dequantize());
    file.close();
    await expect(big.fetchBytes()).rejects.toMatchObject({ code: 'CLOSED' });
  }, 60_000);

  it('opens a Blob made in memory, and the parts of a split model as a list', async () => {
    const one = await openGgufBlob(new Blob([encodeGguf(spec(10))]));
    expect(one.tensor('a')!.shape).toEqual([4, 3]);
    const dir = tempDir();
    const paths = writeGgufSplit(join(dir, 'm.gguf'), spec(10), { maxTensors: 1 });
    expect(paths.length).toBe(2);
    const blobs = await Promise.all(paths.map((p) => openAsBlob(p)));
    const split = await openGgufBlob(blobs);
    expect(split.tensorCount).toBe(2);
    using second = openGguf(paths[1]!, { split: false });
    expect(same(await split.tensor('big')!.fetchBytes(), second.tensor('big')!.bytes)).toBe(true);
    // One part alone is half a model, as with openGguf; { split: false } opens it alone.
    await expect(openGgufBlob(blobs[0]!)).rejects.toBeInstanceOf(GgufError);
    expect((await openGgufBlob(blobs[0]!, { split: false })).tensorCount).toBe(1);
  });

  it('gives the parser errors of a bad file, and a TypeError for what is not a Blob', async () => {
    await expect(openGgufBlob(new Blob([new Uint8Array(64)]))).rejects.toMatchObject({ code: 'BAD_MAGIC' });
    await expect(openGgufBlob(new Blob([]))).rejects.toMatchObject({ code: 'TRUNCATED' });
    await expect(openGgufBlob('model.gguf' as unknown as Blob)).rejects.toBeInstanceOf(TypeError);
  });
});
