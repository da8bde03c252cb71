import type { GgufFile } from '../file/gguf-file.js';
import { estimateLine, gpuEstimateLine } from './estimate-command.js';
import type { GgufValue } from '../file/metadata.js';
import { GgufError } from '../errors.js';
import { hyperparameterNames, jsonScalar, typedHyperparameters, writeHyperparametersJson, writeSummaryJson } from '../file/summary-json.js';
import type { ModelHyperparameters, PerBlock } from '../file/hyperparameters.js';

// Array elements are written in chunks of this many, so no single string grows with the array.
const JSON_CHUNK = 65536;

/**
 * The whole file as JSON, written in pieces to `write`: every key in file order (a plain object
 * would drop `__proto__` and move integer-like keys first), -0 kept, arrays of any length
 * streamed. 64-bit integers are decimal strings, non-finite floats their names; `sha256` hashes
 * each tensor's bytes (in slices: any size).
 */
export function writeInspectJson(g: GgufFile, write: (chunk: string) => void, options: { sha256?: boolean } = {}): void {
  write(`{"version":${g.version},"endian":"${g.endian}","alignment":${g.alignment},"dataOffset":${g.dataOffset},"fileSize":${g.fileSize},"metadata":{`);
  let firstKey = true;
  for (const key of g.metadata.keys()) {
    const info = g.metadata.info(key)!;
    write(`${firstKey ? '' : ','}${JSON.stringify(key)}:{"type":"${info.type}",`);
    firstKey = false;
    if (info.arrayType === undefined) {
      write(`"value":${jsonScalar(g.metadata.get(key)!, info.type)}}`);
      continue;
    }
    write(`"arrayType":"${info.arrayType}","value":[`);
    const elementType = info.arrayType;
    let chunk: string[] = [];
    let firstChunk = true;
    const flush = () => {
      if (chunk.length === 0) return;
      write((firstChunk ? '' : ',') + chunk.join(','));
      firstChunk = false;
      chunk = [];
    };
    for (const v of g.metadata.array(key)!.values()) {
      chunk.push(jsonScalar(v, elementType));
      if (chunk.length === JSON_CHUNK) flush();
    }
    flush();
    write(']}');
  }
  write('}');
  const split = g.parts.length > 1;
  // A split model: its parts, and each tensor's part (its offset stays relative to that part).
  if (split) write(`,"parts":${JSON.stringify(g.parts.map((p) => ({ path: p.path, size: p.size, dataOffset: p.dataOffset, tensorCount: p.tensorCount })))}`);
  writeSummaryJson(g, write);
  writeHyperparametersJson(g, write);
  write(',"tensors":[');
  g.tensors.forEach((t, i) => {
    const entry = { name: t.name, type: t.type, typeId: t.typeId, shape: [...t.shape], offset: t.offset, nbytes: t.nbytes, ...(split ? { part: t.part } : {}) };
    const hash = options.sha256 ? { sha256: t.sha256() } : {};
    write((i === 0 ? '' : ',') + JSON.stringify({ ...entry, ...hash }));
  });
  write(']}\n');
}

/** A number or one per block, the blocks' values shortened as the metadata section shortens arrays. */
function perBlockText(value: PerBlock): string {
  if (typeof value === 'number') return String(value);
  const head = value.slice(0, SHOWN_ELEMENTS).join(', ');
  return `[${head}${value.length > SHOWN_ELEMENTS ? `, ... ${value.length - SHOWN_ELEMENTS} more` : ''}]`;
}

