// `gguf-mmap estimate`: what llama.cpp v0.5.0 allocates on the CPU for a model (estimateMemory),
// for the given settings and, unless --ctx is given, for a few context sizes up to the trained one;
// with --gpu or --gpu-layers, per device with one CUDA GPU, and with a GPU budget the most layers
// that fit at each context (fitGpuLayers).
import type { GgufFile } from '../file/gguf-file.js';
import { estimateMemory, fitGpuLayers, type MemoryEstimate } from '../estimate/estimate.js';
import { KV_CACHE_TYPES, MAX_CONTEXT_SIZE, type EstimateOptions, type KvCacheType } from '../estimate/options.js';

export class EstimateUsageError extends Error {}

export interface EstimateArgs {
  readonly model: string;
  readonly json: boolean;
  readonly contexts: readonly number[] | undefined;
  readonly options: EstimateOptions;
  /** --gpu SIZE: the GPU's memory budget in bytes (a CUDA GPU). */
  readonly gpuBudget?: number;
}

const UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, k: 1024, kib: 1024, kb: 1000, m: 2 ** 20, mib: 2 ** 20, mb: 1e6, g: 2 ** 30, gib: 2 ** 30, gb: 1e9, t: 2 ** 40, tib: 2 ** 40, tb: 1e12 };

/** A memory size: a number of bytes, or with a unit (24GiB, 24G: binary; 24GB: decimal; 8000MiB). */
export function parseSize(flag: string, value: string | undefined): number {
  const m = value === undefined ? null : /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = m === null ? undefined : UNITS[m[2]!.toLowerCase()];
  const bytes = m === null || unit === undefined ? NaN : Math.floor(Number(m[1]) * unit);
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new EstimateUsageError(`${flag} needs a memory size (24GiB, 8000MiB, 16G or bytes)`);
  return bytes;
}

function positive(flag: string, value: string | undefined, max = 2 ** 32 - 1): number {
  const n = Number(value);
  if (value === undefined || !Number.isSafeInteger(n) || n < 1) throw new EstimateUsageError(`${flag} needs a positive integer`);
  // llama.cpp keeps these in a uint32 (n_ctx padded to 256 within it)
  if (n > max) throw new EstimateUsageError(`${flag} must be at most ${max} (llama.cpp keeps it in a uint32)`);
  return n;
}

function cacheType(flag: string, value: string | undefined): KvCacheType {
  if (value === undefined || !(KV_CACHE_TYPES as readonly string[]).includes(value.toLowerCase())) {
    throw new EstimateUsageError(`${flag} needs one of ${KV_CACHE_TYPES.join(', ')}`);
  }
  return value.toLowerCase() as KvCacheType;
}

export function parseEstimateArgs(args: readonly string[]): EstimateArgs {
  const positional: string[] = [];
  const options: { -readonly [K in keyof EstimateOptions]: EstimateOptions[K] } = {};
  let json = false;
  let gpuBudget: number | undefined;
  let contexts: number[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('-')) positional.push(arg);
    else if (arg === '--json') json = true;
    else if (arg === '--ctx' || arg === '-c') (contexts ??= []).push(positive(arg, args[++i], MAX_CONTEXT_SIZE));
    else if (arg === '--parallel' || arg === '-np') options.sequences = positive(arg, args[++i]);
    else if (arg === '--ubatch' || arg === '-ub') options.ubatchSize = positive(arg, args[++i]);
    else if (arg === '--batch' || arg === '-b') options.batchSize = positive(arg, args[++i]);
    else if (arg === '--cache-type-k' || arg === '-ctk') options.typeK = cacheType(arg, args[++i]);
    else if (arg === '--cache-type-v' || arg === '-ctv') options.typeV = cacheType(arg, args[++i]);
    else if (arg === '--flash-attn' || arg === '-fa') options.flashAttention = true;
    else if (arg === '--no-flash-attn') options.flashAttention = false;
    else if (arg === '--kv-unified' || arg === '-kvu') options.unifiedKv = true;
    else if (arg === '--swa-full') options.swaFull = true;
    else if (arg === '--gpu') {
      gpuBudget = parseSize(arg, args[++i]);
      options.gpu = 'cuda';
    } else if (arg === '--gpu-layers' || arg === '-ngl') {
      const value = args[++i];
      const n = Number(value);
      if (value === undefined || !Number.isSafeInteger(n) || n < 0) throw new EstimateUsageError(`${arg} needs a number of layers (0 or more; 999: all)`);
      options.gpuLayers = n;
      options.gpu = 'cuda';
    } else throw new EstimateUsageError(`unknown option '${arg}'`);
  }
  if (positional.length !== 1) throw new EstimateUsageError('estimate takes one MODEL (a file, a URL or hf:ORG/REPO/PATH)');
  return { model: positional[0]!, json, contexts, options, ...(gpuBudget !== undefined ? { gpuBudget } : {}) };
}

