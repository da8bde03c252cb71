#!/usr/bin/env node
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkOutputIsNotInput, DequantUsageError, parseRows, runDequant } from './dequant-command.js';
import type { DequantBackend } from '../dequant/dequantize.js';
import { GgufError } from '../errors.js';
import { openGguf, type GgufFile } from '../file/gguf-file.js';
import { openGgufRemote } from '../remote/open-remote.js';
import { cacheListing, pullExitStatus, runPull } from './pull-command.js';
import { HashUsageError, parseHashArgs, runHash } from './hash-command.js';
import { mergeModel, splitModel } from '../edit/split-model.js';
import { EditUsageError, runEdit } from './edit-command.js';
import { EstimateUsageError, estimateRows, formatEstimate, parseEstimateArgs } from './estimate-command.js';
import { convertEndian } from '../edit/convert-endian.js';
import { progressBar, type ProgressBar } from './progress-bar.js';
import { formatBytes, inspectText, printable, writeInspectJson } from './inspect.js';
import { packageRoot } from '../package-root.js';
import { samplePath } from './sample.js';
import { closestName, commandHelp, commandHelpText, commandNames } from './usage.js';
import { ChatUsageError, parseChatArgs, runChat } from './chat-command.js';
import { parseTokenizeArgs, tokenizeInput, tokenizeOutput, TokenizeUsageError } from './tokenize-command.js';

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

