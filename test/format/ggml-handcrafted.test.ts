import { describe, expect, it } from 'vitest';
import {
  encodeGguf,
  GGML_TYPES,
  GgufError,
  parseGguf,
  type GgufFile,
  type GgufWriteSpec,
  type GgufWriteTensor,
  type GgufWriteValue,
} from '../../lib/index.js';
import { parseLayout } from '../../lib/format/parse.js';
import { layoutGguf } from '../../lib/format/writer.js';
import { mulberry32 as rng } from '../../lib/prng.js';

// One test per fixture of ggml's tests/test-gguf.cpp ("handcrafted files"), built here with the
// project's writer and byte patches: the same kinds of damage, and the same verdicts (load or
// fail), with our error codes. Two deliberate differences are noted where they arise: ggml
// rejects GGUF v1 (we read it: the team's fixtures include v1 files), and ggml accepts any BOOL
// byte (we reject bytes other than 0 and 1 with BAD_BOOL).

const VALUE_TYPES = ['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'FLOAT32', 'BOOL', 'STRING', 'UINT64', 'INT64', 'FLOAT64'] as const;

/** Up to 100 random kv pairs of every type (arrays of every element type too), as ggml's fixture. */
function randomKvs(next: () => number): Array<[string, GgufWriteValue]> {
  const kvs: Array<[string, GgufWriteValue]> = [];
  const scalar = (type: (typeof VALUE_TYPES)[number]): number | bigint | boolean | string => {
    switch (type) {
      case 'BOOL': return next() % 2 === 0;
      case 'STRING': return 'x'.repeat(next() % 64);
      case 'UINT64': case 'INT64': return BigInt(next());
      case 'FLOAT32': case 'FLOAT64': return (next() % 1024) - 512;
      case 'UINT8': return next() % 256;
      case 'INT8': return (next() % 256) - 128;
      case 'UINT16': return next() % 65536;
      case 'INT16': return (next() % 65536) - 32768;
      case 'UINT32': return next();
      case 'INT32': return next() | 0;
    }
  };
  for (let i = 0; i < 100; i++) {
    const type = VALUE_TYPES[next() % VALUE_TYPES.length]!;
    if (next() % 13 === 0) {
      const n = next() % 17;
      kvs.push([`my_key_${i}`, { type: 'ARRAY', arrayType: type, value: Array.from({ length: n }, () => scalar(type)) as never }]);
    } else {
      kvs.push([`my_key_${i}`, { type, value: scalar(type) } as GgufWriteValue]);
    }
  }
  return kvs;
}

/** Up to 100 tensors of random valid types and shapes, bytes (offset + j) % 256, as ggml's fixture. */
function randomTensors(next: () => number): GgufWriteTensor[] {
  const tensors: GgufWriteTensor[] = [];
  const usable = GGML_TYPES.filter((t) => !t.removed);
  for (let i = 0; i < 100; i++) {
    const type = usable[next() % usable.length]!;
    const dims = 1 + (next() % 4);
    const shape = [(1 + (next() % 10)) * type.blockSize];
    for (let d = 1; d < dims; d++) shape.push(1 + (next() % 10));
    tensors.push({ name: `my_tensor_${i}`, type: type.name, shape });
  }
  return tensors;
}

interface Crafted {
  spec: GgufWriteSpec;
  patches?: Array<[offset: number, bytes: number[]]>;
  cut?: number; // bytes removed from the end
}

function build({ spec, patches = [], cut = 0 }: Crafted): Uint8Array {
  const layout = encodeGguf(spec);
  // Tensor data as ggml's fixture writes it: byte j of the data section is j % 256.
  const dataOffset = spec.tensors?.length ? layoutGguf(spec).dataOffset : layout.length;
  for (let j = dataOffset; j < layout.length; j++) layout[j] = (j - dataOffset) % 256;
  for (const [at, bytes] of patches) layout.set(bytes, at);
  return layout.subarray(0, layout.length - cut);
}

const u32le = (v: number) => [v & 255, (v >>> 8) & 255, (v >>> 16) & 255, v >>> 24];
const u64le = (v: bigint) => [...new Uint8Array(new BigUint64Array([BigInt.asUintN(64, v)]).buffer)];

/** File offsets of the fields of tensor `i`'s info record. */
function tensorFields(bytes: Uint8Array, i: number) {
  const rec = parseLayout(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), bytes.byteLength).tensors.record(i);
  const nameLength = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(rec.infoOffset, true));
  const nDims = rec.infoOffset + 8 + nameLength;
  return { nameLength: rec.infoOffset, nDims, dims: nDims + 4, type: nDims + 4 + 8 * rec.shape.length, offset: nDims + 4 + 8 * rec.shape.length + 4 };
}