/** 4096, 8192, ... doubling up to the trained context (which is always the last row). */
export function defaultContexts(trained: number | undefined): number[] {
  const top = trained !== undefined && trained > 0 ? trained : 4096;
  const sizes: number[] = [];
  for (let n = 4096; n < top; n *= 2) sizes.push(n);
  sizes.push(top);
  return sizes;
}

function mib(bytes: number): string {
  return (bytes / 1048576).toFixed(1);
}

/** An estimate row; with a GPU budget and no --gpu-layers, at the most layers that fit (`fits` says whether that count fits). */
export type EstimateRow = MemoryEstimate & { readonly fits?: boolean };

export function estimateRows(file: GgufFile, args: EstimateArgs): EstimateRow[] {
  const first = estimateMemory(file, { ...args.options, contextSize: args.contexts?.[0] ?? 0 });
  const contexts = args.contexts ?? defaultContexts(first.settings.contextSize);
  return contexts.map((contextSize) => {
    const options = { ...args.options, contextSize };
    if (args.gpuBudget === undefined) return estimateMemory(file, options);
    // a budget: the layers asked, or the most that fit
    const gpuLayers = args.options.gpuLayers ?? fitGpuLayers(file, args.gpuBudget, { ...options, gpu: 'cuda' });
    const e = estimateMemory(file, { ...options, gpuLayers });
    return { ...e, fits: e.gpuTotal! <= args.gpuBudget };
  });
}

/** Layers on the GPU as llama.cpp counts them (blocks, then the output layer), of all it can take. */
function layersOnGpu(r: MemoryEstimate, blocks: number): string {
  return `${Math.min(r.settings.gpuLayers, blocks + 1)}/${blocks + 1}`;
}