/** hyperparameters() on one line: the family, then what it has. */
export function hyperparametersText(h: ModelHyperparameters): string {
  const parts = [`${h.blockCount} blocks`, `embedding ${h.embeddingLength}`];
  if (h.contextLength !== undefined) parts.push(`context ${h.contextLength}`);
  if (h.family !== 'recurrent') {
    const size = h.valueLength === h.keyLength ? `${h.keyLength}` : `${h.keyLength}/${h.valueLength}`;
    parts.push(`heads ${perBlockText(h.headCount)} (KV ${perBlockText(h.headCountKv)}) of ${size}`);
  }
  if (h.feedForwardLength !== undefined) parts.push(`FFN ${perBlockText(h.feedForwardLength)}`);
  if (h.rope !== undefined) {
    const { dimensionCount, freqBase, scaling } = h.rope;
    const scaled = scaling.type === 'none' || (scaling.type === 'linear' && scaling.factor === 1) ? '' : `, ${scaling.type} x${shortestFloat32(scaling.factor)}`;
    parts.push(`rope ${dimensionCount} dims base ${shortestFloat32(freqBase)}${scaled}`);
  }
  if (h.rmsNormEpsilon !== undefined && h.rmsNormEpsilon !== 0) parts.push(`rms norm eps ${shortestFloat32(h.rmsNormEpsilon)}`);
  if (h.layerNormEpsilon !== undefined && h.layerNormEpsilon !== 0) parts.push(`norm eps ${shortestFloat32(h.layerNormEpsilon)}`);
  if (h.experts !== undefined) {
    const { count, used, shared } = h.experts;
    parts.push(`experts ${count} (${perBlockText(used)} used${shared > 0 ? `, ${shared} shared` : ''})`);
  }
  if (h.slidingWindow !== undefined) parts.push(`sliding window ${h.slidingWindow.size} on ${h.slidingWindow.blocks.filter(Boolean).length} of ${h.blockCount} blocks`);
  if (h.ssm !== undefined) parts.push(`ssm conv ${h.ssm.convKernel}, inner ${h.ssm.innerSize}, state ${h.ssm.stateSize}, groups ${h.ssm.groupCount}, dt rank ${h.ssm.timeStepRank}`);
  if (h.wkv !== undefined) parts.push(`wkv head ${h.wkv.headSize}`);
  if (h.shortConvolution !== undefined) parts.push(`short conv ${h.shortConvolution.cacheLength}`);
  if (h.recurrentState !== undefined) parts.push(`recurrent state ${h.recurrentState.convolution} + ${h.recurrentState.state} floats`);
  if (h.vocabularySize !== undefined) parts.push(`vocabulary ${h.vocabularySize}`);
  return `${h.family}: ${parts.join(', ')}`;
}