/** The GgufError code parsing `bytes` gives; fails the test on success or another error. */
function failureCode(bytes: Uint8Array): string {
  let error: unknown;
  try {
    parseGguf(bytes);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(GgufError);
  return (error as GgufError).code;
}

function rejects(bytes: Uint8Array, code: string): void {
  expect(failureCode(bytes)).toBe(code);
}

function loads(bytes: Uint8Array): GgufFile {
  return parseGguf(bytes);
}

const SEED = 20241130;

describe("ggml's handcrafted files (tests/test-gguf.cpp)", () => {
  const kvs = () => randomKvs(rng(SEED));
  const tensors = () => randomTensors(rng(SEED + 1));
  const header = { spec: {} } satisfies Crafted;

  it('HEADER_BAD_MAGIC (FUGG)', () => rejects(build({ ...header, patches: [[0, [0x46, 0x55, 0x47, 0x47]]] }), 'BAD_MAGIC'));
  it('HEADER_BAD_VERSION_0', () => rejects(build({ ...header, patches: [[4, u32le(0)]] }), 'BAD_VERSION'));
  it('HEADER_BAD_VERSION_1: ggml rejects v1; we read it (32-bit counts), as the team’s v1 fixtures need', () => {
    expect(loads(build({ spec: { version: 1 } })).version).toBe(1);
  });
  it('HEADER_BAD_VERSION_FUTURE (4), and versions whose low 16 bits are zero but are no known version swapped', () => {
    rejects(build({ ...header, patches: [[4, u32le(4)]] }), 'BAD_VERSION');
    rejects(build({ ...header, patches: [[4, u32le(0x00050000)]] }), 'BAD_VERSION');
    rejects(build({ ...header, patches: [[4, u32le(0xffff0000)]] }), 'BAD_VERSION');
  });
  it('HEADER_BAD_N_KV (2^64-1)', () => rejects(build({ ...header, patches: [[16, u64le(-1n)]] }), 'BAD_COUNT'));
  it('HEADER_BAD_N_TENSORS (2^64-1)', () => rejects(build({ ...header, patches: [[8, u64le(-1n)]] }), 'BAD_COUNT'));
  it('HEADER_EMPTY loads', () => {
    const g = loads(build(header));
    expect([g.version, g.tensors.length, g.metadata.size]).toEqual([3, 0, 0]);
  });

  it('KV_BAD_KEY_SIZE (2^64-1)', () => rejects(build({ spec: { metadata: kvs() }, patches: [[24, u64le(-1n)]] }), 'STRING_TOO_LONG'));
  it('KV_BAD_TYPE (13)', () => {
    const bytes = build({ spec: { metadata: kvs() } });
    const keyLength = Number(new DataView(bytes.buffer).getBigUint64(24, true));
    bytes.set(u32le(13), 24 + 8 + keyLength);
    rejects(bytes, 'BAD_VALUE_TYPE');
  });
  it('KV_DUPLICATE_KEY', () => {
    const pairs = kvs().map(([key, value], i) => [`my_key_${Math.floor(i / 2)}`, value] as [string, GgufWriteValue]);
    rejects(build({ spec: { metadata: pairs } }), 'DUPLICATE_KEY');
  });
  it('KV_BAD_ALIGN (13)', () => {
    rejects(build({ spec: { metadata: [...kvs(), ['general.alignment', { type: 'UINT32', value: 13 }]] } }), 'BAD_ALIGNMENT');
  });
  it('KV_SUCCESS (random pairs of every type) loads with every value intact', () => {
    const pairs = kvs();
    const g = loads(build({ spec: { metadata: pairs } }));
    expect(g.metadata.size).toBe(pairs.length);
    for (const [key, value] of pairs) {
      const got = value.type === 'ARRAY' ? g.metadata.array(key)!.toArray() : g.metadata.get(key);
      const want = value.type === 'ARRAY' ? Array.from(value.value as ArrayLike<unknown>) : value.value;
      // 64-bit integers may come back as number or bigint: compare their decimal forms.
      const norm = (v: unknown): unknown => (Array.isArray(v) ? v.map(norm) : typeof v === 'bigint' || typeof v === 'number' ? String(v) : v);
      expect(norm(value.type === 'ARRAY' ? Array.from(got as ArrayLike<unknown>) : got), key).toEqual(norm(want));
    }
    expect(g.alignment).toBe(32);
  });

  const withTensors = (extra: Partial<GgufWriteSpec> = {}): GgufWriteSpec => ({ metadata: kvs(), tensors: tensors(), ...extra });

  it('TENSORS_BAD_NAME_SIZE (64 bytes or more)', () => {
    const t = tensors();
    t[3] = { ...t[3]!, name: t[3]!.name + '_with_a_very_long_name_which_is_longer_than_what_is_allowed', forgeName: true };
    rejects(build({ spec: { metadata: kvs(), tensors: t } }), 'BAD_TENSOR_NAME');
  });
  it('TENSORS_BAD_N_DIMS (5)', () => {
    const bytes = build({ spec: withTensors() });
    bytes.set(u32le(5), tensorFields(bytes, 0).nDims);
    rejects(bytes, 'BAD_DIMS');
  });
  it('TENSORS_BAD_SHAPE (-1)', () => {
    const bytes = build({ spec: withTensors() });
    bytes.set(u64le(-1n), tensorFields(bytes, 0).dims);
    rejects(bytes, 'BAD_SHAPE');
  });
  it('TENSORS_NE_TOO_BIG (two dims of 4 * INT32_MAX: the product overflows int64)', () => {
    const big = 4n * 2147483647n;
    const bytes = build({ spec: { tensors: [{ name: 't', type: 'F32', shape: [1, 1] }] } });
    bytes.set([...u64le(big), ...u64le(big)], tensorFields(bytes, 0).dims);
    rejects(bytes, 'BAD_SHAPE');
  });
  it('TENSORS_NBYTES_TOO_BIG (I64 elements whose byte size overflows)', () => {
    const bytes = build({ spec: { tensors: [{ name: 't', type: 'I64', shape: [1, 1] }] } });
    bytes.set([...u64le(1n << 31n), ...u64le(1n << 31n)], tensorFields(bytes, 0).dims);
    rejects(bytes, 'BAD_SHAPE');
  });
  it('TENSORS_BAD_TYPE (43)', () => {
    const t = tensors();
    t[0] = { ...t[0]!, forgeTypeId: 43 };
    rejects(build({ spec: { metadata: kvs(), tensors: t } }), 'UNKNOWN_TENSOR_TYPE');
  });
  it('TENSORS_BAD_OFFSET (2^64-1)', () => {
    const t = tensors();
    t[0] = { ...t[0]!, forgeOffset: (1n << 64n) - 1n };
    rejects(build({ spec: { metadata: kvs(), tensors: t } }), 'BAD_TENSOR_OFFSET');
  });
  it('TENSORS_DUPLICATE_NAME', () => {
    rejects(build({ spec: { metadata: kvs(), tensors: tensors().map((t) => ({ ...t, name: 'my_tensor', forgeName: true })) } }), 'DUPLICATE_TENSOR');
  });
  it('TENSORS_BAD_ALIGN (13)', () => {
    rejects(build({ spec: { ...withTensors(), metadata: [...kvs(), ['general.alignment', { type: 'UINT32', value: 13 }]] } }), 'BAD_ALIGNMENT');
  });
  it('TENSORS_INCONSISTENT_ALIGN (offsets packed with alignment 1 while the file says 32)', () => {
    const t = [
      { name: 'a', type: 'F32', shape: [3] },
      { name: 'b', type: 'F32', shape: [5], forgeOffset: 12 },
    ] satisfies GgufWriteTensor[];
    rejects(build({ spec: { tensors: t } }), 'BAD_TENSOR_OFFSET');
  });
  it('TENSORS_SUCCESS loads: names, types, shapes and offsets as written', () => {
    const spec = withTensors();
    const g = loads(build({ spec }));
    let offset = 0;
    for (const want of spec.tensors!) {
      const t = g.tensor(want.name)!;
      expect([t.type, t.shape, t.offset]).toEqual([want.type, want.shape, offset]);
      offset += Math.ceil(t.nbytes / 32) * 32;
    }
  });
  it('TENSORS_CUSTOM_ALIGN (1) loads', () => {
    const g = loads(build({ spec: withTensors({ alignment: 1 }) }));
    expect(g.alignment).toBe(1);
    expect(g.tensors).toHaveLength(tensors().length);
  });

  it('DATA_NOT_ENOUGH_DATA (the last tensor one byte short)', () => {
    // ggml also wants the padding after the last tensor; we only require each tensor's own bytes
    // (no read can pass the end either way), so the cut goes into the last tensor itself.
    const spec = withTensors();
    const full = build({ spec });
    const g = parseGguf(full);
    const last = g.tensors.reduce((a, b) => (a.fileOffset > b.fileOffset ? a : b));
    rejects(full.subarray(0, last.fileOffset + last.nbytes - 1), 'TENSOR_OUT_OF_BOUNDS');
    expect(parseGguf(full.subarray(0, last.fileOffset + last.nbytes)).tensors).toHaveLength(spec.tensors!.length);
  });
  it('DATA_BAD_ALIGN (13)', () => rejects(build({ spec: { ...withTensors(), metadata: [...kvs(), ['general.alignment', { type: 'UINT32', value: 13 }]] } }), 'BAD_ALIGNMENT'));
  it('DATA_INCONSISTENT_ALIGN', () => {
    rejects(build({ spec: { tensors: [{ name: 'a', type: 'I8', shape: [7] }, { name: 'b', type: 'I8', shape: [9], forgeOffset: 7 }] } }), 'BAD_TENSOR_OFFSET');
  });
  it('DATA_MEM_SIZE_OVERFLOW (two I8 tensors of 0x7FFFFFFFFFFFFFC0 elements)', () => {
    const bytes = build({ spec: { tensors: [{ name: 'a', type: 'I8', shape: [32] }, { name: 'b', type: 'I8', shape: [32] }] } });
    const huge = u64le(0x7fffffffffffffc0n);
    const [a, b] = [tensorFields(bytes, 0), tensorFields(bytes, 1)];
    bytes.set(huge, a.dims);
    bytes.set(huge, b.dims);
    expect(['BAD_SHAPE', 'TENSOR_OUT_OF_BOUNDS', 'TENSOR_OVERLAP']).toContain(failureCode(bytes));
  });
  it('DATA_SUCCESS loads, and every tensor holds the bytes written', () => {
    const spec = withTensors();
    const bytes = build({ spec });
    const g = loads(bytes);
    for (const t of g.tensors) {
      const data = t.bytes;
      for (let j = 0; j < data.length; j++) if (data[j] !== (t.offset + j) % 256) throw new Error(`${t.name} byte ${j}`);
    }
  });
  it('DATA_CUSTOM_ALIGN (1) loads, and every tensor holds the bytes written', () => {
    const g = loads(build({ spec: withTensors({ alignment: 1 }) }));
    for (const t of g.tensors) expect(t.bytes.every((b, j) => b === (t.offset + j) % 256)).toBe(true);
  });
});
