import type { GgufFile } from '../file/gguf-file.js';
import type { GgufValue } from '../file/metadata.js';

/** A metadata value as JSON can carry it: 64-bit integers and non-finite floats as strings. */
export type JsonValue = string | number | boolean | JsonValue[];

export interface MetadataEntry {
  key: string;
  type: string;
  /** Scalars: the value (a string longer than MAX_STRING is cut, `truncated` says so). */
  value?: JsonValue;
  truncated?: boolean;
  /** Arrays: element type, length and the first elements. */
  arrayType?: string;
  length?: number;
  preview?: JsonValue[];
}

// Strings longer than this (a chat template is a few KiB; a file may hold megabytes) are cut in
// the list; the page says so.
const MAX_STRING = 256 * 1024;
const PREVIEW = 8;
const MAX_PAGE = 1000;

/** One value as JSON: bigints as decimal strings, NaN/±Infinity by name, nested arrays by their length. */
export function jsonValue(value: GgufValue | undefined): JsonValue {
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value === undefined) return '';
  return Array.from(value as ArrayLike<GgufValue>, (v) => jsonValue(v));
}

/** Every key in file order, with its type; scalars in full (cut past MAX_STRING), arrays as a preview. */
export function metadataEntries(file: GgufFile): MetadataEntry[] {
  const entries: MetadataEntry[] = [];
  for (const key of file.metadata.keys()) {
    const info = file.metadata.info(key)!;
    if (info.arrayType === undefined) {
      let value = jsonValue(file.metadata.get(key));
      let truncated = false;
      if (typeof value === 'string' && value.length > MAX_STRING) {
        value = value.slice(0, MAX_STRING);
        truncated = true;
      }
      entries.push({ key, type: info.type, value, ...(truncated ? { truncated } : {}) });
      continue;
    }
    const array = file.metadata.array(key)!;
    const preview: JsonValue[] = [];
    for (let i = 0; i < Math.min(PREVIEW, info.length!); i++) preview.push(previewValue(array.at(i), info.arrayType));
    entries.push({ key, type: info.type, arrayType: info.arrayType, length: info.length!, preview });
  }
  return entries;
}

function previewValue(value: GgufValue | undefined, type: string): JsonValue {
  if (type === 'ARRAY') return `[${(value as ArrayLike<unknown>).length} items]`;
  const v = jsonValue(value);
  return typeof v === 'string' && v.length > 200 ? v.slice(0, 200) + '…' : v;
}

/**
 * Elements [offset, offset + limit) of the array at `key` among those whose text contains
 * `filter` (case-insensitive), with their indices; undefined when `key` is not an array.
 */
export function arrayPage(
  file: GgufFile,
  key: string,
  filter: string,
  offset: number,
  limit: number,
): { key: string; arrayType: string; length: number; matched: number; offset: number; items: { index: number; value: JsonValue }[] } | undefined {
  const info = file.metadata.info(key);
  if (info?.arrayType === undefined) return undefined;
  const array = file.metadata.array(key)!;
  const take = Math.min(MAX_PAGE, limit);
  const items: { index: number; value: JsonValue }[] = [];
  const needle = filter.toLowerCase();
  let matched = 0;
  if (needle === '') {
    matched = info.length!;
    for (let i = offset; i < Math.min(info.length!, offset + take); i++) items.push({ index: i, value: previewValue(array.at(i), info.arrayType) });
  } else {
    let i = 0;
    for (const value of array.values()) {
      const text = info.arrayType === 'ARRAY' ? '' : String(jsonValue(value)).toLowerCase();
      if (text.includes(needle)) {
        if (matched >= offset && items.length < take) items.push({ index: i, value: previewValue(value, info.arrayType) });
        matched++;
      }
      i++;
    }
  }
  return { key, arrayType: info.arrayType, length: info.length!, matched, offset, items };
}
