// The model's summary as JSON, spelled as the metadata is: `inspect --json` and the viewer's
// /api/summary write it.
import { GgufError } from '../errors.js';
import type { GgufFile } from './gguf-file.js';
import type { ModelHyperparameters } from './hyperparameters.js';
import type { GgufValue } from './metadata.js';

/** JSON text of a number: -0 stays -0, non-finite floats become their names as strings. */
function jsonNumber(v: number): string {
  if (Object.is(v, -0)) return '-0';
  return Number.isFinite(v) ? String(v) : JSON.stringify(String(v));
}

/** JSON text of one metadata value; every UINT64/INT64 (`type`) is a decimal string, small ones too. */
export function jsonScalar(value: GgufValue, type: string | undefined): string {
  if (typeof value === 'bigint' || type === 'UINT64' || type === 'INT64') return JSON.stringify(String(value));
  if (typeof value === 'number') return jsonNumber(value);
  if (typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  return '[' + Array.from(value as ArrayLike<GgufValue>, (v) => jsonScalar(v, undefined)).join(',') + ']';
}

/**
 * summary() as JSON, its hyperparameters spelled as the metadata is (64-bit integers as decimal
 * strings, non-finite floats by name, -0 kept), written from the metadata itself, in file order;
 * absent fields are null.
 */
export function writeSummaryJson(g: GgufFile, write: (chunk: string) => void): void {
  const s = g.summary();
  const field = (v: string | number | undefined) => (v === undefined ? 'null' : JSON.stringify(v));
  write(`,"summary":{"architecture":${field(s.architecture)},"name":${field(s.name)},"fileType":${field(s.fileType)}`);
  write(`,"parameters":${s.parameters},"bytes":${s.bytes},"bitsPerWeight":${s.bitsPerWeight},"byType":${JSON.stringify(s.byType)},"hyperparameters":{`);
  hyperparameterNames(g).forEach((name, i) => {
    const key = `${s.architecture}.${name}`;
    const info = g.metadata.info(key)!;
    const value = info.arrayType === undefined ? jsonScalar(g.metadata.get(key)!, info.type) : `[${Array.from(g.metadata.array(key)!.values(), (v) => jsonScalar(v, info.arrayType)).join(',')}]`;
    write(`${i === 0 ? '' : ','}${JSON.stringify(name)}:${value}`);
  });
  write(`},"vocabularySize":${field(s.vocabularySize)},"parts":${s.parts},"fileBytes":${s.fileBytes}}`);
}

/** summary()'s hyperparameter names in file order (an object lists integer-like names first). */
export function hyperparameterNames(g: GgufFile): string[] {
  const { architecture, hyperparameters } = g.summary();
  const prefix = `${architecture}.`;
  const names: string[] = [];
  for (const key of g.metadata.keys()) {
    if (key.startsWith(prefix) && Object.hasOwn(hyperparameters, key.slice(prefix.length))) names.push(key.slice(prefix.length));
  }
  return names;
}

/** hyperparameters(), or the GgufError that says why there are none (undefined without an architecture). */
export function typedHyperparameters(g: GgufFile): ModelHyperparameters | GgufError | undefined {
  if (g.summary().architecture === undefined) return undefined;
  try {
    return g.hyperparameters();
  } catch (error) {
    if (error instanceof GgufError) return error;
    throw error;
  }
}

/**
 * hyperparameters() as JSON (`"hyperparameters"`, fields the family lacks as null), or null and
 * `"hyperparametersError"` ({code, message}) where the header's values are missing or malformed.
 */
export function writeHyperparametersJson(g: GgufFile, write: (chunk: string) => void): void {
  const h = typedHyperparameters(g);
  if (h instanceof GgufError) write(`,"hyperparameters":null,"hyperparametersError":${JSON.stringify({ code: h.code, message: h.message })}`);
  else write(`,"hyperparameters":${h === undefined ? 'null' : JSON.stringify(h, (_key, value: unknown) => (value === undefined ? null : value))}`);
}
