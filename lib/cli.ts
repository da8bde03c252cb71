#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { GgufError } from './errors.js';
import { openGguf } from './gguf-file.js';
import { inspectJson, inspectText } from './inspect.js';
import { samplePath } from './sample.js';

const USAGE = `usage: gguf-mmap inspect [FILE] [--json] [--sha256]

  inspect [FILE]   summarize a GGUF file: version, metadata, tensor table, totals.
                   Without FILE, inspects the embedded sample model.
  --json           print one JSON object instead (every metadata value in full)
  --sha256         with --json, add each tensor's sha256

exit status: 0 ok, 1 usage or I/O error, 2 invalid GGUF file`;

class UsageError extends Error {}

function run(argv: string[]): number {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(USAGE + '\n');
    return command === undefined ? 1 : 0;
  }
  if (command !== 'inspect') throw new UsageError(`unknown command '${command}'`);
  const flags = new Set(rest.filter((a) => a.startsWith('--')));
  const files = rest.filter((a) => !a.startsWith('--'));
  for (const flag of flags) if (flag !== '--json' && flag !== '--sha256') throw new UsageError(`unknown option '${flag}'`);
  if (files.length > 1) throw new UsageError('inspect takes one FILE');
  if (flags.has('--sha256') && !flags.has('--json')) throw new UsageError('--sha256 goes with --json');
  const path = files[0] ?? samplePath();
  if (files[0] === undefined && !existsSync(path)) throw new Error(`the embedded sample is missing (${path}); run npm run build`);

  using g = openGguf(path);
  const out = flags.has('--json') ? JSON.stringify(inspectJson(g, { sha256: flags.has('--sha256') })) + '\n' : inspectText(g, path);
  process.stdout.write(out);
  return 0;
}

function main(): void {
  try {
    process.exitCode = run(process.argv.slice(2));
  } catch (error) {
    if (error instanceof GgufError) {
      process.stderr.write(`gguf-mmap: ${error.code}: ${error.message}\n`);
      process.exitCode = 2;
    } else if (error instanceof UsageError) {
      process.stderr.write(`gguf-mmap: ${error.message}\n${USAGE}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`gguf-mmap: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    }
  }
}

main();
