/**
 * The browser build (package.json `exports`, conditions `browser` and `worker`): what works with no
 * file system and no addon, over files given as bytes (parseGguf), a Blob or File (openGgufBlob)
 * or a URL (openGgufRemote). The same objects as the Node build's, with the features that need
 * Node left out of the types: mapping (openGguf, residency, lock, prefetch, verify), the cache
 * (pullModel), the writers and editors, hashing, the viewer's server. Node built-ins are reached
 * through `#platform/*` only (lib/platform/README.md), so a bundler needs no shims.
 */
import { GgufFile as NodeGgufFile, parseGguf as nodeParseGguf, type OpenOptions } from './file/gguf-file.js';
import type { GgufTensor as NodeGgufTensor } from './file/tensor.js';
import { openGgufBlob as nodeOpenGgufBlob, type OpenBlobOptions } from './file/open-blob.js';
import { openGgufRemote as nodeOpenGgufRemote, type OpenRemoteOptions } from './remote/open-remote.js';
import { estimateMemory as nodeEstimateMemory, fitGpuLayers as nodeFitGpuLayers, largestContext as nodeLargestContext, type MemoryEstimate } from './estimate/estimate.js';
import type { EstimateOptions } from './estimate/options.js';

export * from './portable.js';

/** A tensor of a file opened in a page: GgufTensor less sha256() (Web Crypto hashes asynchronously only). */
export interface GgufTensor extends Omit<NodeGgufTensor, 'sha256' | 'asRowsOf'> {
  asRowsOf(rowLength: number): GgufTensor;
}

/** What needs a mapped file or the disk: not in the browser build. */
type NodeOnly = 'residency' | 'advise' | 'lock' | 'unlock' | 'prefetch' | 'verify' | 'hugePages' | 'sharedArrayBuffers' | 'partLayouts' | 'partSources';

/** An opened GGUF file in a page: GgufFile less what needs a mapping (see docs/api.md, "In a web page"). */
export interface GgufFile extends Omit<NodeGgufFile, NodeOnly | 'tensor' | 'tensors' | 'mode'> {
  readonly tensors: readonly GgufTensor[];
  tensor(name: string): GgufTensor | undefined;
  /** 'memory' (parseGguf), 'remote' (openGgufRemote) or 'blob' (openGgufBlob). */
  readonly mode: 'memory' | 'remote' | 'blob';
}
/** The class, for `instanceof GgufFile`; files are made by parseGguf, openGgufBlob and openGgufRemote. */
export const GgufFile = NodeGgufFile as unknown as abstract new (...args: never[]) => GgufFile;

/** Parses a GGUF file held in memory; the tensors view `bytes` (see the Node build's parseGguf). */
export const parseGguf = nodeParseGguf as (bytes: ArrayBuffer | ArrayBufferView, options?: Pick<OpenOptions, 'limits'> & { split?: false }) => GgufFile;
/** Opens a File or Blob: the header from blob.slice()s, tensor bytes on demand (see openGgufBlob in docs/api.md). */
export const openGgufBlob = nodeOpenGgufBlob as (blob: Blob | readonly Blob[], options?: OpenBlobOptions) => Promise<GgufFile>;
/** Reads a GGUF header over HTTP(S) with range requests: a URL or `hf:ORG/REPO/PATH[@REVISION]`. */
export const openGgufRemote = nodeOpenGgufRemote as (uri: string, options?: OpenRemoteOptions) => Promise<GgufFile>;
/** What the model needs to run, from the header alone (see estimateMemory in docs/api.md). */
export const estimateMemory = nodeEstimateMemory as (file: GgufFile, options?: EstimateOptions) => MemoryEstimate;
/** The largest context that fits in `bytes` (see largestContext in docs/api.md). */
export const largestContext = nodeLargestContext as (file: GgufFile, bytes: number, options?: Omit<EstimateOptions, 'contextSize'> & { beyondTrained?: boolean }) => number;
/** The most layers whose GPU buffers fit in `bytes` (see fitGpuLayers in docs/api.md). */
export const fitGpuLayers = nodeFitGpuLayers as (file: GgufFile, bytes: number, options: Omit<EstimateOptions, 'gpuLayers'> & { gpu: 'cuda' }) => number;
