import type { GgufFile } from '../file/gguf-file.js';
import type { GgufArray, GgufValue } from '../file/metadata.js';

/** A metadata value as JSON can carry it: 64-bit integers and non-finite floats as strings. */
export type JsonValue = string | number | boolean | JsonValue[];

export interface MetadataEntry {
  /** Position in file order: how /api/metadata/array names the array (any key works so). */
  index: number;
  /** The key (cut past MAX_KEY characters, `keyTruncated` says so). */
  key: string;
  keyTruncated?: boolean;
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
const MAX_KEY = 4096;
const PREVIEW = 8;
const MAX_PAGE = 1000;
/**
 * A page of /api/metadata holds entries up to this many bytes of JSON (at least one entry; one
 * entry is at most about 1.6 MB: a cut string of escapes): a header of any size is paged.
 */
export const METADATA_PAGE_BYTES = 1024 * 1024;
/**
 * Elements one /api/metadata/array request looks at, at most: searching a 100M-element array
 * answers in slices (each one continues where the last stopped), so no request holds the server
 * for long.
 */
export const ARRAY_SCAN_BUDGET = 1 << 18;

/** One value as JSON: bigints as decimal strings, NaN/±Infinity by name, nested arrays by their length. */
export function jsonValue(value: GgufValue | undefined): JsonValue {
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value === undefined) return '';
  return Array.from(value as ArrayLike<GgufValue>, (v) => jsonValue(v));
}

/** The file's keys in file order (made once per file). */
const keyLists = new WeakMap<GgufFile, string[]>();
export function metadataKeys(file: GgufFile): string[] {
  let keys = keyLists.get(file);
  if (keys === undefined) keyLists.set(file, (keys = [...file.metadata.keys()]));
  return keys;
}

/** The entry of key `index`: scalars in full (cut past MAX_STRING), arrays as a preview. */
export function metadataEntry(file: GgufFile, index: number): MetadataEntry {
  const fullKey = metadataKeys(file)[index]!;
  const info = file.metadata.info(fullKey)!;
  const key = fullKey.length > MAX_KEY ? fullKey.slice(0, MAX_KEY) : fullKey;
  const head = { index, key, ...(key.length < fullKey.length ? { keyTruncated: true } : {}), type: info.type };
  if (info.arrayType === undefined) {
    let value = jsonValue(file.metadata.get(fullKey));
    let truncated = false;
    if (typeof value === 'string' && value.length > MAX_STRING) {
      value = value.slice(0, MAX_STRING);
      truncated = true;
    }
    return { ...head, value, ...(truncated ? { truncated } : {}) };
  }
  const array = file.metadata.array(fullKey)!;
  const preview: JsonValue[] = [];
  for (let i = 0; i < Math.min(PREVIEW, info.length!); i++) preview.push(previewValue(array.at(i), info.arrayType));
  return { ...head, arrayType: info.arrayType, length: info.length!, preview };
}

/**
 * Entries from key `offset` on, as many as fit in METADATA_PAGE_BYTES of JSON (at least one), as
 * the JSON text of `{ total, offset, next, entries }`; `next` is the offset of the next page, or
 * null after the last.
 */
export function metadataPage(file: GgufFile, offset: number): string {
  const total = metadataKeys(file).length;
  const parts: string[] = [];
  let bytes = 0;
  let i = offset;
  for (; i < total; i++) {
    const json = JSON.stringify(metadataEntry(file, i));
    const size = utf8Length(json) + 1;
    if (parts.length > 0 && bytes + size > METADATA_PAGE_BYTES) break;
    parts.push(json);
    bytes += size;
  }
  return `{"total":${total},"offset":${Math.min(offset, total)},"next":${i < total ? i : null},"entries":[${parts.join(',')}]}`;
}

function previewValue(value: GgufValue | undefined, type: string): JsonValue {
  if (type === 'ARRAY') return `[${(value as ArrayLike<unknown>).length} items]`;
  const v = jsonValue(value);
  return typeof v === 'string' && v.length > 200 ? v.slice(0, 200) + '…' : v;
}

