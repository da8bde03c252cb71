import { GgufError } from '../errors.js';
import { GgufFile } from '../file/gguf-file.js';
import { partNameOf } from '../file/split.js';
import { headerLengthGuess, parseLayout, type ParseLimits } from '../format/parse.js';
import { splitPartName } from '../format/part-name.js';
import { bearer, hubAuthorization, hubEndpoint, parseHubUri, resolveUrl } from './hub.js';
import { eitherSignal, RangeClient, redactUrl, type RemoteOptions, type TransferStats } from './range-client.js';
import { RemoteSource } from './remote-source.js';

export interface OpenRemoteOptions extends RemoteOptions {
  /** Bounds on what the header may claim, as for openGguf. */
  limits?: ParseLimits;
  /** A part of a split model opens the whole set (default true), as for openGguf. */
  split?: boolean;
}

/**
 * The first request's size: a typical header (TinyLlama's is 1.9 MB, most 7B models' 1-4 MB) in
 * one round trip. A longer one takes one more request, sized by what the parser has seen.
 */
export const FIRST_REQUEST_BYTES = 4 << 20;
// Headers of the other parts of a split model (split keys and tensor infos only).
const PART_REQUEST_BYTES = 256 << 10;
// The most parts' headers fetched at once.
const PART_CONCURRENCY = 4;
// A header longer than this is HEADER_TOO_LARGE (it is held in memory).
const MAX_REMOTE_HEADER = 256 << 20;

/** Where `uri` is served from and the credentials for it. */
function target(uri: string, options: RemoteOptions): { url: string; authorization?: string; partUrl: (name: string, commit?: string) => string } {
  const hub = parseHubUri(uri);
  const url = hub === undefined ? uri : resolveUrl(hub);
  // A token goes to the Hub (or the mirror HF_ENDPOINT names) and to URLs given with { token };
  // hubToken() is read only for the Hub.
  const forHub = hub !== undefined || new URL(url).origin === new URL(hubEndpoint()).origin;
  const partUrl = (name: string, commit?: string) => {
    if (hub !== undefined) return resolveUrl({ ...hub, path: hub.path.replace(/[^/]*$/, name), revision: commit ?? hub.revision });
    const u = new URL(url);
    u.pathname = u.pathname.replace(/[^/]*$/, encodeURIComponent(name));
    return u.href;
  };
  return { url, authorization: forHub ? hubAuthorization(options.token) : bearer(options.token), partUrl };
}

/**
 * Reads a GGUF header over HTTP(S) with range requests: a URL, or `hf:ORG/REPO/PATH[@REVISION]`
 * for a file on the Hugging Face Hub (HF_ENDPOINT for a mirror). The file's metadata, tensors and
 * summary() are there at once, with the same checks and errors as a local file (mode 'remote');
 * tensor bytes are fetched on demand with `await tensor.fetchBytes()` or `dequantizeAsync()`.
 * A part of a split model opens the whole set, the other parts' headers fetched concurrently.
 */
export async function openGgufRemote(uri: string, options: OpenRemoteOptions = {}): Promise<GgufFile> {
  const { url, authorization, partUrl } = target(uri, options);
  const clientOptions = { ...options, authorization };
  const firstClient = new RangeClient(url, clientOptions);
  const first = await fetchHeader(firstClient, FIRST_REQUEST_BYTES, options.limits);
  const part = options.split === false ? undefined : partNameOf(new URL(url).pathname.split('/').pop() ?? '');
  if (part === undefined) return new GgufFile([{ source: first, path: redactUrl(url) }], options.limits, options.split === false ? undefined : 'named');
  // The other parts of a set on the Hub at the commit the first was read at: a branch that moves
  // meanwhile cannot mix two commits.
  const urls = Array.from({ length: part.count }, (_, i) => partUrl(splitPartName(part.prefix, i + 1, part.count), firstClient.commit));
  const sources: RemoteSource[] = new Array(part.count);
  sources[part.index - 1] = first;
  const todo = urls.map((u, i) => i).filter((i) => sources[i] === undefined);
  // The first part to fail ends the others' requests (and starts no more): the set cannot open.
  const stop = new AbortController();
  const signal = eitherSignal(options.signal, stop.signal);
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    for (let i = todo.shift(); i !== undefined && failure === undefined; i = todo.shift()) {
      try {
        sources[i] = await fetchHeader(new RangeClient(urls[i]!, clientOptions), PART_REQUEST_BYTES, options.limits, signal);
      } catch (error) {
        const missing = error instanceof GgufError && error.code === 'HTTP_ERROR' && / 404$/.test(error.message.split(' (')[0]!);
        failure ??= { error: missing ? new GgufError('SPLIT_PART_MISSING', `part ${i + 1} of the split model '${redactUrl(url)}' is missing (${(error as Error).message})`, 0) : error };
        stop.abort(failure.error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PART_CONCURRENCY, todo.length) }, worker));
  if (failure !== undefined) throw failure.error;
  return new GgufFile(sources.map((source, i) => ({ source, path: redactUrl(urls[i]!) })), options.limits);
}

/**
 * The header of the file `client` reads, in as few requests as the parser allows: `firstBytes`,
 * then (when it runs past them) as much more as the parser guesses the rest needs.
 */
async function fetchHeader(client: RangeClient, firstBytes: number, limits: ParseLimits | undefined, signal?: AbortSignal): Promise<RemoteSource> {
  let bytes = await client.read(0, firstBytes, signal);
  for (;;) {
    const size = client.size ?? bytes.byteLength;
    try {
      parseLayout(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), size, limits);
      return new RemoteSource(client, bytes);
    } catch (error) {
      const guess = headerLengthGuess(error);
      if (guess === undefined || bytes.byteLength >= size) throw error;
      if (bytes.byteLength >= MAX_REMOTE_HEADER) {
        throw new GgufError('HEADER_TOO_LARGE', `the header is longer than ${MAX_REMOTE_HEADER} bytes, the most read over HTTP`, bytes.byteLength);
      }
      // An eighth more than guessed, so that a guess a little short does not cost a third request.
      const want = Math.min(size, MAX_REMOTE_HEADER, Math.max(guess + (guess >> 3) + 65536, bytes.byteLength * 2));
      const more = await client.read(bytes.byteLength, want - bytes.byteLength, signal);
      const grown = new Uint8Array(bytes.byteLength + more.byteLength);
      grown.set(bytes);
      grown.set(more, bytes.byteLength);
      bytes = grown;
    }
  }
}

/** The requests and bytes of the file's range reads so far (of every part), for benchmarks and tests. */
export function remoteStats(file: GgufFile): TransferStats {
  const stats = { requests: 0, bytes: 0 };
  for (const source of file.partSources()) {
    if (source instanceof RemoteSource) {
      stats.requests += source.client.stats.requests;
      stats.bytes += source.client.stats.bytes;
    }
  }
  return stats;
}
