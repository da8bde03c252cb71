import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeGguf, GGUF_ERROR_CODES, GgufError, openGguf, parseGguf, type GgufWriteSpec } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';
import { mmapOnly, READ_MODE } from '../helpers/mode.js';

/** The GgufError a buffer gives, as {code, offset}; fails the test on success or another error. */
function failure(bytes: Uint8Array): { code: string; offset: number } {
  try {
    parseGguf(bytes);
  } catch (e) {
    if (!(e instanceof GgufError)) throw e;
    expect(GGUF_ERROR_CODES).toContain(e.code);
    return { code: e.code, offset: e.offset };
  }
  throw new Error('parsed without error');
}

const patch = (bytes: Uint8Array, at: number, values: number[]) => {
  const out = new Uint8Array(bytes);
  out.set(values, at);
  return out;
};
const u64le = (v: bigint) => [...new Uint8Array(new BigUint64Array([v]).buffer)];

// Header: magic 0-3, version 4-7, tensor count 8-15, kv count 16-23; the first key's length at 24.
const HEADER = 24;
const oneKv = (spec: GgufWriteSpec['metadata']) => encodeGguf({ metadata: spec });

describe('invalid files give a GgufError with a code and the byte offset', () => {
  it('bad magic, including the pre-release FUGG', () => {
    expect(failure(patch(oneKv({}), 0, [0x46, 0x55, 0x47, 0x47]))).toEqual({ code: 'BAD_MAGIC', offset: 0 });
    expect(failure(patch(oneKv({}), 0, [0x7f, 0x45, 0x4c, 0x46]))).toEqual({ code: 'BAD_MAGIC', offset: 0 });
  });

  it('unsupported versions: 0, 4, 0xFFFF', () => {
    for (const v of [0, 4, 0xffff]) {
      expect(failure(patch(oneKv({}), 4, [v & 0xff, v >> 8, 0, 0]))).toEqual({ code: 'BAD_VERSION', offset: 4 });
    }
  });

  it('short files are TRUNCATED at the field they end in', () => {
    expect(failure(new Uint8Array([0x47, 0x47]))).toEqual({ code: 'TRUNCATED', offset: 0 });
    const full = oneKv({ k: { type: 'STRING', value: 'hello' } });
    expect(failure(full.subarray(0, 10))).toEqual({ code: 'TRUNCATED', offset: 8 });
    // The string's length field (8 bytes before its 5 bytes) claims more than is left.
    expect(failure(full.subarray(0, full.length - 1))).toEqual({ code: 'TRUNCATED', offset: full.length - 5 - 8 });
  });

  it('a string array cut short reports the string whose length runs past the end', () => {
    const words = ['alpha', 'beta', 'gamma', 'delta'];
    for (const endian of ['little', 'big'] as const) {
      const full = encodeGguf({ endian, metadata: { a: { type: 'ARRAY', arrayType: 'STRING', value: words } } });
      // Elements start at 49 (key 'a', type, element type, count); each is an 8-byte length + bytes.
      const starts = [49, 49 + 13, 49 + 13 + 12, 49 + 13 + 12 + 13];
      expect(failure(full.subarray(0, full.length - 1)), endian).toEqual({ code: 'TRUNCATED', offset: starts[3] });
      expect(failure(full.subarray(0, starts[2]! + 12)), endian).toEqual({ code: 'TRUNCATED', offset: starts[2] });
      expect(failure(patch(full, endian === 'little' ? starts[1]! + 4 : starts[1]!, [1])), endian).toMatchObject({ offset: starts[1] });
    }
  });

  it('counts that cannot fit in the file are rejected before anything is allocated', () => {
    expect(failure(patch(oneKv({}), 16, u64le(1n << 60n)))).toEqual({ code: 'BAD_COUNT', offset: 16 });
    expect(failure(patch(oneKv({}), 8, u64le(1n << 40n)))).toEqual({ code: 'BAD_COUNT', offset: 8 });
    expect(failure(patch(oneKv({}), 8, u64le(1n << 63n)))).toEqual({ code: 'BAD_COUNT', offset: 8 });
    // key length 1 'a', type ARRAY (9) at 33, element type at 37, count at 41
    const arr = oneKv({ a: { type: 'ARRAY', arrayType: 'STRING', value: ['x'] } });
    expect(failure(patch(arr, 41, u64le(1n << 50n)))).toEqual({ code: 'BAD_COUNT', offset: 41 });
  });

  it('key and string lengths past the end of the file or over 1 GiB; keys that are not UTF-8', () => {
    const file = oneKv({ k: { type: 'STRING', value: 'hello' } });
    expect(failure(patch(file, HEADER, u64le(100n)))).toEqual({ code: 'TRUNCATED', offset: HEADER });
    expect(failure(patch(file, HEADER, u64le((1n << 30n) + 1n)))).toEqual({ code: 'STRING_TOO_LONG', offset: HEADER });
    // key 'k' (1 byte), type STRING at 33, the string's length at 37
    expect(failure(patch(file, 37, u64le(1000n)))).toEqual({ code: 'TRUNCATED', offset: 37 });
    expect(failure(patch(file, 37, u64le(1n << 40n)))).toEqual({ code: 'STRING_TOO_LONG', offset: 37 });
    expect(failure(patch(file, HEADER + 8, [0xff]))).toEqual({ code: 'BAD_UTF8', offset: HEADER + 8 });
  });

  it('value and array element types outside 0-12', () => {
    expect(failure(patch(oneKv({ a: { type: 'UINT8', value: 1 } }), 33, [13]))).toEqual({ code: 'BAD_VALUE_TYPE', offset: 33 });
    const arr = oneKv({ a: { type: 'ARRAY', arrayType: 'UINT8', value: [1] } });
    expect(failure(patch(arr, 37, [0xff, 0xff, 0xff, 0xff]))).toEqual({ code: 'BAD_ARRAY_TYPE', offset: 37 });
  });

  it('empty and duplicate keys', () => {
    expect(failure(oneKv({ '': { type: 'UINT8', value: 1 } }))).toEqual({ code: 'EMPTY_KEY', offset: HEADER });
    const dup = encodeGguf({ metadata: [['k', { type: 'UINT8', value: 1 }], ['k', { type: 'UINT8', value: 2 }]] });
    expect(failure(dup)).toEqual({ code: 'DUPLICATE_KEY', offset: HEADER + 8 + 1 + 4 + 1 });
  });

  it('BOOL bytes other than 0 and 1 are rejected', () => {
    expect(failure(patch(oneKv({ b: { type: 'BOOL', value: true } }), 37, [2]))).toEqual({ code: 'BAD_BOOL', offset: 37 });
  });

  it('arrays nested deeper than 8', () => {
    let value = { arrayType: 'UINT8' as const, value: [1] } as { arrayType: 'UINT8' | 'ARRAY'; value: unknown[] };
    for (let i = 0; i < 8; i++) value = { arrayType: 'ARRAY', value: [value] };
    expect(failure(oneKv({ deep: { type: 'ARRAY', ...value } as never })).code).toBe('NESTING_TOO_DEEP');
    value = value.value[0] as typeof value;
    expect(() => parseGguf(oneKv({ deep: { type: 'ARRAY', ...value } as never }))).not.toThrow();
  });

  it('general.alignment must be a UINT32 power of two', () => {
    for (const value of [0, 3, 48]) {
      expect(failure(oneKv({ 'general.alignment': { type: 'UINT32', value } }))).toEqual({ code: 'BAD_ALIGNMENT', offset: HEADER });
    }
    expect(failure(oneKv({ 'general.alignment': { type: 'INT32', value: 32 } }))).toEqual({ code: 'BAD_ALIGNMENT', offset: HEADER });
  });

  const tensorFile = (tensors: GgufWriteSpec['tensors']) => encodeGguf({ tensors });
  // With no metadata, the first tensor info starts right after the header.
  const info = HEADER;

  it('unknown and removed tensor types', () => {
    const typeAt = info + 8 + 1 + 4 + 8;
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [8], forgeTypeId: 43 }]))).toEqual({ code: 'UNKNOWN_TENSOR_TYPE', offset: typeAt });
    for (const id of [4, 5, 31, 32, 33, 36, 37, 38]) {
      expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [8], forgeTypeId: id }]))).toEqual({ code: 'REMOVED_TENSOR_TYPE', offset: typeAt });
    }
  });

  it('bad shapes: ne[0] not a multiple of the block size, negative, overflowing; too many dims', () => {
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [33, 2], forgeTypeId: 2 }])).code).toBe('BAD_SHAPE');
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [-1] }]))).toEqual({ code: 'BAD_SHAPE', offset: info + 8 + 1 + 4 });
    const dims = info + 8 + 1 + 4;
    const huge = patch(tensorFile([{ name: 'w', type: 'F32', shape: [1, 1] }]), dims, [...u64le(1n << 32n), ...u64le(1n << 31n)]);
    expect(failure(huge)).toEqual({ code: 'BAD_SHAPE', offset: dims + 8 });
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [1, 1, 1, 1, 1] }]))).toEqual({ code: 'BAD_DIMS', offset: info + 8 + 1 });
  });

  it('a zero dimension is a valid empty tensor', () => {
    const g = parseGguf(tensorFile([{ name: 'empty', type: 'F32', shape: [0, 4] }, { name: 'w', type: 'F32', shape: [8] }]));
    expect(g.tensor('empty')!.nbytes).toBe(0);
    expect(g.tensor('empty')!.bytes.length).toBe(0);
  });

  it('tensor names: empty, 64 bytes or more, duplicated', () => {
    expect(failure(tensorFile([{ name: '', type: 'F32', shape: [8], forgeName: true }]))).toEqual({ code: 'BAD_TENSOR_NAME', offset: info });
    expect(failure(tensorFile([{ name: 'n'.repeat(64), type: 'F32', shape: [8], forgeName: true }]))).toEqual({ code: 'BAD_TENSOR_NAME', offset: info });
    expect(() => parseGguf(tensorFile([{ name: 'n'.repeat(63), type: 'F32', shape: [8] }]))).not.toThrow();
    const second = info + 8 + 1 + 4 + 8 + 4 + 8;
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [8] }, { name: 'w', type: 'F32', shape: [8], forgeName: true }]))).toEqual({ code: 'DUPLICATE_TENSOR', offset: second });
  });

  it('tensor offsets: unaligned, overlapping, leaving a gap (ggml wants the padded running sum), past the end', () => {
    const offsetAt = info + 8 + 1 + 4 + 8 + 4;
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [8], forgeOffset: 4 }]))).toEqual({ code: 'BAD_TENSOR_OFFSET', offset: offsetAt });
    const overlap = tensorFile([{ name: 'a', type: 'F32', shape: [16] }, { name: 'b', type: 'F32', shape: [8], forgeOffset: 32 }]);
    expect(failure(overlap).code).toBe('TENSOR_OVERLAP');
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [8], forgeOffset: 64 }]))).toEqual({ code: 'BAD_TENSOR_OFFSET', offset: info });
    // Each tensor starts where the one before ends, padded to the alignment, in file order.
    const gap = tensorFile([{ name: 'a', type: 'F32', shape: [8] }, { name: 'b', type: 'F32', shape: [8], forgeOffset: 64 }]);
    expect(failure(gap)).toEqual({ code: 'BAD_TENSOR_OFFSET', offset: info + 8 + 1 + 4 + 8 + 4 + 8 });
    const swapped = tensorFile([{ name: 'a', type: 'F32', shape: [8], forgeOffset: 32 }, { name: 'b', type: 'F32', shape: [8], forgeOffset: 0 }]);
    expect(failure(swapped).code).toBe('BAD_TENSOR_OFFSET');
    expect(failure(tensorFile([{ name: 'w', type: 'F32', shape: [8], forgeOffset: 1n << 62n }])).code).toBe('TENSOR_OUT_OF_BOUNDS');
    const full = tensorFile([{ name: 'w', type: 'F32', shape: [8] }]);
    expect(failure(full.subarray(0, full.length - 1))).toEqual({ code: 'TENSOR_OUT_OF_BOUNDS', offset: info });
  });

  it('a file with no tensors may end before the aligned data offset', () => {
    const g = parseGguf(oneKv({ k: { type: 'UINT8', value: 1 } }));
    expect(g.fileSize).toBe(HEADER + 8 + 1 + 4 + 1);
    expect(g.dataOffset).toBe(64);
  });

  it('block views exist only for Q4_K and Q6_K, and only inside the tensor', () => {
    const g = parseGguf(tensorFile([{ name: 'w', type: 'Q8_0', shape: [32] }, { name: 'k', type: 'Q4_K', shape: [256] }]));
    expect(() => g.tensor('w')!.block(0)).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_BLOCK_TYPE' }));
    expect(() => g.tensor('k')!.block(1)).toThrow(expect.objectContaining({ code: 'BLOCK_OUT_OF_RANGE' }));
  });

  it('openGguf: system errors carry errno code and path; an empty file is TRUNCATED like any short file', () => {
    const dir = tempDir();
    const empty = join(dir, 'empty.gguf');
    writeFileSync(empty, '');
    expect(() => openGguf(empty)).toThrow(expect.objectContaining({ name: 'GgufError', code: 'TRUNCATED', offset: 0 }));
    // A device, not a regular file: /dev/null, or Windows's NUL.
    const device = process.platform === 'win32' ? '\\\\.\\NUL' : '/dev/null';
    const cases: Array<[string, string]> = [[join(dir, 'missing.gguf'), 'ENOENT'], [dir, 'EISDIR'], [device, 'ENODEV']];
    // A FIFO must be refused at once, not block waiting for a writer.
    const fifo = join(dir, 'fifo.gguf');
    if (spawnSync('mkfifo', [fifo]).status === 0) cases.push([fifo, 'ENODEV']);
    for (const [path, code] of cases) {
      expect(() => openGguf(path), path).toThrow(expect.objectContaining({ code, path: resolve(path), syscall: expect.any(String) }));
    }
    expect(cases.length).toBeGreaterThanOrEqual(3);
  });
});