export interface ArrayPage {
  index: number;
  key: string;
  arrayType: string;
  length: number;
  offset: number;
  /** Elements from `offset` on whose text contains the filter (all of them without one), at most `limit`. */
  items: { index: number; value: JsonValue }[];
  /**
   * The element after the last one looked at, or null at the array's end: the next page's
   * `offset` (or, while still walking towards `offset`, its `from`); with a STRING array, `nextAt`
   * is that element's position, the next request's `at`.
   */
  next: number | null;
  nextAt: number | null;
}

const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * Walks a STRING array's elements by their length fields, from element `index` at byte `at` of
 * the array's data: a position found once is handed back to the page (nextAt), so the next slice
 * starts there without walking from the first element again.
 */
class StringWalk {
  private readonly view: DataView;
  private readonly width: number;
  private readonly le: boolean;
  constructor(
    private readonly bytes: Uint8Array,
    wideCounts: boolean,
    littleEndian: boolean,
    public at: number,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.width = wideCounts ? 8 : 4;
    this.le = littleEndian;
  }
  private length(): number {
    if (this.at + this.width > this.bytes.length) throw new RangeError('a string past the array');
    return this.width === 8 ? Number(this.view.getBigUint64(this.at, this.le)) : this.view.getUint32(this.at, this.le);
  }
  skip(): void {
    this.at += this.width + this.length();
  }
  read(): string {
    const n = this.length();
    const start = this.at + this.width;
    if (start + n > this.bytes.length) throw new RangeError('a string past the array');
    this.at = start + n;
    return utf8.decode(this.bytes.subarray(start, start + n));
  }
}

/**
 * Elements of array `index` (its place among the keys) from `offset` on, those whose text contains
 * `filter` (case-insensitive), at most `limit`; looking at ARRAY_SCAN_BUDGET elements at most, so
 * a search answers in slices (`next`, `nextAt`). A STRING array is walked by its length fields
 * from its first element, or from element `cursor.from` at byte `cursor.at` of its data (a
 * previous answer's next and nextAt). Undefined when the key is not an array.
 */
export function arrayPage(file: GgufFile, index: number, filter: string, offset: number, limit: number, cursor?: { from: number; at: number }): ArrayPage | undefined {
  const key = metadataKeys(file)[index];
  if (key === undefined) return undefined;
  const info = file.metadata.info(key)!;
  if (info.arrayType === undefined) return undefined;
  const array = file.metadata.array(key)!;
  const length = info.length!;
  const take = Math.min(MAX_PAGE, limit);
  const items: ArrayPage['items'] = [];
  const needle = filter.toLowerCase();
  const type = info.arrayType;
  const walk = type === 'STRING' ? stringWalk(array, cursor?.at) : undefined;
  // Any other type is read at `offset` itself.
  let i = walk === undefined ? Math.min(offset, length) : Math.min(cursor?.from ?? 0, length);
  let looked = 0;
  for (; i < length && looked < ARRAY_SCAN_BUDGET && items.length < take; i++, looked++) {
    if (i < offset) {
      walk!.skip();
      continue;
    }
    const value = walk !== undefined ? walk.read() : array.at(i);
    if (needle === '' || (type !== 'ARRAY' && String(jsonValue(value)).toLowerCase().includes(needle))) items.push({ index: i, value: previewValue(value, type) });
  }
  const more = i < length;
  return { index, key, arrayType: type, length, offset, items, next: more ? i : null, nextAt: more && walk !== undefined ? walk.at : null };
}

function stringWalk(array: GgufArray, at: number | undefined): StringWalk {
  const raw = array.rawBytes();
  return new StringWalk(raw.bytes, raw.wideCounts, raw.littleEndian, Math.min(at ?? 0, raw.bytes.length));
}

/** The UTF-8 length of `text` (Buffer.byteLength without Buffer: the static page runs this too). */
function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1; // 2 bytes for one unit
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a surrogate pair: 4 bytes for two units
      i++;
    } else n += 2; // 3 bytes (a lone surrogate too: U+FFFD)
  }
  return n;
}