/**
 * Shows control characters (C0, DEL, C1) and bidirectional overrides as escapes: keys, names and
 * values come from the file, and a terminal would act on them.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const SHOWN_ELEMENTS = 6;
// Keys and names are padded to the longest of them up to this width; a longer one overflows its
// column (a file with one long key must not pad every line to its length).
const MAX_COLUMN = 64;

/** A human-readable summary: header, metadata with long arrays shortened, tensor table, totals. */
export function inspectText(g: GgufFile, path: string): string {
  const lines: string[] = [];
  lines.push(`file       ${printable(path)}`);
  lines.push(`size       ${formatBytes(g.fileSize)} (${g.fileSize} bytes)`);
  if (g.mode === 'mmap') {
    const { resident, total } = g.residency();
    lines.push(`resident   ${formatBytes(resident)} of ${formatBytes(total)} in memory (${total === 0 ? 100 : Math.floor((resident / total) * 100)}%)`);
  }
  lines.push(`format     GGUF v${g.version}, ${g.endian}-endian, alignment ${g.alignment}, data at byte ${g.dataOffset}`);
  const summary = g.summary();
  if (summary.architecture !== undefined) {
    const name = summary.name === undefined ? '' : ` '${printable(summary.name)}'`;
    lines.push(`model      ${printable(summary.architecture)}${name}, ${formatCount(summary.parameters)} parameters, ${summary.bitsPerWeight.toFixed(2)} bits per weight`);
    // As the metadata section shows them (a FLOAT32 as its shortest decimal).
    const hyper = hyperparameterNames(g).map((k) => {
      const key = `${summary.architecture}.${k}`;
      const info = g.metadata.info(key)!;
      const shown = info.arrayType === undefined ? formatScalar(g.metadata.get(key)!, info.type) : formatArray(g.metadata.array(key)!, info.arrayType, info.length!);
      return `${printable(k)} ${shown}`;
    });
    if (hyper.length > 0) lines.push(`hyper      ${hyper.join(', ')}`);
    const typed = typedHyperparameters(g);
    if (typed !== undefined) lines.push(`family     ${typed instanceof GgufError ? `none: ${typed.code}: ${printable(typed.message)}` : printable(hyperparametersText(typed))}`);
    const memory = estimateLine(g);
    if (memory !== undefined) lines.push(`memory     ${memory}`);
    const gpu = memory === undefined ? undefined : gpuEstimateLine(g);
    if (gpu !== undefined) lines.push(`gpu        ${gpu}`);
  }
  lines.push('');
  lines.push(`metadata (${g.metadata.size})`);
  const keyWidth = Math.min(MAX_COLUMN, widest(g.metadata.keys(), (k) => printable(k).length, 0));
  for (const key of g.metadata.keys()) {
    const info = g.metadata.info(key)!;
    const shown =
      info.arrayType === undefined
        ? formatScalar(g.metadata.get(key)!, info.type)
        : formatArray(g.metadata.array(key)!, info.arrayType, info.length!);
    const type = info.arrayType === undefined ? info.type : `${info.arrayType}[${info.length}]`;
    lines.push(`  ${printable(key).padEnd(keyWidth)}  ${type.padEnd(14)} ${shown}`);
  }
  lines.push('');
  if (g.parts.length > 1) {
    lines.push(`parts (${g.parts.length}): a split model`);
    g.parts.forEach((p, i) => lines.push(`  ${String(i + 1).padStart(5)}  ${formatBytes(p.size).padStart(10)}  ${String(p.tensorCount).padStart(6)} tensors  ${printable(p.path ?? '')}`));
    lines.push('');
  }
  lines.push(`tensors (${g.tensors.length})`);
  if (g.tensors.length > 0) {
    const nameWidth = Math.min(MAX_COLUMN, widest(g.tensors, (t) => printable(t.name).length, 4));
    lines.push(`  ${'name'.padEnd(nameWidth)}  ${'type'.padEnd(8)} ${'shape'.padEnd(20)} ${'size'.padStart(10)}  offset`);
    for (const t of g.tensors) {
      lines.push(`  ${printable(t.name).padEnd(nameWidth)}  ${t.type.padEnd(8)} ${`[${t.shape.join(', ')}]`.padEnd(20)} ${formatBytes(t.nbytes).padStart(10)}  ${t.offset}`);
    }
  }
  lines.push('');
  lines.push(`total      ${summary.byType.reduce((n, t) => n + t.tensors, 0)} tensors, ${summary.parameters.toLocaleString('en-US')} parameters, ${formatBytes(summary.bytes)}, ${summary.bitsPerWeight.toFixed(2)} bits per weight`);
  if (summary.byType.length > 0) {
    lines.push(`by type    ${summary.byType.map((t) => `${t.type} x${t.tensors} (${formatBytes(t.bytes)}, ${t.bitsPerWeight.toFixed(2)} bpw)`).join(', ')}`);
  }
  return lines.join('\n') + '\n';
}

/** The largest `measure` over `items`, at least `floor` (no spread: a file may have a million names). */
function widest<T>(items: Iterable<T>, measure: (item: T) => number, floor: number): number {
  let width = floor;
  for (const item of items) width = Math.max(width, measure(item));
  return width;
}

function formatScalar(v: GgufValue, type: string): string {
  if (typeof v === 'string') return printable(JSON.stringify(v));
  if (type === 'FLOAT32' && typeof v === 'number') return String(shortestFloat32(v));
  return String(v);
}

/** The shortest decimal that reads back as the same float32 (1e-5, not 0.0000099999997). */
function shortestFloat32(v: number): number {
  if (!Number.isFinite(v)) return v;
  for (let digits = 1; digits < 9; digits++) {
    const candidate = Number(v.toPrecision(digits));
    if (Math.fround(candidate) === v) return candidate;
  }
  return v;
}

function formatArray(array: { at(i: number): GgufValue | undefined }, type: string, length: number): string {
  if (type === 'ARRAY') return `[${length} arrays]`;
  const head = Array.from({ length: Math.min(length, SHOWN_ELEMENTS) }, (_, i) => formatScalar(array.at(i)!, type));
  return `[${head.join(', ')}${length > SHOWN_ELEMENTS ? `, ... ${length - SHOWN_ELEMENTS} more` : ''}]`;
}

/** 1.10 B, 68.5 M, 4,096. */
function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} M`;
  return n.toLocaleString('en-US');
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}
