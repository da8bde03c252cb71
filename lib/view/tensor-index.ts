import type { GgufFile } from '../file/gguf-file.js';
import { ggmlTypeById } from '../format/ggml-types.js';
import type { TensorTable } from '../format/tensor-table.js';

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
  private readonly tables: TensorTable[];
  /** Global index of each part's first tensor. */
  private readonly firsts: number[];
  private columns: { names: string[]; lowerNames: string[]; types: string[]; sizes: Float64Array; offsets: Float64Array; parts: Uint32Array } | undefined;
  private readonly orders = new Map<SortKey, Uint32Array>();
  private lastQuery: { filter: string; sort: string; matches: Uint32Array } | undefined;
  private readonly count: number;

  // From the parsed tensor tables, not file.tensors: no GgufTensor object is made for a row
  // (for a million tensors that alone takes seconds).
  constructor(file: GgufFile) {
    this.tables = file.partLayouts().map((p) => p.layout.tensors);
    this.firsts = [];
    let n = 0;
    for (const table of this.tables) {
      this.firsts.push(n);
      n += table.count;
    }
    this.count = n;
  }

  /**
   * The columns, decoded on first need (filtering, sorting, the layer map): about 0.7 s for a
   * million names, which the table's first page, in file order, does not wait for.
   */
  private cols() {
    if (this.columns !== undefined) return this.columns;
    const n = this.count;
    const c = { names: new Array<string>(n), lowerNames: new Array<string>(n), types: new Array<string>(n), sizes: new Float64Array(n), offsets: new Float64Array(n), parts: new Uint32Array(n) };
    const typeNames = new Map<number, string>();
    this.tables.forEach((table, part) => {
      const first = this.firsts[part]!;
      for (let j = 0; j < table.count; j++) {
        const i = first + j;
        const name = table.name(j);
        c.names[i] = name;
        c.lowerNames[i] = name.toLowerCase();
        c.types[i] = this.typeName(table.typeId(j), typeNames);
        c.sizes[i] = table.byteLength(j);
        c.offsets[i] = table.offset(j);
        c.parts[i] = part;
      }
    });
    return (this.columns = c);
  }

  private typeName(id: number, cache: Map<number, string>): string {
    let type = cache.get(id);
    if (type === undefined) cache.set(id, (type = ggmlTypeById(id)?.name ?? String(id)));
    return type;
  }

  get names(): readonly string[] {
    return this.cols().names;
  }
  get types(): readonly string[] {
    return this.cols().types;
  }
  get sizes(): Float64Array {
    return this.cols().sizes;
  }

  get size(): number {
    return this.count;
  }

  /** The index of the tensor named `name`, or -1. */
  find(name: string): number {
    for (let part = 0; part < this.tables.length; part++) {
      const j = this.tables[part]!.find(name);
      if (j >= 0) return this.firsts[part]! + j;
    }
    return -1;
  }

  /** Tensor indices in `key` order (ascending; ties in file order). */
  private order(key: SortKey): Uint32Array {
    let order = this.orders.get(key);
    if (order !== undefined) return order;
    const n = this.count;
    const { names, types, sizes, offsets, parts } = this.cols();
    order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    if (key !== 'index') {
      const compare =
        key === 'name'
          ? (a: number, b: number) => (names[a]! < names[b]! ? -1 : names[a]! > names[b]! ? 1 : a - b)
          : key === 'type'
            ? (a: number, b: number) => (types[a]! < types[b]! ? -1 : types[a]! > types[b]! ? 1 : a - b)
            : key === 'size'
              ? (a: number, b: number) => sizes[a]! - sizes[b]! || a - b
              : (a: number, b: number) => parts[a]! - parts[b]! || offsets[a]! - offsets[b]! || a - b;
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
    const rows: TensorRow[] = [];
    // File order without a filter: rows straight from the tables, no column decoded.
    if (filter === '' && sort === 'index') {
      for (let i = offset; i < Math.min(this.count, offset + limit); i++) rows.push(this.row(i));
      return { total: this.count, matched: this.count, offset, rows };
    }
    const matches = this.matches(filter, sort);
    const end = Math.min(matches.length, offset + limit);
    for (let k = offset; k < end; k++) rows.push(this.row(matches[k]!));
    return { total: this.count, matched: matches.length, offset, rows };
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
      const lower = this.cols().lowerNames;
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
    let part = this.tables.length - 1;
    while (this.firsts[part]! > i) part--;
    const r = this.tables[part]!.record(i - this.firsts[part]!);
    return { index: i, name: r.name, type: r.type.name, shape: [...r.shape], nbytes: r.nbytes, offset: r.offset, part };
  }
}
