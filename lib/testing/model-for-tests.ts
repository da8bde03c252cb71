import { statSync } from 'node:fs';
import { GgufError } from '../errors.js';
import { pullModel, type PullOptions } from '../cache/pull.js';

export interface TestModel {
  /** The model's path in the Hugging Face cache (mapped by openGguf), or undefined when it cannot be had. */
  readonly path: string | undefined;
  /** Why not, for the test runner's skip message: "skipped: ... not cached and offline (...)". */
  readonly skip: string | undefined;
}

export interface TestModelOptions extends PullOptions {
  /** Download it when it is not cached (default true); false looks in the cache only. */
  download?: boolean;
  /**
   * A local file to use instead (a model the suite already has: `{ path: process.env.MY_MODEL }`);
   * undefined or '' asks the cache and the Hub. A path that names no file throws, naming it.
   */
  path?: string;
  /**
   * Turn a skip into a failure (CI, where the model must be there): throws with the skip's
   * reason. Default: GGUF_MMAP_REQUIRE_TEST_MODELS=1.
   */
  required?: boolean;
}

// Why a model cannot be had here: no network, not cached offline, the Hub refusing.
const UNAVAILABLE = new Set(['NETWORK_ERROR', 'NOT_CACHED', 'HTTP_ERROR', 'BAD_RESPONSE']);

/**
 * A model for a test suite: its cached path, downloaded once for every worker and process that
 * asks at once (they wait on one download, as pullModel locks it), or a reason to skip it when it
 * is neither cached nor downloadable (offline, HF_HUB_OFFLINE, a gated repository without a
 * token); a cached model is found with the Hub unreachable too (`hf:ORG/REPO:QUANT` included:
 * pullModel falls back to the cached snapshot). Other failures (a checksum mismatch, a full
 * disk, a bad URI) throw.
 */
export async function modelForTests(uri: string, options: TestModelOptions = {}): Promise<TestModel> {
  if (options.path !== undefined && options.path !== '') {
    const kind = statSync(options.path, { throwIfNoEntry: false });
    if (kind === undefined || !kind.isFile()) {
      throw new GgufError('FILE_NOT_FOUND', `modelForTests: the path given for ${uri} names ${kind === undefined ? 'no file' : 'something other than a file'}: ${options.path}`, 0);
    }
    return { path: options.path, skip: undefined };
  }
  const model = await fromCacheOrHub(uri, options);
  const required = options.required ?? process.env.GGUF_MMAP_REQUIRE_TEST_MODELS === '1';
  if (model.skip !== undefined && required) {
    throw new Error(`modelForTests: ${uri} is required (${options.required === undefined ? 'GGUF_MMAP_REQUIRE_TEST_MODELS=1' : '{ required: true }'}) but ${model.skip.replace(/^skipped: /, '')}`);
  }
  return model;
}

async function fromCacheOrHub(uri: string, options: TestModelOptions): Promise<TestModel> {
  try {
    const pulled = await pullModel(uri, options.download === false ? { ...options, offline: true } : options);
    return { path: pulled.path, skip: undefined };
  } catch (error) {
    // A file the Hub does not have (404: a mistyped URI) is the suite's mistake: it throws.
    if (error instanceof GgufError && UNAVAILABLE.has(error.code) && !/HTTP 404\b/.test(error.message)) {
      const why = error.code === 'NOT_CACHED' ? 'not cached and offline' : 'not cached and it cannot be downloaded';
      return { path: undefined, skip: `skipped: ${uri} is ${why} (${error.code}: ${error.message})` };
    }
    throw error;
  }
}
