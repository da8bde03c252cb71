// `gguf-mmap tokenize`: ids and pieces under a file's vocabulary, the output forms, stdin, escaping,
// and the exit status of an unsupported vocabulary.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeGguf, type GgufWriteValue } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';

const CLI = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
const dir = tempDir();

function cli(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', input });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const str = (value: string): GgufWriteValue => ({ type: 'STRING', value });
const HEX = (b: number) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
const words = ['▁', 'h', 'i', '▁h', '▁hi', '\x1b[2J'];
const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => HEX(b)), ...words];
const model = join(dir, 'spm.gguf');
writeFileSync(
  model,
  encodeGguf({
    metadata: {
      'tokenizer.ggml.model': str('llama'),
      'tokenizer.ggml.tokens': { type: 'ARRAY', arrayType: 'STRING', value: tokens },
      'tokenizer.ggml.scores': { type: 'ARRAY', arrayType: 'FLOAT32', value: tokens.map(() => 0) },
      'tokenizer.ggml.token_type': { type: 'ARRAY', arrayType: 'INT32', value: tokens.map((t, i) => (i === 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : t === '\x1b[2J' ? 4 : 1)) },
    },
  }),
);

describe('gguf-mmap tokenize', () => {
  it('ids and pieces, --ids, --json, --count of stdin with --no-special', () => {
    const hi = tokens.indexOf('▁hi');
    expect(cli(['tokenize', model, 'hi']).stdout).toBe(`  1  '<s>'\n${hi}  ' hi'\n`);
    expect(cli(['tokenize', model, 'hi', '--ids']).stdout).toBe(`1 ${hi}\n`);
    expect(JSON.parse(cli(['tokenize', model, 'hi', '--json']).stdout)).toEqual({ count: 2, ids: [1, hi], pieces: ['<s>', ' hi'] });
    expect(cli(['tokenize', model, '-', '--count', '--no-special'], 'hi').stdout).toBe('1\n');
  });

  it('escapes control characters in pieces and shows bytes of a split character', () => {
    const r = cli(['tokenize', model, 'é\x1b[2J', '--no-special']);
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain('\x1b');
    expect(r.stdout).toContain('\\u001b[2J');
    expect(r.stdout).toContain('<0xC3>');
  });

  it('an unsupported vocabulary is exit 3; no model is a usage error', () => {
    const other = join(dir, 'other.gguf');
    writeFileSync(other, encodeGguf({ metadata: { 'tokenizer.ggml.model': str('plamo2'), 'tokenizer.ggml.tokens': { type: 'ARRAY', arrayType: 'STRING', value: ['a'] } } }));
    const r = cli(['tokenize', other, 'x']);
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('UNSUPPORTED_TOKENIZER');
    expect(cli(['tokenize']).status).toBe(1);
  });
});
