// A newcomer's first day with the CLI (issue 27, items 31-32): help per command, short usage
// errors, a suggestion for a misspelt command, and URLs given to commands that take local files.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GgufError, openGguf } from '../../lib/index.js';
import { commandHelp, commandNames } from '../../lib/cli/usage.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const whole = cli('--help').stdout;
const commands = commandNames(whole);

describe('gguf-mmap COMMAND --help, and usage errors', () => {
  it('every command the usage text lists answers --help with its synopsis and paragraph, exit 0', () => {
    expect(commands).toEqual(expect.arrayContaining(['inspect', 'warm', 'pull', 'cache', 'dequant', 'edit', 'split', 'merge', 'convert-endian', 'hash']));
    for (const command of commands) {
      const r = cli(command, '--help');
      expect(r.status, command).toBe(0);
      expect(r.stdout.split('\n')[0], command).toBe(`usage: ${commandHelp(whole, command)!.synopsis[0]}`);
      expect(r.stdout, command).toMatch(new RegExp(`\\n  ${command}\\b`));
      // Its own part only: shorter than the whole text, and no other command's paragraph.
      expect(r.stdout.length, command).toBeLessThan(whole.length / 2);
      expect(cli('help', command).stdout).toBe(r.stdout);
    }
    // Two processes a command: under wine each start takes seconds.
  }, 240_000);

  it('every option docs/cli.md lists for a command is in that command\'s --help (the two cannot drift apart)', () => {
    const doc = readFileSync(join(import.meta.dirname, '../../docs/cli.md'), 'utf8');
    const synopsis = /```\n(gguf-mmap [\s\S]*?)```/.exec(doc)![1]!;
    const missing: string[] = [];
    let checked = 0;
    for (const line of synopsis.split('\n')) {
      const command = /^gguf-mmap ([a-z][a-z-]*)/.exec(line)?.[1];
      if (command === undefined) continue;
      const help = cli(command, '--help').stdout;
      for (const option of line.matchAll(/--[a-z][a-z0-9-]*/g)) {
        checked++;
        if (!new RegExp(`${option[0]}(?![a-z0-9-])`).test(help)) missing.push(`${command} ${option[0]}`);
      }
    }
    expect(checked).toBeGreaterThan(40);
    expect(missing).toEqual([]);
  });

  it('a usage error is one line and that command\'s usage (not the whole text), exit 1', () => {
    for (const [args, command] of [[['dequant', 'only-one-arg'], 'dequant'], [['edit', 'f.gguf', '--bogus'], 'edit'], [['hash'], 'hash'], [['inspect', '--nope'], 'inspect']] as const) {
      const r = cli(...args);
      expect(r.status, args.join(' ')).toBe(1);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^gguf-mmap: /);
      expect(lines[1]).toBe(`usage: ${commandHelp(whole, command)!.synopsis[0]}`);
      expect(lines.at(-1)).toBe(`(gguf-mmap ${command} --help for more)`);
      expect(lines.length).toBeLessThan(6);
    }
  });

  it('a misspelt command gets "did you mean", in one line', () => {
    for (const [typed, meant] of [['inspct', 'inspect'], ['hsah', 'hash'], ['dequnat', 'dequant'], ['convert', 'convert-endian']]) {
      const r = cli(typed!, 'x');
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(`gguf-mmap: unknown command '${typed}' (did you mean '${meant}'?); gguf-mmap --help lists the commands\n`);
    }
    expect(cli('frobnicate').stderr).toBe("gguf-mmap: unknown command 'frobnicate'; gguf-mmap --help lists the commands\n");
  });
});

describe('URLs given to what takes local files', () => {
  it('dequant, hash, warm, split (exit 3) and openGguf() say that URLs go through openGgufRemote / inspect / pull, never ENOENT on a mangled path', () => {
    for (const args of [['dequant', 'http://127.0.0.1:9/m.gguf', 't'], ['hash', 'hf:org/repo/m.gguf'], ['warm', 'https://example.invalid/m.gguf'], ['split', 'hf:org/repo:Q4_K_M', 'out', '--split-max-tensors', '2']]) {
      const r = cli(...args);
      expect(r.status, args.join(' ')).toBe(3);
      expect(r.stderr).toMatch(/^gguf-mmap: REMOTE_FILE: .* is a URL, .*openGgufRemote.*pull/);
      expect(r.stderr).not.toContain('ENOENT');
    }
    for (const url of ['https://host/m.gguf', 'hf:org/repo/m.gguf', new URL('http://host/m.gguf')]) {
      let error: unknown;
      try {
        openGguf(url as string);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(GgufError);
      expect((error as GgufError).code).toBe('REMOTE_FILE');
      expect((error as GgufError).message).toContain('openGgufRemote');
    }
  });
});
