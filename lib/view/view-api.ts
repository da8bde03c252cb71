import { writeHyperparametersJson, writeSummaryJson } from '../file/summary-json.js';
import { canDequantize } from '../dequant/dequantize.js';
import type { GgufFile } from '../file/gguf-file.js';
import type { GgufTensor } from '../file/tensor.js';
import { layerMap, type LayerMap } from './layer-map.js';
import { arrayPage, metadataEntry, metadataKeys, metadataPage, type ArrayPage } from './metadata-api.js';
import { SORT_KEYS, TensorIndex } from './tensor-index.js';
import { DEFAULT_SAMPLE_LIMIT, samplePlan, tensorStats, type TensorStats } from './tensor-stats.js';
import { hasChatTemplates, renderSampleChat, tokenize, tokenizerOf } from './text-features.js';

/**
 * The viewer's JSON API over one file, with no transport: the server (server.ts) answers HTTP
 * requests with it, the static page (`gguf-mmap view --static`, static-page.ts) calls it in the
 * page, over a file opened there. See docs/api.md, "Viewer".
 */
export interface ViewApiOptions {
  /** What the page calls the model. */
  source: string;
  /** Values past which statistics come from a sample (default 16M). */
  sampleLimit?: number;
}

/** The JSON text answering `path` (with the query in `url`); HttpError for a request it refuses. */
export type ViewApi = (path: string, url: URL) => Promise<string>;

/** A refused request: the HTTP status and code the server answers with. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A whole number from the query within [0, max], or `fallback`. */
function intParam(url: URL, name: string, fallback: number, max: number): number {
  const text = url.searchParams.get(name);
  if (text === null || text === '') return fallback;
  if (!/^\d{1,15}$/.test(text)) throw new HttpError(400, 'BAD_REQUEST', `${name} must be a whole number`);
  return Math.min(max, Number(text));
}

/**
 * Serves `file` read-only to a page on 127.0.0.1: the page's assets and a JSON API (see
 * docs/api.md). Every request needs the Host this server is reached by (403 otherwise) and the
 * token, in the query or in the cookie the page's first load sets (401 otherwise).
 */
