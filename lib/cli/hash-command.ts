// `gguf-mmap hash`: llama.cpp's llama-gguf-hash, same options, lines, order and exit statuses, so
// that manifests go both ways; beyond it, --merge-parts (a split set as the unsplit model), one
// error line and exit 2 for an invalid file (the tool crashes there), and uuid lines checked as
// uuids (the tool compares them as sha256, always a mismatch).
import { readFileSync } from 'node:fs';
import { openGguf } from '../file/gguf-file.js';
import { progressBar } from './progress-bar.js';
import { hashTensorsAsync } from '../hash/parallel-hash.js';
import { printable } from './inspect.js';
import { formatHashLine, HASH_KINDS, type HashKind, type HashLine } from '../hash/tensor-hashes.js';

export class HashUsageError extends Error {}

// llama-gguf-hash's exit statuses.
const EXIT_OK = 0;
const EXIT_MISMATCH = 1;
const EXIT_MISSING_ENTRY = 3;
const EXIT_UNKNOWN_HASH = 4;
const EXIT_MANIFEST_ERROR = 5;

interface HashArgs {
  file: string;
  kinds: Set<HashKind>;
  layers: boolean;
  manifest?: string;
  mergeParts: boolean;
}

export function parseHashArgs(args: readonly string[]): HashArgs {
  const kinds = new Set<HashKind>();
  let layers = true;
  let manifest: string | undefined;
  let mergeParts = false;
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--xxh64' || arg === '--sha1' || arg === '--sha256' || arg === '--uuid') kinds.add(arg.slice(2) as HashKind);
    else if (arg === '--all') for (const k of ['xxh64', 'sha1', 'sha256'] as const) kinds.add(k);
    else if (arg === '--no-layer') layers = false;
    else if (arg === '--merge-parts') mergeParts = true;
    else if (arg === '-c' || arg === '--check') {
      manifest = args[++i];
      if (manifest === undefined) throw new HashUsageError(`${arg} needs a MANIFEST`);
    } else if (arg.startsWith('-')) throw new HashUsageError(`unknown option '${arg}'`);
    else files.push(arg);
  }
  if (files.length !== 1) throw new HashUsageError('hash takes one FILE');
  return { file: files[0]!, kinds, layers, manifest, mergeParts };
}

/** A manifest's entries by `kind name`, the first of each (as the tool matches), and the kinds found. */
function readManifest(path: string): { entries: Map<string, string>; kinds: HashKind[] } | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const entries = new Map<string, string>();
  const found = new Set<HashKind>();
  for (const line of text.split('\n')) {
    const [kind, digest, name] = line.trim().split(/\s+/);
    if (kind === undefined || !(HASH_KINDS as readonly string[]).includes(kind)) continue;
    found.add(kind as HashKind);
    if (digest !== undefined && name !== undefined && !entries.has(`${kind} ${name}`)) entries.set(`${kind} ${name}`, digest);
  }
  // The order the tool lists them in.
  return { entries, kinds: (['sha256', 'sha1', 'xxh64', 'uuid'] as const).filter((k) => found.has(k)) };
}

/** Runs `hash`; returns the exit status. Output goes to `out`; progress to `progress` (a terminal). */
export async function runHash(args: HashArgs, out: (text: string) => void, progress?: NodeJS.WriteStream): Promise<number> {
  let manifest: ReturnType<typeof readManifest>;
  if (args.manifest !== undefined) {
    manifest = readManifest(args.manifest);
    if (manifest === undefined) {
      out(`ERROR cannot open manifest ${args.manifest}\n`);
      return EXIT_MANIFEST_ERROR;
    }
    if (manifest.kinds.length === 0) {
      out(`ERROR manifest does not have any known hash format in ${args.manifest}\n`);
      return EXIT_UNKNOWN_HASH;
    }
    out(`manifest  ${args.manifest}${manifest.kinds.map((k) => `  ${k}`).join('')}\n`);
    // Without a kind asked for, the strongest the manifest has.
    if (args.kinds.size === 0) args.kinds.add(manifest.kinds[0]!);
  }
  if (args.kinds.size === 0) args.kinds.add('xxh64');

  using file = openGguf(args.file, { split: args.mergeParts });
  const bar = progressBar(progress);
  let lines: HashLine[];
  try {
    // Per-tensor lines on worker threads while this thread hashes the model's (parallel-hash.ts).
    lines = await hashTensorsAsync(file, { kinds: [...args.kinds], layers: args.layers, name: args.file, onProgress: bar.update });
  } finally {
    bar.end();
  }
  if (manifest === undefined) {
    // Names come from the file: escaped as inspect escapes them (control and bidi characters).
    out(lines.map((l) => formatHashLine({ ...l, name: printable(l.name) }) + '\n').join(''));
    return EXIT_OK;
  }
  let tensorSeen = false;
  let tensorMismatch = false;
  let modelSeen = false;
  let modelMismatch = false;
  const text: string[] = [];
  for (const line of lines) {
    // A manifest of the tool's (names raw) or of ours (names escaped as printed).
    const expected = manifest.entries.get(`${line.kind} ${line.name}`) ?? manifest.entries.get(`${line.kind} ${printable(line.name)}`);
    const result = expected === undefined ? 'Not Found' : expected === line.digest ? 'Ok' : 'Mismatch';
    const isModel = line.name === args.file;
    if (expected !== undefined) {
      if (isModel) modelSeen = true;
      else tensorSeen = true;
      if (result === 'Mismatch') {
        if (isModel) modelMismatch = true;
        else tensorMismatch = true;
      }
    }
    text.push(formatHashLine({ ...line, name: printable(line.name) }, `  -  ${result}`) + '\n');
  }
  // As the tool decides: the model's lines if the manifest has them, else the tensors'.
  const status = !modelSeen ? (!tensorSeen ? EXIT_MISSING_ENTRY : tensorMismatch ? EXIT_MISMATCH : EXIT_OK) : tensorMismatch || modelMismatch ? EXIT_MISMATCH : EXIT_OK;
  const verdict = status === EXIT_OK ? 'Success' : status === EXIT_MISMATCH ? 'Failure' : 'Manifest Missing Entry';
  out(text.join('') + `\nVerification results for ${args.manifest} - ${verdict}\n`);
  return status;
}
