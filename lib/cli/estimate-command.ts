// `gguf-mmap estimate`: what llama.cpp v0.5.0 allocates on the CPU for a model (estimateMemory),
// for the given settings and, unless --ctx is given, for a few context sizes up to the trained one.
import type { GgufFile } from '../file/gguf-file.js';
import { estimateMemory, type MemoryEstimate } from '../estimate/estimate.js';
import { KV_CACHE_TYPES, MAX_CONTEXT_SIZE, type EstimateOptions, type KvCacheType } from '../estimate/options.js';

export class EstimateUsageError extends Error {}

export interface EstimateArgs {
  readonly model: string;
  readonly json: boolean;
  readonly contexts: readonly number[] | undefined;
  readonly options: EstimateOptions;
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
    else throw new EstimateUsageError(`unknown option '${arg}'`);
  }
  if (positional.length !== 1) throw new EstimateUsageError('estimate takes one MODEL (a file, a URL or hf:ORG/REPO/PATH)');
  return { model: positional[0]!, json, contexts, options };
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

export function estimateRows(file: GgufFile, args: EstimateArgs): MemoryEstimate[] {
  const first = estimateMemory(file, { ...args.options, contextSize: args.contexts?.[0] ?? 0 });
  const contexts = args.contexts ?? defaultContexts(first.settings.contextSize);
  return contexts.map((contextSize) => estimateMemory(file, { ...args.options, contextSize }));
}

export function formatEstimate(rows: readonly MemoryEstimate[], json: boolean): string {
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
    })), null, 2) + '\n';
  }
  const first = rows[0]!;
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

/** One line for `inspect`: the total at the default settings (4096 tokens), or why there is none. */
export function estimateLine(file: GgufFile): string | undefined {
  try {
    const e = estimateMemory(file, { contextSize: 4096 });
    return `${mib(e.total)} MiB at 4096 tokens on the CPU (weights ${mib(e.weights)}, KV cache ${mib(e.kvCache)}, output ${mib(e.output)}, compute ~${mib(e.compute)})`;
  } catch {
    return undefined;
  }
}