const USAGE = `usage: gguf-mmap inspect [FILE|URL|hf:ORG/REPO/PATH[@REV]] [--json] [--sha256] [--no-split]
       gguf-mmap warm FILE [--no-split]
       gguf-mmap pull hf:ORG/REPO/PATH[@REV] | hf:ORG/REPO:QUANT [--revision REV] [--cache-dir DIR]
       gguf-mmap cache [--json]
       gguf-mmap --version
       gguf-mmap dequant FILE TENSOR [--rows A:B] [--out FILE.f32] [--backend auto|native|wasm|js] [--no-split]
       gguf-mmap edit FILE [--set KEY=VALUE[:TYPE]]... [--delete KEY]... [--chat-template-file F] [--out OUT] [--in-place]
       gguf-mmap split IN OUTPREFIX --split-max-tensors N | --split-max-size N[M|G] [--no-tensor-first-split]
       gguf-mmap merge PART OUT
       gguf-mmap convert-endian FILE --to big|little --out OUT
       gguf-mmap view FILE|URL|hf:ORG/REPO/PATH[@REV] [--port N] [--open]
       gguf-mmap view --static DIR [URL] [--open]
       gguf-mmap chat MODEL --messages FILE.json [--tools FILE.json] [--no-generation-prompt] [--tokens] [--template NAME] [--var KEY=JSON]... [--no-split]
       gguf-mmap tokenize MODEL|URL|hf:... [TEXT | -] [--ids | --count | --json] [--no-special] [--parse-special]
       gguf-mmap hash [--xxh64] [--sha1] [--sha256] [--uuid] [--all] [--no-layer] [--check MANIFEST] [--merge-parts] FILE
       gguf-mmap estimate MODEL|URL|hf:... [--ctx N]... [--parallel N] [--kv-unified] [--cache-type-k T] [--cache-type-v T] [--flash-attn|--no-flash-attn] [--ubatch N] [--batch N] [--swa-full] [--gpu SIZE] [--gpu-layers N] [--json]

  inspect [FILE]   summarize a GGUF file: version, the model (architecture, parameters,
                   bits per weight, hyperparameters as keys and as llama.cpp uses them,
                   by family), metadata, tensor table, totals;
                   any part of a split model (under its part name) shows the whole model.
                   Without FILE, inspects the embedded sample model. A URL or an
                   hf: URI reads the header over HTTP (range requests; HF_ENDPOINT,
                   HF_TOKEN honoured), without downloading the file.
    --json         print one JSON object instead (every metadata value in full, the summary,
                   the typed hyperparameters)
    --sha256       with --json, add each tensor's sha256
    --no-split     a part of a split model alone, as it is (to look at a broken or
                   renamed part; warm and dequant take it too)
  warm FILE        bring the whole file into memory (the page cache) before use,
                   with a progress bar and MB/s on a terminal, a summary otherwise
  pull URI         download a model into the Hugging Face cache (the one huggingface_hub
                   and llama.cpp share; HF_HUB_CACHE, HF_HOME), resuming and checking its
                   sha256; every part of a split model; the local path last on stdout.
                   A cached file needs no network; HF_HUB_OFFLINE=1 never asks.
                   HF_ENDPOINT, HF_TOKEN honoured. hf:ORG/REPO:Q4_K_M picks that file.
  cache            list the cached models, their files and sizes (--json)
  dequant FILE TENSOR
                   dequantize a tensor to float32 (bit for bit as ggml) and print
                   min, max, mean and the NaN and Inf counts.
    --rows A:B     only rows A to B-1 (a row is ne[0] values); A: to the end; A alone
    --out FILE     write the values to FILE as raw little-endian float32 instead
    --backend      native kernels where the addon has one (auto, the default),
                   or only native, only WebAssembly (wasm), or only TypeScript (js)

  edit FILE        change metadata, never the tensor data: --set KEY=VALUE (a key that
                   exists keeps its type; :TYPE names one, e.g. :UINT32; new keys are
                   STRING), --delete KEY, --chat-template-file F (tokenizer.chat_template).
                   In place when the new header ends where the data starts; otherwise
                   --out OUT writes a new file, --in-place replaces FILE with one
  split IN OUTPREFIX
                   split a model into OUTPREFIX-0000K-of-0000N.gguf, byte for byte as
                   llama.cpp's llama-gguf-split does: a new part before every Nth tensor
                   (--split-max-tensors), or before a tensor that would take the part's
                   tensor bytes (each padded to 32) past N (--split-max-size; M = 10^6 bytes,
                   G = 10^9); --no-tensor-first-split puts the metadata alone in part 1
  merge PART OUT   join the split set PART belongs to into one file OUT (which must not
                   exist), as llama-gguf-split --merge does: the data section is the model's
  convert-endian FILE --to big|little --out OUT
                   write the model in the other byte order: every number of the header and
                   each block's wide fields (f16 scales, ...) swapped, for every tensor type;
                   the same layout and size, and converting back gives the original bytes
  hash FILE        hash the tensor data (not the metadata) tensor by tensor and as a whole,
                   as llama.cpp's llama-gguf-hash prints it (xxh64 by default; --all is
                   xxh64, sha1 and sha256; --uuid a UUIDv5 of the model; --no-layer only the
                   model's lines). A part of a split model alone, as llama-gguf-hash does;
    --merge-parts  every part, hashed as the unsplit model
    --check MANIFEST
                   compare with a manifest (the lines printed before); exit 1 on a
                   mismatch, 3 when nothing in it matches, 4 no known kind, 5 unreadable

  estimate MODEL   memory llama.cpp v0.5.0 allocates on the CPU for the model (weights, repacked
                   weights, KV cache, output, compute buffer), from the header alone (a URL
                   or hf: URI reads only the header); without --ctx, for 4096, 8192, ... up
                   to the trained context. Defaults as llama-server's: 1 sequence, f16 cache,
                   flash attention on, ubatch 512.
    --gpu SIZE     one CUDA GPU of SIZE (24GiB, 8000MiB): per device (GPU, pinned host,
                   host), at each context the most layers that fit
    --gpu-layers N llama.cpp's n_gpu_layers (-ngl; 999: all): per device at N layers
  view TARGET      look at a model in the browser: serves a page on 127.0.0.1 (a free port
                   unless --port N) and prints its URL with a fresh access token; summary,
                   layer map, tensor table, each tensor's statistics and histogram, metadata.
                   A URL or hf: URI fetches a tensor's bytes only when it is opened.
                   --open starts the system browser; Ctrl-C ends it.
                   --static DIR writes the page into DIR instead, with no server: it
                   opens a file dropped or picked there, or a URL, in the browser; prints
                   its file: URL
  chat MODEL       the prompt the model's chat template (tokenizer.chat_template) makes of
                   the messages, rendered as transformers' apply_chat_template renders it,
                   with the vocabulary's BOS/EOS text; MODEL may be a URL or hf: URI (the
                   header only is read). Ends with the assistant's turn opened.
    --messages F   a JSON list of {role, content, ...} messages (- reads stdin)
    --tools F      a JSON list of tool (function) schemas
    --no-generation-prompt
                   without the opening of the assistant's turn
    --tokens       print {"prompt", "tokens", "count"} as JSON: the token ids llama.cpp's
                   server feeds the model for this chat (one BOS, whether or not the
                   template writes it)
    --template N   the named template tokenizer.chat_template.N (e.g. tool_use)
    --var K=JSON   a variable for the template (e.g. --var enable_thinking=false)
    --no-split     read a part of a split model alone (its own header)
  tokenize MODEL [TEXT]
                   the token ids of TEXT (stdin when - or absent) under the model's own
                   vocabulary, exactly as llama.cpp's llama_tokenize: one line per token,
                   its id and its piece (escaped); a URL or hf: URI reads the header only.
    --ids          the ids on one line     --count   how many     --json   ids and pieces
    --no-special   no BOS/EOS              --parse-special  control-token texts as tokens

  A progress bar shows on a terminal for work that takes over a second (dequant, hash,
  edit, split, merge, convert-endian; warm and pull always show one).

exit status: 0 ok, 1 usage or I/O error (HTTP too), 2 invalid (or changed) GGUF file,
             3 not possible here (no addon, no kernel for the backend, a type
             without a float conversion, a file the rewriting commands cannot write,
             a chat template that raises for these messages or is stopped, a model
             whose architecture estimate does not know)`;

