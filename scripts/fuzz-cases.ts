// The fuzzer's cases: valid seed files, mutated deterministically from (seed, index), so any case
// can be rebuilt from its two numbers (the regression tests do).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeGguf, GGML_TYPES } from '../lib/index.js';
import { parseLayout } from '../lib/format/parse.js';
import { mulberry32 } from '../lib/prng.js';
import { everyTypeSpec } from './truncation-sweep.js';

interface Field {
  at: number;
  width: 1 | 4 | 8;
  kind: 'count' | 'length' | 'type' | 'dims' | 'dim' | 'offset' | 'alignment' | 'value';
}

interface Seed {
  name: string;
  bytes: Uint8Array;
  littleEndian: boolean;
  fields: Field[];
  headerEnd: number;
}

/** The numeric fields of a valid file's header, found by parsing it. */
function fieldsOf(bytes: Uint8Array): { fields: Field[]; littleEndian: boolean; headerEnd: number } {
  const layout = parseLayout(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), bytes.byteLength);
  const le = layout.littleEndian;
  const w = layout.version >= 2 ? 8 : 4;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const len = (at: number) => (w === 8 ? Number(view.getBigUint64(at, le)) : view.getUint32(at, le));
  const fields: Field[] = [
    { at: 8, width: w, kind: 'count' },
    { at: 8 + w, width: w, kind: 'count' },
  ];
  for (const kv of layout.kvs) {
    const typeAt = kv.offset + w + len(kv.offset);
    fields.push({ at: kv.offset, width: w, kind: 'length' }, { at: typeAt, width: 4, kind: 'type' });
    if (kv.key === 'general.alignment') fields.push({ at: typeAt + 4, width: 4, kind: 'alignment' });
    else if (kv.type === 'STRING') fields.push({ at: typeAt + 4, width: w, kind: 'length' });
    else if (kv.type === 'ARRAY') fields.push({ at: typeAt + 4, width: 4, kind: 'type' }, { at: typeAt + 8, width: w, kind: 'count' });
    else fields.push({ at: typeAt + 4, width: 1, kind: 'value' });
  }
  for (let i = 0; i < layout.tensors.count; i++) {
    const t = layout.tensors.record(i);
    const nDimsAt = t.infoOffset + w + len(t.infoOffset);
    fields.push({ at: t.infoOffset, width: w, kind: 'length' }, { at: nDimsAt, width: 4, kind: 'dims' });
    t.shape.forEach((_, d) => fields.push({ at: nDimsAt + 4 + d * w, width: w, kind: 'dim' }));
    const typeAt = nDimsAt + 4 + t.shape.length * w;
    fields.push({ at: typeAt, width: 4, kind: 'type' }, { at: typeAt + 4, width: 8, kind: 'offset' });
  }
  return { fields, littleEndian: le, headerEnd: layout.headerEnd };
}

/** The seed files: writer-built ones and the small real fixtures in ../shared (when present). */
export function loadSeeds(sharedDir: string | undefined): Seed[] {
  const files: Array<[string, Uint8Array]> = [
    ['writer every-type LE', encodeGguf(everyTypeSpec())],
    ['writer every-type BE', encodeGguf({ ...everyTypeSpec(), endian: 'big' })],
    ['writer every-type align 1', encodeGguf({ ...everyTypeSpec(), alignment: 1 })],
    ['writer every-type v1', encodeGguf({ ...everyTypeSpec(), version: 1 })],
    [
      'writer model-like',
      encodeGguf({
        metadata: {
          'general.architecture': { type: 'STRING', value: 'llama' },
          'general.alignment': { type: 'UINT32', value: 64 },
          'tokenizer.ggml.tokens': { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: 500 }, (_, i) => `tok${i}`) },
          'tokenizer.ggml.scores': { type: 'ARRAY', arrayType: 'FLOAT32', value: Array.from({ length: 500 }, (_, i) => i / 7) },
        },
        tensors: ['Q4_K', 'Q6_K', 'Q8_0', 'F16', 'F32', 'IQ4_NL'].map((type, i) => {
          const t = GGML_TYPES.find((x) => x.name === type)!;
          return { name: `blk.${i}.w`, type, shape: [256, 4], data: new Uint8Array((1024 / t.blockSize) * t.typeSize).map((_, j) => (j * 13 + i) & 255) };
        }),
      }),
    ],
  ];
  if (sharedDir !== undefined) {
    for (const f of ['empty-v3.gguf', 'synthetic-align64.gguf', 'tinystories656k-q8_0.gguf']) {
      try {
        files.push([`real/${f}`, new Uint8Array(readFileSync(join(sharedDir, 'fixtures/real', f)))]);
      } catch {
        // a missing fixture only narrows the corpus
      }
    }
  }
  return files.map(([name, bytes]) => ({ name, bytes, ...fieldsOf(bytes) }));
}

