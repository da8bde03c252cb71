// `gguf-mmap edit FILE --set KEY=VALUE[:TYPE] --delete KEY --chat-template-file F [--out OUT] [--in-place]`.
import { readFileSync } from 'node:fs';
import { editMetadata, type EditResult } from '../edit/edit-metadata.js';
import { openGguf } from '../file/gguf-file.js';
import { INTEGER_RANGES, type GgufWriteValue } from '../format/writer.js';
import { GGUF_VALUE_TYPES, type GgufValueType } from '../format/value-types.js';

export class EditUsageError extends Error {}

const SCALARS = GGUF_VALUE_TYPES.filter((t) => t !== 'ARRAY');

/** A value typed as `type`, from the command line's text. */
function typedValue(key: string, text: string, type: GgufValueType): GgufWriteValue {
  const bad = () => new EditUsageError(`--set ${key}: '${text}' is not a ${type}`);
  switch (type) {
    case 'STRING':
      return { type, value: text };
    case 'BOOL':
      if (text !== 'true' && text !== 'false') throw bad();
      return { type, value: text === 'true' };
    case 'UINT64':
    case 'INT64': {
      if (!/^-?\d+$/.test(text)) throw bad();
      const value = BigInt(text);
      const [min, max] = type === 'UINT64' ? [0n, 2n ** 64n - 1n] : [-(2n ** 63n), 2n ** 63n - 1n];
      if (value < min || value > max) throw bad();
      return { type, value };
    }
    case 'FLOAT32':
    case 'FLOAT64': {
      // Finite numbers, or NaN / Infinity / -Infinity spelled out; nothing that overflows.
      const value = Number(text);
      const spelled = text === 'NaN' || text === 'Infinity' || text === '-Infinity';
      if (text.trim() === '' || (!spelled && !Number.isFinite(value))) throw bad();
      if (type === 'FLOAT32' && Number.isFinite(value) && !Number.isFinite(Math.fround(value))) throw bad();
      return { type, value };
    }
    case 'ARRAY':
      throw new EditUsageError(`--set ${key}: arrays cannot be set from the command line`);
    default: {
      const [min, max] = INTEGER_RANGES[type]!;
      const value = Number(text);
      if (!/^-?\d+$/.test(text) || value < min || value > max) throw bad();
      return { type, value } as GgufWriteValue;
    }
  }
}

/** A text file's contents; bytes that are not UTF-8 are a usage error naming the first (never U+FFFD in the model). */
function readUtf8File(path: string): string {
  const bytes = readFileSync(path);
  const bad = firstInvalidUtf8(bytes);
  if (bad >= 0) throw new EditUsageError(`--chat-template-file ${path}: byte ${bad} (0x${bytes[bad]!.toString(16).padStart(2, '0')}) is not UTF-8; a template is stored as UTF-8 text`);
  return new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
}

/** Offset of the first byte that does not begin or continue a well-formed UTF-8 sequence, or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // The sequence's length, and the range its second byte must lie in (no overlong forms, no
    // surrogates, nothing past U+10FFFF).
    let length: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) low = 0xa0;
      if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) low = 0x90;
      if (b === 0xf4) high = 0x8f;
    } else return i;
    for (let k = 1; k < length; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? low : 0x80) || c > (k === 1 ? high : 0xbf)) return i;
    }
    i += length;
  }
  return -1;
}

export function runEdit(args: readonly string[], onProgress?: (done: number, total: number) => void): { result: EditResult; changed: number } {
  const files: string[] = [];
  const sets: Array<[string, string, GgufValueType | undefined]> = [];
  const deletes: string[] = [];
  let out: string | undefined;
  let inPlace = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = () => {
      const value = args[++i];
      if (value === undefined) throw new EditUsageError(`${arg} needs a value`);
      return value;
    };
    if (arg === '--set') {
      const spec = next();
      const eq = spec.indexOf('=');
      if (eq <= 0) throw new EditUsageError(`--set takes KEY=VALUE[:TYPE], not '${spec}'`);
      let value = spec.slice(eq + 1);
      let type: GgufValueType | undefined;
      // A trailing :TYPE only when it names a type (values may hold colons).
      const colon = value.lastIndexOf(':');
      if (colon >= 0 && (SCALARS as readonly string[]).includes(value.slice(colon + 1))) {
        type = value.slice(colon + 1) as GgufValueType;
        value = value.slice(0, colon);
      }
      sets.push([spec.slice(0, eq), value, type]);
    } else if (arg === '--delete') deletes.push(next());
    else if (arg === '--chat-template-file') sets.push(['tokenizer.chat_template', readUtf8File(next()), 'STRING']);
    else if (arg === '--out') out = next();
    else if (arg === '--in-place') inPlace = true;
    else if (arg.startsWith('--')) throw new EditUsageError(`unknown option '${arg}'`);
    else files.push(arg);
  }
  if (files.length !== 1) throw new EditUsageError('edit takes one FILE');
  if (sets.length === 0 && deletes.length === 0) throw new EditUsageError('edit needs --set, --delete or --chat-template-file');
  // A key that exists keeps its type unless one is given; a new one is a STRING unless told.
  const types = (() => {
    using g = openGguf(files[0]!, { split: false, mode: 'read' });
    return new Map(sets.map(([key]) => [key, g.metadata.type(key)]));
  })();
  const set = sets.map(([key, text, type]): [string, GgufWriteValue] => [key, typedValue(key, text, type ?? types.get(key) ?? 'STRING')]);
  return { result: editMetadata(files[0]!, { set, delete: deletes }, { out, inPlace, onProgress }), changed: sets.length + deletes.length };
}