class UsageError extends Error {}

/** The command being run, for a usage error's short usage. */
let currentCommand: string | undefined;

function run(argv: string[]): number {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    // `help COMMAND` as `COMMAND --help`.
    const asked = command === 'help' ? rest[0] : undefined;
    const text = asked === undefined ? undefined : commandHelpText(USAGE, asked);
    process.stdout.write(text ?? USAGE + '\n');
    return command === undefined ? 1 : 0;
  }
  if (command === '--version' || command === '-v') {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  const commands = commandNames(USAGE);
  if (!commands.includes(command)) {
    const near = closestName(command, commands);
    throw new UsageError(`unknown command '${command}'${near === undefined ? '' : ` (did you mean '${near}'?)`}; gguf-mmap --help lists the commands`);
  }
  currentCommand = command;
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(commandHelpText(USAGE, command)!);
    return 0;
  }
  if (command === 'dequant') return dequant(rest);
  if (command === 'hash') return hash(rest);
  if (command === 'split') return splitCommand(rest);
  if (command === 'edit') return editCommand(rest);
  if (command === 'merge') return mergeCommand(rest);
  if (command === 'convert-endian') return convertEndianCommand(rest);
  if (command === 'pull') return pull(rest);
  if (command === 'view') {
    // Loaded only for this command: the server's modules cost the other commands nothing.
    import('./view-command.js')
      .then(({ parseViewArgs, runView, ViewUsageError }) => runView(asUsage(() => parseViewArgs(rest), ViewUsageError), (line) => process.stdout.write(line)))
      .catch(report);
    return 0;
  }
  if (command === 'cache') {
    if (rest.some((a) => a !== '--json')) throw new UsageError('cache takes only --json');
    process.stdout.write(cacheListing(rest.includes('--json')));
    return 0;
  }
  if (command === 'warm') return warm(rest);
  if (command === 'estimate') return estimate(rest);
  if (command === 'chat') return chat(rest);
  if (command === 'tokenize') return tokenize(rest);
  if (command !== 'inspect') throw new UsageError(`unknown command '${command}'`);
  const flags = new Set(rest.filter((a) => a.startsWith('--')));
  const files = rest.filter((a) => !a.startsWith('--'));
  for (const flag of flags) if (flag !== '--json' && flag !== '--sha256' && flag !== '--no-split') throw new UsageError(`unknown option '${flag}'`);
  if (files.length > 1) throw new UsageError('inspect takes one FILE');
  if (flags.has('--sha256') && !flags.has('--json')) throw new UsageError('--sha256 goes with --json');
  const path = files[0] ?? samplePath();
  if (files[0] === undefined && !existsSync(path)) throw new Error(`the embedded sample is missing (${path}); run npm run build`);

  const split = !flags.has('--no-split');
  if (isRemote(path)) {
    if (flags.has('--sha256')) throw new UsageError('--sha256 reads every tensor: pull the file first (inspect URL reads the header only)');
    openGgufRemote(path, { split })
      .then((g) => printInspect(g, path, flags.has('--json'), false))
      .catch(report);
    return 0;
  }
  using g = openGguf(path, { split });
  printInspect(g, path, flags.has('--json'), flags.has('--sha256'));
  // Pages lost while reading (the file truncated underneath) read as zeros: say so, exit 2.
  g.verify();
  return 0;
}

