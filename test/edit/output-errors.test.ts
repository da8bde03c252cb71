// A writer's error names the output the user gave, never the hidden temporary file written beside
// it (issue 34, item 31): `split`, `edit`, `dequant --out` and `convert-endian` into a folder that
// is not there, and an output that is a folder.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const SAMPLE = join(import.meta.dirname, '../../dist/sample.gguf');

function cli(cwd: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd });
  return { status: r.status, stderr: r.stderr };
}

describe('writers\' errors name the output asked for', () => {
  it('into a folder that does not exist: ENOENT of that output, exit 1', () => {
    const cwd = tempDir('gguf-mmap-output-errors-');
    const cases: [string[], string][] = [
      [['split', SAMPLE, 'nodir/x', '--split-max-tensors', '3'], 'nodir/x-00001-of-00002.gguf'],
      [['edit', SAMPLE, '--set', 'general.name=x', '--out', 'nodir/x.gguf'], 'nodir/x.gguf'],
      [['dequant', SAMPLE, 'token_embd.weight', '--out', 'nodir/x.f32'], 'nodir/x.f32'],
      [['convert-endian', SAMPLE, '--to', 'big', '--out', 'nodir/x.gguf'], 'nodir/x.gguf'],
    ];
    for (const [args, output] of cases) {
      const r = cli(cwd, ...args);
      expect(r.status, args[0]).toBe(1);
      // (On Windows a writer may name it resolved against the working folder: the same output.)
      const named = process.platform === 'win32' ? `(?:[A-Za-z]:\\\\.*\\\\)?${output.replace(/[.]/g, '\\.')}` : output.replace(/[.]/g, '\\.');
      expect(r.stderr, args[0]).toMatch(new RegExp(`^gguf-mmap: ENOENT: no such file or directory, open '${named}'\n$`));
      expect(r.stderr, args[0]).not.toMatch(/\.tmp/);
    }
  });

  it('onto a folder: the rename\'s error, of that output', () => {
    const cwd = tempDir('gguf-mmap-output-errors-');
    mkdirSync(join(cwd, 'x.gguf'));
    const r = cli(cwd, 'convert-endian', SAMPLE, '--to', 'big', '--out', 'x.gguf');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^gguf-mmap: E[A-Z]+: .*'x\.gguf'\n$/);
    expect(r.stderr).not.toMatch(/\.tmp/);
  });
});
