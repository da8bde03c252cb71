// npm run bench: memory of N worker processes serving one model. Each process opens the model and
// reads every page of every tensor, then holds it; the sum of their proportional set sizes (Pss,
// /proc/PID/smaps_rollup: shared pages divided among the processes that map them) is compared with
// N processes that fs.readFileSync the model. Mapped: about one model in total; copies: N models.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGguf } from '../lib/index.js';
import { ensureTinyllamaDense } from '../scripts/tinyllama-shape.js';
import { findTinyllama } from '../scripts/tinyllama.js';

const PROCESSES = 4;
type How = 'mmap' | 'readFileSync';

/** In a child: load the model `how`, read all of it, say so, and wait to be killed. */
function hold(how: How, path: string): void {
  let sum = 0;
  let keep: unknown;
  if (how === 'mmap') {
    const g = openGguf(path);
    for (const t of g.tensors) {
      const bytes = t.bytes;
      for (let i = 0; i < bytes.length; i += 4096) sum += bytes[i]!;
    }
    keep = g;
  } else {
    const bytes = readFileSync(path);
    for (let i = 0; i < bytes.length; i += 4096) sum += bytes[i]!;
    keep = bytes;
  }
  (globalThis as { kept?: unknown }).kept = keep;
  process.stdout.write(`ready ${sum}\n`);
  setInterval(() => {}, 1 << 30);
}

function pssBytes(pid: number): number {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  if (m === null) throw new Error(`no Pss for ${pid}`);
  return Number(m[1]) * 1024;
}

async function run(how: How, path: string): Promise<{ total: number; each: number[] }> {
  const children: ChildProcess[] = [];
  try {
    const ready = [];
    for (let i = 0; i < PROCESSES; i++) {
      const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--hold', how, path], { stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      ready.push(
        new Promise<void>((resolve, reject) => {
          child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
          child.on('exit', (code) => reject(new Error(`${how} child exited with ${code}`)));
        }),
      );
    }
    await Promise.all(ready);
    const each = children.map((c) => pssBytes(c.pid!));
    return { total: each.reduce((a, b) => a + b, 0), each };
  } finally {
    for (const c of children) c.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  const [flag, how, file] = process.argv.slice(2);
  if (flag === '--hold') return hold(how as How, file!);
  const path = findTinyllama() ?? ensureTinyllamaDense(join(tmpdir(), 'gguf-mmap-bench-tinyllama-dense.gguf'));
  const size = statSync(path).size;
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
  console.log(`\nmemory of ${PROCESSES} processes each reading the whole model (${mib(size)}), Pss summed (/proc/PID/smaps_rollup)`);
  console.log('| each process | Pss, sum | vs file size | per process |');
  console.log('|---|---:|---:|---:|');
  const results: Record<How, number> = { mmap: 0, readFileSync: 0 };
  for (const how of ['mmap', 'readFileSync'] as const) {
    const { total, each } = await run(how, path);
    results[how] = total;
    console.log(`| ${how === 'mmap' ? '`openGguf` + read every tensor' : '`fs.readFileSync`'} | ${mib(total)} | ${(total / size).toFixed(2)}x | ${each.map(mib).join(', ')} |`);
  }
  console.log(`mapped processes share one copy: ${(results.readFileSync / results.mmap).toFixed(1)}x less memory than ${PROCESSES} copies`);
}

await main();