function tokenize(rest: string[]): number {
  let args;
  try {
    args = parseTokenizeArgs(rest);
  } catch (error) {
    if (error instanceof TokenizeUsageError) throw new UsageError(error.message);
    throw error;
  }
  const text = tokenizeInput(args);
  if (isRemote(args.model)) {
    openGgufRemote(args.model, { split: args.split })
      .then((g) => process.stdout.write(tokenizeOutput(g, text, args)))
      .catch(report);
    return 0;
  }
  using g = openGguf(args.model, { split: args.split });
  writeBuffered((write) => write(tokenizeOutput(g, text, args)));
  return 0;
}

/** A URL or an hf: URI (a header read over HTTP), not a local path. */
function isRemote(path: string): boolean {
  return /^(https?:\/\/|hf:)/.test(path);
}

function printInspect(g: GgufFile, path: string, json: boolean, sha256: boolean): void {
  if (json) writeBuffered((write) => writeInspectJson(g, write, { sha256 }));
  else process.stdout.write(inspectText(g, path));
}

/** Writes what `produce` emits to stdout in pieces of about 1 MiB (stdout is synchronous on Linux). */
function writeBuffered(produce: (write: (chunk: string) => void) => void): void {
  let pending: string[] = [];
  let size = 0;
  const flush = () => {
    process.stdout.write(pending.join(''));
    pending = [];
    size = 0;
  };
  produce((chunk) => {
    pending.push(chunk);
    size += chunk.length;
    if (size >= 1 << 20) flush();
  });
  flush();
}