/** The API over `file` (computed on first use and kept: the header does not change). */
export function createViewApi(file: GgufFile, options: ViewApiOptions): ViewApi {
  const sampleLimit = options.sampleLimit ?? DEFAULT_SAMPLE_LIMIT;
  const source = options.source;
  // Tensor bytes fetched on demand (a URL, or a Blob in the static page): the page says so.
  const remote = file.mode === 'remote' || file.mode === 'blob';

  let summaryJson: string | undefined;
  let index: TensorIndex | undefined;
  let layers: LayerMap | undefined;
  const stats = new Map<number, Promise<TensorStats>>();
  // One statistics job at a time: each holds up to sampleLimit floats (64 MiB at the default).
  let statsQueue: Promise<unknown> = Promise.resolve();

  const tensorIndex = () => (index ??= new TensorIndex(file));
  let tokenizerState: ReturnType<typeof tokenizerOf> | undefined;
  const textTokenizer = () => (tokenizerState ??= tokenizerOf(file));

  function summary(): string {
    if (summaryJson !== undefined) return summaryJson;
    const pieces: string[] = [];
    // What `inspect --json` prints, less the metadata and the tensor table (paged by their own endpoints).
    pieces.push(`{"version":${file.version},"endian":"${file.endian}","alignment":${file.alignment},"dataOffset":${file.dataOffset},"fileSize":${file.fileSize}`);
    if (file.parts.length > 1) pieces.push(`,"parts":${JSON.stringify(file.parts.map((p) => ({ path: p.path, size: p.size, dataOffset: p.dataOffset, tensorCount: p.tensorCount })))}`);
    writeSummaryJson(file, (chunk) => pieces.push(chunk));
    writeHyperparametersJson(file, (chunk) => pieces.push(chunk));
    const text = textTokenizer();
    const features = { tokenizer: 'tokenizer' in text, ...('why' in text ? { tokenizerNote: text.why } : {}), chatTemplate: hasChatTemplates(file) };
    pieces.push(`,"view":${JSON.stringify({ source, mode: file.mode, remote, tensorCount: file.tensorCount, metadataCount: file.metadata.size, features, sampleLimit })}}`);
    return (summaryJson = pieces.join(''));
  }

  /** The tensor a request names: `index` (its place in file order) or `name` (any name, `.` and `..` too: a query value is not a path segment). */
  function tensorOf(url: URL): { i: number; tensor: GgufTensor } {
    const name = url.searchParams.get('name');
    let i: number;
    if (name !== null) {
      i = tensorIndex().find(name);
      if (i < 0) throw new HttpError(404, 'NOT_FOUND', `no tensor named ${JSON.stringify(name)}`);
    } else {
      i = intParam(url, 'index', -1, Number.MAX_SAFE_INTEGER);
      if (i < 0) throw new HttpError(400, 'BAD_REQUEST', 'a tensor is named by index or name');
      if (i >= tensorIndex().size) throw new HttpError(404, 'NOT_FOUND', `no tensor ${i} (the file has ${tensorIndex().size})`);
    }
    return { i, tensor: file.tensor(tensorIndex().row(i).name)! };
  }

  function tensorDetail(i: number, t: GgufTensor): object {
    const plan = samplePlan(t, sampleLimit);
    return {
      ...tensorIndex().row(i),
      nelements: t.nelements,
      fileOffset: t.fileOffset,
      byteRange: [t.fileOffset, t.fileOffset + t.nbytes],
      blockSize: t.ggmlType.blockSize,
      typeSize: t.ggmlType.typeSize,
      rows: t.rows,
      rowLength: t.rowLength,
      canDequantize: canDequantize(t.type),
      remote,
      // What the statistics read: the whole tensor, or the sampled rows.
      statsBytes: plan === undefined ? t.nbytes : plan.sample.runStarts.length * plan.sample.rowsPerRun * (t.nbytes / plan.rows),
      statsSampled: plan !== undefined,
    };
  }

  function statsOf(i: number, tensor: GgufTensor): Promise<TensorStats> {
    let job = stats.get(i);
    if (job === undefined) {
      job = statsQueue.then(() => tensorStats(tensor, sampleLimit));
      statsQueue = job.catch(() => undefined);
      // A failure (a network error) is not kept: opening the tensor again tries again.
      job.catch(() => stats.delete(i));
      stats.set(i, job);
    }
    return job;
  }

  /** The metadata key a request names: `index` (its place in file order; any key, however long) or `key`. */
  function metadataIndexOf(url: URL): number {
    const keys = metadataKeys(file);
    const key = url.searchParams.get('key');
    if (key !== null) {
      const index = keys.indexOf(key);
      if (index < 0) throw new HttpError(404, 'NOT_FOUND', `no key ${JSON.stringify(key)}`);
      return index;
    }
    const index = intParam(url, 'index', -1, Number.MAX_SAFE_INTEGER);
    if (index < 0) throw new HttpError(400, 'BAD_REQUEST', 'a key is named by index or key');
    if (index >= keys.length) throw new HttpError(404, 'NOT_FOUND', `no key ${index} (the file has ${keys.length})`);
    return index;
  }

  async function api(path: string, url: URL): Promise<string> {
    if (path === '/api/summary') return summary();
    if (path === '/api/tensors') {
      const sort = url.searchParams.get('sort') || 'index';
      if (!SORT_KEYS.includes(sort.replace(/^-/, '') as never)) throw new HttpError(400, 'BAD_REQUEST', `sort is one of ${SORT_KEYS.join(', ')} (a leading - for descending)`);
      return JSON.stringify(tensorIndex().query(url.searchParams.get('filter') ?? '', sort, intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER), intParam(url, 'limit', 100, 1000)));
    }
    if (path === '/api/tensor') {
      const { i, tensor } = tensorOf(url);
      return JSON.stringify(tensorDetail(i, tensor));
    }
    if (path === '/api/tensor/stats') {
      const { i, tensor: t } = tensorOf(url);
      const result = await statsOf(i, t);
      return JSON.stringify({ tensor: t.name, type: t.type, ...result });
    }
    if (path === '/api/layers') return JSON.stringify((layers ??= layerMap(tensorIndex())));
    if (path === '/api/metadata') return metadataPage(file, intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER));
    if (path === '/api/metadata/entry') {
      const index = metadataIndexOf(url);
      return JSON.stringify(metadataEntry(file, index));
    }
    if (path === '/api/metadata/array') {
      const index = metadataIndexOf(url);
      const offset = intParam(url, 'offset', 0, Number.MAX_SAFE_INTEGER);
      // Where a STRING array's walk resumes: element `from` (default: offset) at byte `at`.
      const cursor = url.searchParams.has('at') ? { from: intParam(url, 'from', offset, offset), at: intParam(url, 'at', 0, Number.MAX_SAFE_INTEGER) } : undefined;
      let page: ArrayPage | undefined;
      try {
        page = arrayPage(file, index, url.searchParams.get('filter') ?? '', offset, intParam(url, 'limit', 100, 1000), cursor);
      } catch (error) {
        if (error instanceof RangeError) throw new HttpError(400, 'BAD_REQUEST', 'at is not the position of an element (give the nextAt of the answer before)');
        throw error;
      }
      if (page === undefined) throw new HttpError(404, 'NOT_FOUND', `key ${index} is not an array`);
      return JSON.stringify(page);
    }
    if (path === '/api/tokenize') {
      const state = textTokenizer();
      if ('why' in state) throw new HttpError(501, 'NOT_AVAILABLE', state.why);
      const text = url.searchParams.get('text') ?? '';
      if (text.length > 100_000) throw new HttpError(400, 'BAD_REQUEST', 'text is limited to 100,000 characters');
      return JSON.stringify(tokenize(state.tokenizer, text, url.searchParams.get('special') === '1'));
    }
    if (path === '/api/chat') {
      if (!hasChatTemplates(file)) throw new HttpError(501, 'NOT_AVAILABLE', 'this file has no chat template (tokenizer.chat_template)');
      return JSON.stringify(renderSampleChat(file));
    }
    throw new HttpError(404, 'NOT_FOUND', 'no such endpoint');
  }

  return api;
}
