// `gguf-mmap tokenize`: a text's token ids and pieces under a model's own vocabulary (llama.cpp's
// llama_tokenize), from a local file or a remote header.
import { readFileSync } from 'node:fs';
import type { GgufFile } from '../file/gguf-file.js';
import { pieceDisplay } from '../tokenizer/piece-display.js';
import { printable } from './inspect.js';

export class TokenizeUsageError extends Error {}

export interface TokenizeArgs {
  model: string;
  /** The text; undefined: read stdin. */
  text: string | undefined;
  output: 'pieces' | 'ids' | 'count' | 'json';
  addSpecial: boolean;
  parseSpecial: boolean;
  split: boolean;
}

export function parseTokenizeArgs(args: readonly string[]): TokenizeArgs {
  const positional: string[] = [];
  let output: TokenizeArgs['output'] = 'pieces';
  let addSpecial = true;
  let parseSpecial = false;
  let split = true;
  let textGiven = false;
  for (const arg of args) {
    if (arg === '--ids' || arg === '--count' || arg === '--json') {
      if (output !== 'pieces') throw new TokenizeUsageError('--ids, --count and --json exclude each other');
      output = arg.slice(2) as TokenizeArgs['output'];
    } else if (arg === '--no-special') addSpecial = false;
    else if (arg === '--parse-special') parseSpecial = true;
    else if (arg === '--no-split') split = false;
    else if (arg === '--') textGiven = true;
    else if (arg.startsWith('--') && !textGiven) throw new TokenizeUsageError(`unknown option '${arg}'`);
    else positional.push(arg);
  }
  if (positional.length === 0) throw new TokenizeUsageError('tokenize takes MODEL [TEXT | -]');
  if (positional.length > 2) throw new TokenizeUsageError('tokenize takes one TEXT (quote it, or give - to read stdin)');
  const text = positional[1];
  return { model: positional[0]!, text: text === '-' ? undefined : text, output, addSpecial, parseSpecial, split };
}

/** The text of TEXT, or of stdin when TEXT is '-' or absent. */
export function tokenizeInput(args: TokenizeArgs): string {
  return args.text ?? readFileSync(0, 'utf8');
}

/** A piece for a terminal: its text quoted and escaped (control characters, bidi overrides), or its bytes as <0xXX> when not whole UTF-8. */
function showPiece(bytes: Uint8Array): string {
  const shown = pieceDisplay(bytes);
  return shown.bytes ? shown.text : `'${printable(shown.text)}'`;
}

/** The command's output for a text. */
export function tokenizeOutput(file: GgufFile, text: string, args: TokenizeArgs): string {
  const tok = file.tokenizer();
  const ids = tok.encode(text, { addSpecial: args.addSpecial, parseSpecial: args.parseSpecial });
  if (args.output === 'count') return `${ids.length}\n`;
  if (args.output === 'ids') return `${Array.from(ids).join(' ')}\n`;
  if (args.output === 'json') {
    const pieces = Array.from(ids, (id) => tok.tokenToPiece(id, { special: true }));
    return `${JSON.stringify({ count: ids.length, ids: Array.from(ids), pieces })}\n`;
  }
  const width = String(tok.vocabSize - 1).length;
  return Array.from(ids, (id) => `${String(id).padStart(width)}  ${showPiece(tok.pieceBytes(id, { special: true }))}\n`).join('');
}