/** `pull URI`: pullModel with progress; the path last on stdout. */
function pull(args: string[]): number {
  const positional: string[] = [];
  const options: { revision?: string; cacheDir?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--revision' || arg === '--cache-dir') {
      const value = args[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value`);
      if (arg === '--revision') options.revision = value;
      else options.cacheDir = value;
    } else if (arg.startsWith('--')) {
      throw new UsageError(`unknown option '${arg}'`);
    } else {
      positional.push(arg);
    }
  }
  if (positional.length !== 1) throw new UsageError('pull takes one URI');
  runPull(positional[0]!, options, process.stderr.isTTY ? process.stderr : undefined).catch((error: unknown) => {
    report(error);
    process.exitCode = pullExitStatus(error, Number(process.exitCode));
  });
  return 0;
}

/** `chat MODEL --messages F`: the model's chat template applied (chat-command.ts). */
function chat(args: string[]): number {
  const parsed = asUsage(() => parseChatArgs(args), ChatUsageError);
  const print = (g: GgufFile) => process.stdout.write(asUsage(() => runChat(g, parsed, { terminal: process.stdout.isTTY === true }), ChatUsageError));
  if (isRemote(parsed.model)) {
    openGgufRemote(parsed.model, { split: parsed.split })
      .then((g) => {
        try {
          print(g);
        } finally {
          g.close();
        }
      })
      .catch(report);
    return 0;
  }
  using g = openGguf(parsed.model, { split: parsed.split });
  print(g);
  return 0;
}

/** `warm FILE`: prefetch() the whole file, showing progress on a terminal. */
function warm(args: string[]): number {
  const files = args.filter((a) => a !== '--no-split');
  if (files.length !== 1 || files[0]!.startsWith('--')) throw new UsageError('warm takes one FILE (and --no-split)');
  const g = openGguf(files[0]!, { mode: 'mmap', split: !args.includes('--no-split') });
  // The bar from the start: warming is the whole point of the command.
  const bar = progressBar(process.stderr.isTTY ? process.stderr : undefined, { afterMs: 0 });
  const start = performance.now();
  const rate = (bytes: number) => `${((bytes / 1e6) / Math.max(1e-3, (performance.now() - start) / 1000)).toFixed(0)} MB/s`;
  const run = async () => {
    try {
      let bytes: number;
      try {
        ({ bytes } = await g.prefetch({ onProgress: bar.update }));
      } finally {
        bar.end();
      }
      // Pages lost meanwhile (the file truncated or changed): FILE_CHANGED, not a warm file.
      g.verify();
      const { resident, total } = g.residency();
      process.stdout.write(`warmed ${formatBytes(bytes)} in ${(performance.now() - start).toFixed(0)} ms (${rate(bytes)}); ${formatBytes(resident)} of ${formatBytes(total)} resident\n`);
    } finally {
      g.close();
    }
  };
  // Every failure ends in report(): one line and the exit status, never an unhandled rejection.
  run().catch(report);
  return 0;
}

/** Runs `fn`; a command's own usage error (`usage`) becomes the CLI's (the usage shown, exit 1). */
function asUsage<T>(fn: () => T, usage: abstract new (message: string) => Error): T {
  try {
    return fn();
  } catch (error) {
    throw error instanceof usage ? new UsageError(error.message) : error;
  }
}

/** `edit FILE`: metadata edits (edit-command.ts). */
function editCommand(args: string[]): number {
  const { result, changed } = withProgressBar((bar) => asUsage(() => runEdit(args, bar.update), EditUsageError));
  process.stdout.write(`${result.path}: ${changed} change${changed === 1 ? '' : 's'}, ${result.inPlace ? `in place (${result.written} header bytes written)` : `rewritten (${formatBytes(result.written)})`}\n`);
  return 0;
}

/** `split IN OUTPREFIX`: llama-gguf-split --split. */
function splitCommand(args: string[]): number {
  const positional: string[] = [];
  let maxTensors: number | undefined;
  let maxBytes: number | undefined;
  let noTensorsInFirst = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--split-max-tensors' || arg === '--split-max-size') {
      const value = args[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value`);
      if (arg === '--split-max-tensors') {
        if (!/^[1-9]\d*$/.test(value)) throw new UsageError(`--split-max-tensors takes a whole number above 0, not '${value}'`);
        maxTensors = Number(value);
      } else {
        const m = /^([1-9]\d*)([MG]?)$/.exec(value);
        if (m === null) throw new UsageError(`--split-max-size takes N, NM or NG (M = 10^6 bytes, G = 10^9), not '${value}'`);
        maxBytes = Number(m[1]) * (m[2] === 'G' ? 1e9 : m[2] === 'M' ? 1e6 : 1);
      }
    } else if (arg === '--no-tensor-first-split') noTensorsInFirst = true;
    else if (arg.startsWith('--')) throw new UsageError(`unknown option '${arg}'`);
    else positional.push(arg);
  }
  if (positional.length !== 2) throw new UsageError('split takes IN and OUTPREFIX');
  if ((maxTensors === undefined) === (maxBytes === undefined)) throw new UsageError('split takes one of --split-max-tensors and --split-max-size');
  const paths = withProgressBar((bar) => splitModel(positional[0]!, positional[1]!, { maxTensors, maxBytes, noTensorsInFirst, onProgress: bar.update }));
  process.stdout.write(paths.map((p) => `${p}\n`).join(''));
  return 0;
}