const INTERESTING_64 = [0n, 1n, 2n, 7n, 31n, 32n, 63n, 64n, 255n, 256n, 4096n, 65535n, 2n ** 31n - 1n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 62n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 64n - 32n];

function writeField(bytes: Uint8Array, le: boolean, f: Field, value: bigint): void {
  if (f.at + f.width > bytes.length) return;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (f.width === 8) view.setBigUint64(f.at, BigInt.asUintN(64, value), le);
  else if (f.width === 4) view.setUint32(f.at, Number(BigInt.asUintN(32, value)), le);
  else view.setUint8(f.at, Number(BigInt.asUintN(8, value)));
}

/** One mutation of `bytes` (which it may replace); returns the new bytes and a label. */
function mutate(bytes: Uint8Array, seed: Seed, seeds: Seed[], next: () => number): [Uint8Array, string] {
  const pick = <T>(xs: readonly T[]): T => xs[next() % xs.length]!;
  const fieldOf = (...kinds: Field['kind'][]) => {
    const fs = seed.fields.filter((f) => kinds.includes(f.kind));
    return fs.length ? pick(fs) : undefined;
  };
  const size = BigInt(bytes.length);
  const kind = next() % 12;
  switch (kind) {
    case 0:
    case 1: {
      // Bit flips, mostly in the header.
      const n = 1 + (next() % 8);
      for (let i = 0; i < n; i++) {
        const at = next() % 5 ? next() % Math.max(1, seed.headerEnd) : next() % bytes.length;
        if (at < bytes.length) bytes[at]! ^= 1 << (next() % 8);
      }
      return [bytes, 'bitflip'];
    }
    case 2: {
      const f = fieldOf('count', 'length');
      if (f) writeField(bytes, seed.littleEndian, f, pick([...INTERESTING_64, size, size - 1n, size + 1n, BigInt(next())]));
      return [bytes, 'count/length'];
    }
    case 3: {
      const f = fieldOf('type');
      if (f) writeField(bytes, seed.littleEndian, f, BigInt(pick([0, 1, 9, 12, 13, 14, 30, 31, 39, 41, 42, 43, 44, 255, 0x7fffffff, 0xffffffff, next() % 64])));
      return [bytes, 'type'];
    }
    case 4: {
      const f = fieldOf('dims', 'dim');
      if (f) writeField(bytes, seed.littleEndian, f, f.kind === 'dims' ? BigInt(next() % 8) : pick([...INTERESTING_64, -1n, 0n, BigInt(next() % 1024)]));
      return [bytes, 'dims'];
    }
    case 5: {
      const f = fieldOf('offset');
      if (f) writeField(bytes, seed.littleEndian, f, pick([...INTERESTING_64, size, size - 32n, BigInt(next() % 4096) * 32n, BigInt(next())]));
      return [bytes, 'offset'];
    }
    case 6: {
      const f = fieldOf('alignment', 'value');
      if (f) writeField(bytes, seed.littleEndian, f, BigInt(pick([0, 1, 2, 3, 13, 16, 48, 64, 4096, 2 ** 31, 0xffffffff, next()])));
      return [bytes, 'alignment/value'];
    }
    case 7: {
      // Splice: the head of this file and the tail of another.
      const other = pick(seeds).bytes;
      const cut = next() % (bytes.length + 1);
      const from = next() % (other.length + 1);
      const out = new Uint8Array(cut + other.length - from);
      out.set(bytes.subarray(0, cut));
      out.set(other.subarray(from), cut);
      return [out, 'splice'];
    }
    case 8:
      return [bytes.slice(0, next() % (bytes.length + 1)), 'truncate'];
    case 9: {
      // Delete or insert a few bytes in the header, shifting everything after.
      const at = next() % Math.max(1, Math.min(bytes.length, seed.headerEnd));
      const n = 1 + (next() % 8);
      if (next() % 2) return [new Uint8Array([...bytes.subarray(0, at), ...bytes.subarray(at + n)]), 'delete'];
      return [new Uint8Array([...bytes.subarray(0, at), ...Array.from({ length: n }, () => next() & 255), ...bytes.subarray(at)]), 'insert'];
    }
    default: {
      // A random field gets a random interesting value, whatever its kind.
      if (seed.fields.length) writeField(bytes, seed.littleEndian, pick(seed.fields), pick(INTERESTING_64));
      return [bytes, 'field'];
    }
  }
}

/** Case `index` of run `seed`: a seed file with one to four mutations. */
export function makeCase(seeds: Seed[], seed: number, index: number): { bytes: Uint8Array; label: string } {
  const next = mulberry32((Math.imul(seed, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0);
  const base = seeds[next() % seeds.length]!;
  let bytes: Uint8Array = base.bytes.slice();
  const labels: string[] = [];
  const n = 1 + (next() % 4);
  for (let i = 0; i < n; i++) {
    const [out, label] = mutate(bytes, base, seeds, next);
    bytes = out;
    labels.push(label);
  }
  return { bytes, label: `${base.name}: ${labels.join(', ')}` };
}
