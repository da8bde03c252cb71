import { createHash } from 'node:crypto';
import type { GgufFile } from './gguf-file.js';
import type { GgufValue } from './metadata.js';

/** JSON form of a metadata value: 64-bit integers as decimal strings, non-finite floats as names. */
export type JsonValue = string | number | boolean | JsonValue[];

export interface InspectJson {
  version: number;
  endian: 'little' | 'big';
  alignment: number;
  dataOffset: number;
  fileSize: number;
  metadata: Record<string, { type: string; arrayType?: string; value: JsonValue }>;
  tensors: Array<{ name: string; type: string; typeId: number; shape: number[]; offset: number; nbytes: number; sha256?: string }>;
}

/** `type` is the value's GGUF type: every UINT64/INT64 becomes a string, small ones too. */
export function toJsonValue(value: GgufValue, type?: string): JsonValue {
  if (typeof value === 'bigint' || type === 'UINT64' || type === 'INT64') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  return Array.from(value as ArrayLike<GgufValue>, (v) => toJsonValue(v));
}

/** The whole file as one JSON-ready object; `sha256` hashes each tensor's zero-copy bytes. */
export function inspectJson(g: GgufFile, options: { sha256?: boolean } = {}): InspectJson {
  const metadata: InspectJson['metadata'] = {};
  for (const key of g.metadata.keys()) {
    const info = g.metadata.info(key)!;
    const entry: InspectJson['metadata'][string] = { type: info.type, value: toJsonValue(g.metadata.get(key)!, info.type) };
    if (info.arrayType !== undefined) entry.arrayType = info.arrayType;
    metadata[key] = entry;
  }
  return {
    version: g.version,
    endian: g.endian,
    alignment: g.alignment,
    dataOffset: g.dataOffset,
    fileSize: g.fileSize,
    metadata,
    tensors: g.tensors.map((t) => ({
      name: t.name,
      type: t.type,
      typeId: t.typeId,
      shape: [...t.shape],
      offset: t.offset,
      nbytes: t.nbytes,
      ...(options.sha256 ? { sha256: createHash('sha256').update(t.bytes).digest('hex') } : {}),
    })),
  };
}

const SHOWN_ELEMENTS = 6;

/** A human-readable summary: header, metadata with long arrays shortened, tensor table, totals. */
export function inspectText(g: GgufFile, path: string): string {
  const lines: string[] = [];
  lines.push(`file       ${path}`);
  lines.push(`size       ${formatBytes(g.fileSize)} (${g.fileSize} bytes)`);
  lines.push(`format     GGUF v${g.version}, ${g.endian}-endian, alignment ${g.alignment}, data at byte ${g.dataOffset}`);
  lines.push('');
  lines.push(`metadata (${g.metadata.size})`);
  const keyWidth = Math.max(0, ...[...g.metadata.keys()].map((k) => k.length));
  for (const key of g.metadata.keys()) {
    const info = g.metadata.info(key)!;
    const shown =
      info.arrayType === undefined
        ? formatScalar(g.metadata.get(key)!, info.type)
        : formatArray(g.metadata.array(key)!, info.arrayType, info.length!);
    const type = info.arrayType === undefined ? info.type : `${info.arrayType}[${info.length}]`;
    lines.push(`  ${key.padEnd(keyWidth)}  ${type.padEnd(14)} ${shown}`);
  }
  lines.push('');
  lines.push(`tensors (${g.tensors.length})`);
  if (g.tensors.length > 0) {
    const nameWidth = Math.max(4, ...g.tensors.map((t) => t.name.length));
    lines.push(`  ${'name'.padEnd(nameWidth)}  ${'type'.padEnd(8)} ${'shape'.padEnd(20)} ${'size'.padStart(10)}  offset`);
    for (const t of g.tensors) {
      lines.push(`  ${t.name.padEnd(nameWidth)}  ${t.type.padEnd(8)} ${`[${t.shape.join(', ')}]`.padEnd(20)} ${formatBytes(t.nbytes).padStart(10)}  ${t.offset}`);
    }
  }
  const byType = new Map<string, { count: number; bytes: number }>();
  let elements = 0;
  let bytes = 0;
  for (const t of g.tensors) {
    const entry = byType.get(t.type) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += t.nbytes;
    byType.set(t.type, entry);
    elements += t.nelements;
    bytes += t.nbytes;
  }
  lines.push('');
  lines.push(`total      ${g.tensors.length} tensors, ${elements.toLocaleString('en-US')} elements, ${formatBytes(bytes)}`);
  if (byType.size > 0) {
    lines.push(`by type    ${[...byType].map(([type, e]) => `${type} x${e.count} (${formatBytes(e.bytes)})`).join(', ')}`);
  }
  return lines.join('\n') + '\n';
}

function formatScalar(v: GgufValue, type: string): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (type === 'FLOAT32' && typeof v === 'number') return String(shortestFloat32(v));
  return String(v);
}

/** The shortest decimal that reads back as the same float32 (1e-5, not 0.0000099999997). */
function shortestFloat32(v: number): number {
  if (!Number.isFinite(v)) return v;
  for (let digits = 1; digits < 9; digits++) {
    const candidate = Number(v.toPrecision(digits));
    if (Math.fround(candidate) === v) return candidate;
  }
  return v;
}

function formatArray(array: { at(i: number): GgufValue | undefined }, type: string, length: number): string {
  if (type === 'ARRAY') return `[${length} arrays]`;
  const head = Array.from({ length: Math.min(length, SHOWN_ELEMENTS) }, (_, i) => formatScalar(array.at(i)!, type));
  return `[${head.join(', ')}${length > SHOWN_ELEMENTS ? `, ... ${length - SHOWN_ELEMENTS} more` : ''}]`;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}