/** `merge PART OUT`: llama-gguf-split --merge. */
function mergeCommand(args: string[]): number {
  if (args.length !== 2 || args.some((a) => a.startsWith('--'))) throw new UsageError('merge takes PART and OUT');
  if (existsSync(args[1]!)) throw new Error(`${args[1]} exists; merge writes a new file`);
  withProgressBar((bar) => mergeModel(args[0]!, args[1]!, { onProgress: bar.update }));
  process.stdout.write(`${args[1]}\n`);
  return 0;
}

/** `convert-endian FILE --to big|little --out OUT`: the model in the other byte order. */
function convertEndianCommand(args: string[]): number {
  const positional: string[] = [];
  let to: string | undefined;
  let out: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--to' || arg === '--out') {
      const value = args[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value`);
      if (arg === '--to') to = value;
      else out = value;
    } else if (arg.startsWith('--')) throw new UsageError(`unknown option '${arg}'`);
    else positional.push(arg);
  }
  if (positional.length !== 1) throw new UsageError('convert-endian takes one FILE');
  if (to !== 'big' && to !== 'little') throw new UsageError('convert-endian needs --to big or --to little');
  if (out === undefined) throw new UsageError('convert-endian needs --out OUT (it writes a new file)');
  const written = withProgressBar((bar) => convertEndian(positional[0]!, out, to, { onProgress: bar.update }));
  process.stdout.write(`${out}: ${to}-endian (${formatBytes(written)})\n`);
  return 0;
}

/** Runs `work` with a progress bar on stderr when it is a terminal, cleared at the end. */
function withProgressBar<T>(work: (bar: ProgressBar) => T): T {
  const bar = progressBar(process.stderr.isTTY ? process.stderr : undefined);
  try {
    return work(bar);
  } finally {
    bar.end();
  }
}

/** `estimate MODEL`: a table of estimateMemory figures (estimate-command.ts). */
function estimate(args: string[]): number {
  const parsed = asUsage(() => parseEstimateArgs(args), EstimateUsageError);
  if (isRemote(parsed.model)) {
    openGgufRemote(parsed.model)
      .then((g) => {
        try {
          process.stdout.write(formatEstimate(estimateRows(g, parsed), parsed.json, parsed.gpuBudget, blockCount(g)));
        } finally {
          g.close();
        }
      })
      .catch(report);
    return 0;
  }
  using g = openGguf(parsed.model);
  process.stdout.write(formatEstimate(estimateRows(g, parsed), parsed.json, parsed.gpuBudget, blockCount(g)));
  return 0;
}

/** The model's blocks (for the layers column of a GPU estimate). */
function blockCount(g: GgufFile): number {
  const arch = g.metadata.getString('general.architecture');
  return Number(g.metadata.get(`${arch}.block_count`) ?? 0);
}

/** `hash FILE`: llama-gguf-hash's lines and exit statuses (see hash-command.ts). */
function hash(args: string[]): number {
  const parsed = asUsage(() => parseHashArgs(args), HashUsageError);
  runHash(parsed, (text) => process.stdout.write(text), process.stderr.isTTY ? process.stderr : undefined)
    .then((status) => void (process.exitCode = status))
    .catch(report);
  return 0;
}

const BACKENDS: readonly DequantBackend[] = ['auto', 'native', 'wasm', 'js'];

function dequant(args: string[]): number {
  const positional: string[] = [];
  const options: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    if (arg === '--no-split') {
      options[arg] = '';
      continue;
    }
    if (arg !== '--rows' && arg !== '--out' && arg !== '--backend') throw new UsageError(`unknown option '${arg}'`);
    const value = args[++i];
    if (value === undefined) throw new UsageError(`${arg} needs a value`);
    options[arg] = value;
  }
  if (positional.length !== 2) throw new UsageError('dequant takes FILE and TENSOR');
  const backend = (options['--backend'] ?? 'auto') as DequantBackend;
  if (!BACKENDS.includes(backend)) throw new UsageError(`--backend is one of ${BACKENDS.join(', ')}`);
  try {
    const rows = options['--rows'] === undefined ? undefined : parseRows(options['--rows']);
    using g = openGguf(positional[0]!, { split: options['--no-split'] === undefined });
    if (options['--out'] !== undefined) checkOutputIsNotInput(g.parts.map((p) => p.path!), options['--out']);
    const progress = process.stderr.isTTY ? process.stderr : undefined;
    process.stdout.write(runDequant(g, { tensor: positional[1]!, rows, outPath: options['--out'], backend, progress }));
  } catch (error) {
    if (error instanceof DequantUsageError) throw new UsageError(error.message);
    throw error;
  }
  return 0;
}

/** Codes that say the work cannot be done here (this build, runtime or type), not that the file is invalid. */
const NOT_POSSIBLE_HERE: ReadonlySet<string> = new Set(['UNSUPPORTED_ARCHITECTURE', 'ADDON_UNAVAILABLE', 'NO_NATIVE_KERNEL', 'NO_WASM_KERNEL', 'NO_DEQUANTIZER', 'REMOTE_FILE', 'NOT_CACHED', 'CANNOT_REWRITE', 'CHAT_TEMPLATE_ERROR', 'UNSUPPORTED_TOKENIZER']);
/** Codes of a transfer that failed (exit 1, as an I/O error), not of an invalid file. */
const TRANSFER_FAILED: ReadonlySet<string> = new Set(['HTTP_ERROR', 'NETWORK_ERROR', 'BAD_RESPONSE', 'FILE_NOT_FOUND']);

/**
 * One line on stderr and the exit status for an error: 2 for an invalid file, 3 for what cannot
 * be done here, 1 otherwise (usage, I/O, a transfer that failed). Messages quote strings from the file (keys, tensor names): control
 * characters are escaped, so a file cannot drive the terminal.
 */
function report(error: unknown): void {
  if (error instanceof GgufError) {
    process.stderr.write(`gguf-mmap: ${error.code}: ${printable(error.message)}\n`);
    process.exitCode = NOT_POSSIBLE_HERE.has(error.code) ? 3 : TRANSFER_FAILED.has(error.code) ? 1 : 2;
  } else if (error instanceof UsageError) {
    // One line, then the command's own synopsis (the whole text is --help's).
    const help = currentCommand === undefined ? undefined : commandHelp(USAGE, currentCommand);
    const usage = help === undefined ? '' : `usage: ${help.synopsis.join('\n       ')}\n(gguf-mmap ${currentCommand} --help for more)\n`;
    process.stderr.write(`gguf-mmap: ${printable(error.message)}\n${usage}`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`gguf-mmap: ${printable(error instanceof Error ? error.message : String(error))}\n`);
    process.exitCode = 1;
  }
}

function main(): void {
  // A reader that stops early (`| head`) closes the pipe: that is the end of the output, not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    process.stderr.write(`gguf-mmap: ${error.message}\n`);
    process.exit(1);
  });
  try {
    process.exitCode = run(process.argv.slice(2));
  } catch (error) {
    report(error);
  }
}

main();
