import type { GgufFile } from '../file/gguf-file.js';

/** Columns the tensor table sorts by; a leading '-' in a request means descending. */
export const SORT_KEYS = ['index', 'name', 'type', 'size', 'offset'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

/** One row of the tensor table as the API sends it. */
export interface TensorRow {
  index: number;
  name: string;
  type: string;
  shape: number[];
  nbytes: number;
  /** Offset within the data section of its part. */
  offset: number;
  part: number;
}

export interface TensorPage {
  /** Tensors in the model. */
  total: number;
  /** Tensors the filter matched. */
  matched: number;
  offset: number;
  rows: TensorRow[];
}

/**
 * The tensor table held as columns (names, lower-cased names, sizes, offsets, types), so that
 * filtering, sorting and paging a million tensors is a scan of arrays, not of objects. A sort
 * order is computed once per column and kept; the last filter's matches are kept, so scrolling
 * through them costs a slice.
 */
export class TensorIndex {
  private readonly names: string[];
  private readonly lowerNames: string[];
  private readonly types: string[];
  private readonly sizes: Float64Array;
  private readonly offsets: Float64Array;
  private readonly parts: Uint32Array;
  private readonly orders = new Map<SortKey, Uint32Array>();
  private lastQuery: { filter: string; sort: string; matches: Uint32Array } | undefined;

  constructor(private readonly file: GgufFile) {
    const tensors = file.tensors;
    const n = tensors.length;
    this.names = new Array<string>(n);
    this.lowerNames = new Array<string>(n);
    this.types = new Array<string>(n);
    this.sizes = new Float64Array(n);
    this.offsets = new Float64Array(n);
    this.parts = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const t = tensors[i]!;
      this.names[i] = t.name;
      this.lowerNames[i] = t.name.toLowerCase();
      this.types[i] = t.type;
      this.sizes[i] = t.nbytes;
      this.offsets[i] = t.offset;
      this.parts[i] = t.part;
    }
  }

  get size(): number {
    return this.names.length;
  }

  /** Tensor indices in `key` order (ascending; ties in file order). */
  private order(key: SortKey): Uint32Array {
    let order = this.orders.get(key);
    if (order !== undefined) return order;
    const n = this.names.length;
    order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    if (key !== 'index') {
      const compare =
        key === 'name'
          ? (a: number, b: number) => (this.names[a]! < this.names[b]! ? -1 : this.names[a]! > this.names[b]! ? 1 : a - b)
          : key === 'type'
            ? (a: number, b: number) => (this.types[a]! < this.types[b]! ? -1 : this.types[a]! > this.types[b]! ? 1 : a - b)
            : key === 'size'
              ? (a: number, b: number) => this.sizes[a]! - this.sizes[b]! || a - b
              : (a: number, b: number) => this.parts[a]! - this.parts[b]! || this.offsets[a]! - this.offsets[b]! || a - b;
      order.sort(compare);
    }
    this.orders.set(key, order);
    return order;
  }

  /**
   * The tensors whose name contains `filter` (case-insensitive), in `sort` order ('name',
   * '-size', ...), rows [offset, offset + limit).
   */
  query(filter: string, sort: string, offset: number, limit: number): TensorPage {
    const matches = this.matches(filter, sort);
    const rows: TensorRow[] = [];
    const end = Math.min(matches.length, offset + limit);
    for (let k = offset; k < end; k++) rows.push(this.row(matches[k]!));
    return { total: this.names.length, matched: matches.length, offset, rows };
  }

  private matches(filter: string, sort: string): Uint32Array {
    if (this.lastQuery !== undefined && this.lastQuery.filter === filter && this.lastQuery.sort === sort) return this.lastQuery.matches;
    const descending = sort.startsWith('-');
    const key = (descending ? sort.slice(1) : sort) as SortKey;
    const order = this.order(key);
    const needle = filter.toLowerCase();
    let matches: Uint32Array;
    if (needle === '') {
      matches = order;
    } else {
      const found = new Uint32Array(order.length);
      let count = 0;
      const lower = this.lowerNames;
      for (let k = 0; k < order.length; k++) {
        const i = order[k]!;
        if (lower[i]!.includes(needle)) found[count++] = i;
      }
      matches = found.subarray(0, count);
    }
    if (descending) matches = matches.slice().reverse();
    this.lastQuery = { filter, sort, matches };
    return matches;
  }

  row(i: number): TensorRow {
    const t = this.file.tensors[i]!;
    return { index: i, name: t.name, type: t.type, shape: [...t.shape], nbytes: t.nbytes, offset: t.offset, part: t.part };
  }
}
