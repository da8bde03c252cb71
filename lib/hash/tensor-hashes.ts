// Hashes of a model's tensor data, as llama.cpp's llama-gguf-hash computes and prints them, so
// that manifests can be exchanged with it both ways: per tensor its data bytes (no padding, name,
// shape or metadata), then the model: every tensor's bytes joined in header order. Metadata never
// counts, so a model with edited metadata, or split into parts, hashes the same tensor by tensor.
import { createHash, type Hash } from 'node:crypto';
import type { GgufFile } from '../file/gguf-file.js';
import { createXxh64, type Xxh64 } from './xxh64.js';

/** The kinds, in the order llama-gguf-hash prints them. `uuid` has a model line only. */
export const HASH_KINDS = ['xxh64', 'sha1', 'sha256', 'uuid'] as const;
export type HashKind = (typeof HASH_KINDS)[number];

/** One line of a manifest: `kind`, hex `digest` (a UUID for uuid), and `name`: `FILE:TENSOR` or `FILE`. */
export interface HashLine {
  readonly kind: HashKind;
  readonly digest: string;
  readonly name: string;
}

export interface HashOptions {
  /** Kinds to compute (default ['xxh64']). */
  kinds?: readonly HashKind[];
  /** Per-tensor lines too (default true; llama-gguf-hash's --no-layer is false). */
  layers?: boolean;
  /** The file name the lines carry (default the first part's path): what was typed, for manifests. */
  name?: string;
  /** Called with bytes hashed so far and in all. */
  onProgress?: (done: number, total: number) => void;
}

// UUIDv5 namespace of llama.cpp's models: uuid5(NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp').
const UUID_NAMESPACE = Buffer.from('ef001206dadc5f6da15f3359e577d4e5', 'hex');

interface Hasher {
  update(bytes: Uint8Array): void;
  digest(): string;
}

function hasher(kind: Exclude<HashKind, 'uuid'>): Hasher {
  if (kind === 'xxh64') {
    const state: Xxh64 = createXxh64();
    return { update: (b) => void state.update(b), digest: () => state.digest() };
  }
  const hash: Hash = createHash(kind);
  return { update: (b) => void hash.update(b), digest: () => hash.digest('hex') };
}

/** SHA-1 over the namespace and the data, with the version (5) and variant bits set. */
function uuidHasher(): Hasher {
  const sha1 = createHash('sha1').update(UUID_NAMESPACE);
  return {
    update: (b) => void sha1.update(b),
    digest: () => {
      const u = sha1.digest().subarray(0, 16);
      u[6] = (u[6]! & 0x0f) | 0x50;
      u[8] = (u[8]! & 0x3f) | 0x80;
      const hex = u.toString('hex');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    },
  };
}

/**
 * The manifest lines of `file`'s tensor data: for each tensor in order its line per kind
 * (xxh64, sha1, sha256), then the model's lines (xxh64, sha1, sha256, uuid). Every kind is
 * computed in the same pass over the bytes. For a split model opened whole, the tensors of all
 * parts (as the unsplit model); opened `{ split: false }`, that part alone (as llama-gguf-hash).
 * Pages lost while reading are FILE_CHANGED.
 */
export function hashTensors(file: GgufFile, options: HashOptions = {}): HashLine[] {
  const { kinds, layers, name } = resolved(file, options);
  return hashPass(file, kinds, name, layers ? tensorKinds(kinds) : [], true, options.onProgress);
}

/** The options with their defaults: kinds in the tool's order. @internal */
export function resolved(file: GgufFile, options: HashOptions): { kinds: HashKind[]; layers: boolean; name: string } {
  return {
    kinds: HASH_KINDS.filter((k) => (options.kinds ?? ['xxh64']).includes(k)),
    layers: options.layers ?? true,
    name: options.name ?? file.parts[0]?.path ?? '(memory)',
  };
}

/** The kinds that have per-tensor lines (uuid has a model line only). @internal */
export function tensorKinds(kinds: readonly HashKind[]): Array<Exclude<HashKind, 'uuid'>> {
  return kinds.filter((k): k is Exclude<HashKind, 'uuid'> => k !== 'uuid');
}

/**
 * One pass over the bytes of tensors [first, end): their lines for `perTensor` kinds, and with
 * `model` the model's lines for `kinds` (over every tensor: first 0, end all). @internal
 */
export function hashPass(
  file: GgufFile,
  kinds: readonly HashKind[],
  name: string,
  perTensor: ReadonlyArray<Exclude<HashKind, 'uuid'>>,
  model: boolean,
  onProgress?: (done: number, total: number) => void,
  first = 0,
  end = file.tensors.length,
): HashLine[] {
  const perModel = model ? kinds.map((kind) => ({ kind, state: kind === 'uuid' ? uuidHasher() : hasher(kind) })) : [];
  const tensors = file.tensors.slice(first, end);
  const total = tensors.reduce((n, t) => n + t.nbytes, 0);
  const lines: HashLine[] = [];
  let done = 0;
  for (const tensor of tensors) {
    const states = perTensor.map((kind) => ({ kind, state: hasher(kind) }));
    for (const bytes of tensor.byteSlices()) {
      for (const { state } of states) state.update(bytes);
      for (const { state } of perModel) state.update(bytes);
      done += bytes.length;
      onProgress?.(done, total);
    }
    for (const { kind, state } of states) lines.push({ kind, digest: state.digest(), name: `${name}:${tensor.name}` });
  }
  for (const { kind, state } of perModel) lines.push({ kind, digest: state.digest(), name });
  return lines;
}

/** Lines as llama-gguf-hash prints them: the kind in 8 columns, two spaces, digest, two spaces, name. */
export function formatHashLine(line: HashLine, suffix = ''): string {
  return `${line.kind.padEnd(8)}  ${line.digest}  ${line.name}${suffix}`;
}