export function formatEstimate(rows: readonly EstimateRow[], json: boolean, gpuBudget?: number, blocks = 0): string {
  if (json) {
    return JSON.stringify(rows.map((r) => ({
      architecture: r.architecture,
      settings: r.settings,
      contextSize: r.contextSize,
      weights: r.weights,
      repacked: r.repacked,
      kvCache: r.kvCache,
      output: r.output,
      compute: r.compute,
      total: r.total,
      ...(r.buffers !== undefined ? { gpuLayers: r.settings.gpuLayers, buffers: r.buffers, outputBuffer: r.outputBuffer, gpuTotal: r.gpuTotal } : {}),
      ...(gpuBudget !== undefined ? { gpuBudget, fits: r.fits } : {}),
    })), null, 2) + '\n';
  }
  const first = rows[0]!;
  if (first.buffers !== undefined) return formatGpuEstimate(rows, gpuBudget, blocks);
  const s = first.settings;
  const lines = [
    `${first.architecture}: ${s.sequences} sequence${s.sequences === 1 ? '' : 's'}${s.unifiedKv ? ' (unified KV)' : ''}, ubatch ${s.ubatchSize}, K ${s.typeK}, V ${s.typeV}, flash attention ${s.flashAttention ? 'on' : 'off'} (MiB; weights: ${mib(first.repacked)} repacked for this CPU)`,
  ];
  const header = ['context', 'weights', 'KV cache', 'output', 'compute', 'total'];
  const table = rows.map((r) => [String(r.contextSize), mib(r.weights), mib(r.kvCache), mib(r.output), mib(r.compute), mib(r.total)]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const format = (cells: readonly string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  lines.push(format(header), ...table.map(format));
  lines.push(first.computeMethod === 'replayed'
    ? 'as llama.cpp v0.5.0 allocates it on the CPU (compute: its graph allocator replayed over the model\'s graph)'
    : 'as llama.cpp v0.5.0 allocates it on the CPU, but compute: estimated from the graph\'s largest moments (within 15% where checked)');
  return lines.join('\n') + '\n';
}

function formatGpuEstimate(rows: readonly EstimateRow[], gpuBudget: number | undefined, blocks: number): string {
  const first = rows[0]!;
  const s = first.settings;
  const lines = [
    `${first.architecture}: ${s.sequences} sequence${s.sequences === 1 ? '' : 's'}${s.unifiedKv ? ' (unified KV)' : ''}, ubatch ${s.ubatchSize}, K ${s.typeK}, V ${s.typeV}, flash attention ${s.flashAttention ? 'on' : 'off'}, one CUDA GPU${gpuBudget !== undefined ? ` of ${mib(gpuBudget)} MiB` : ''}; figures in MiB`,
  ];
  const header = ['context', 'layers', 'GPU weights', 'GPU KV', 'GPU compute', 'GPU total', 'pinned host', 'host'];
  if (gpuBudget !== undefined) header.push('fits');
  const table = rows.map((r) => {
    const b = r.buffers!;
    const sum = (name: 'CUDA_Host' | 'CPU') => b[name].weights + b[name].kvCache + b[name].compute + (r.outputBuffer === name ? r.output : 0);
    const cells = [String(r.contextSize), layersOnGpu(r, blocks), mib(b.CUDA0.weights), mib(b.CUDA0.kvCache), mib(b.CUDA0.compute), mib(r.gpuTotal!), mib(sum('CUDA_Host')), mib(sum('CPU'))];
    if (gpuBudget !== undefined) cells.push(r.fits === true ? 'yes' : 'no');
    return cells;
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const format = (cells: readonly string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  lines.push(format(header), ...table.map(format));
  if (gpuBudget !== undefined) {
    lines.push('layers: llama.cpp\'s n_gpu_layers (the last blocks, the output layer counting as one); with a budget and no --gpu-layers, the most that fit');
  }
  lines.push('as llama.cpp v0.5.0\'s CUDA backend allocates it (pinned host: the CUDA_Host buffer, weights kept on the host and the CPU\'s compute buffer); not counted: the CUDA context (~300-500 MiB), cuBLAS workspace, CUDA graphs (llama.cpp\'s --fit leaves 1024 MiB free)');
  return lines.join('\n') + '\n';
}

/** One line for `inspect` with a GPU: all layers on one CUDA GPU at 4096 tokens, or why there is none. */
export function gpuEstimateLine(file: GgufFile): string | undefined {
  try {
    const e = estimateMemory(file, { contextSize: 4096, gpu: 'cuda', gpuLayers: 999 });
    const host = e.buffers!.CUDA_Host;
    return `${mib(e.gpuTotal!)} MiB on a CUDA GPU with every layer at 4096 tokens (weights ${mib(e.buffers!.CUDA0.weights)}, KV cache ${mib(e.buffers!.CUDA0.kvCache)}, compute ${mib(e.buffers!.CUDA0.compute)}), ${mib(host.weights + host.compute + e.output)} MiB pinned host`;
  } catch {
    return undefined;
  }
}

/** One line for `inspect`: the total at the default settings (4096 tokens), or why there is none. */
export function estimateLine(file: GgufFile): string | undefined {
  try {
    const e = estimateMemory(file, { contextSize: 4096 });
    return `${mib(e.total)} MiB at 4096 tokens on the CPU (weights ${mib(e.weights)}, KV cache ${mib(e.kvCache)}, output ${mib(e.output)}, compute ~${mib(e.compute)})`;
  } catch {
    return undefined;
  }
}