describe('strings longer than a JavaScript string can be', () => {
  // 600 MiB of zeros (a hole in a sparse file): valid UTF-8 (U+0000), past V8's 2^29 - 24 units.
  const N = 600 * 2 ** 20;
  function sparseFile(asKey: boolean): string {
    const head = Buffer.alloc(64);
    let o = head.write('GGUF', 0);
    o = head.writeUInt32LE(3, o);
    o = head.writeBigUInt64LE(0n, o); // tensors
    o = head.writeBigUInt64LE(1n, o); // keys
    if (asKey) {
      o = head.writeBigUInt64LE(BigInt(N), o);
    } else {
      o = head.writeBigUInt64LE(1n, o);
      o += head.write('a', o);
      o = head.writeUInt32LE(8, o); // STRING
      o = head.writeBigUInt64LE(BigInt(N), o);
    }
    const path = join(tempDir(), `long-${asKey ? 'key' : 'value'}.gguf`);
    const fd = openSync(path, 'w');
    writeSync(fd, head, 0, o);
    ftruncateSync(fd, o + N + 16);
    closeSync(fd);
    return path;
  }

  it.skipIf(READ_MODE)(mmapOnly('a value or a key of 600 MiB is STRING_TOO_LONG at its first byte (not ERR_STRING_TOO_LONG, not BAD_UTF8)'), () => {
    expect(() => openGguf(sparseFile(false))).toThrow(expect.objectContaining({ name: 'GgufError', code: 'STRING_TOO_LONG', offset: 45 }));
    expect(() => openGguf(sparseFile(true))).toThrow(expect.objectContaining({ name: 'GgufError', code: 'STRING_TOO_LONG', offset: 32 }));
  });
});
