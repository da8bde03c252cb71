// npm run fuzz -- --iterations N --seed S [--jobs J] [--timeout-ms T] [--memory-mb M] [--save DIR]
//
// Mutates valid GGUF files (bit flips, forged counts, lengths, types, dims, offsets, alignment,
// splices of two files, truncation, inserted and deleted bytes) and runs each case through
// openGguf and full metadata and tensor access, in child processes, so that a crash or a hang is
// caught and blamed on its case. A case passes when it opens (and reads) or fails with a
// GgufError; anything else (another exception, a crash, more than T ms, more than M MiB) is a
// bug. Cases are rebuilt from (seed, index): `--save DIR` writes each failing case's bytes there.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgufError, openGguf } from '../lib/index.js';
import { packageRoot } from '../lib/package-root.js';
import { exercise } from './exercise.js';
import { loadSeeds, makeCase } from './fuzz-cases.js';

export interface FuzzOptions {
  iterations: number;
  seed: number;
  jobs?: number;
  timeoutMs?: number;
  memoryMb?: number;
  saveDir?: string;
  sharedDir?: string;
  onProgress?: (done: number, total: number) => void;
}

export interface FuzzBug {
  index: number;
  label: string;
  problem: string;
}

export interface FuzzReport {
  cases: number;
  opened: number;
  /** GgufError codes and how many cases gave each. */
  rejected: Record<string, number>;
  bugs: FuzzBug[];
  seconds: number;
}

type CaseOutcome = { index: number; outcome: 'opened' | string } | { index: number; bug: string; label: string };

// ---- child: runs the cases it is sent, one report per case ----

function runCase(path: string, bytes: Uint8Array, memoryLimit: number): string {
  writeFileSync(path, bytes);
  let outcome: string;
  try {
    const g = openGguf(path);
    try {
      exercise(g);
    } finally {
      g.close();
    }
    g.close(); // twice is allowed
    outcome = 'opened';
  } catch (error) {
    if (!(error instanceof GgufError)) throw error;
    outcome = error.code;
  }
  const { rss, arrayBuffers } = process.memoryUsage();
  if (rss > memoryLimit || arrayBuffers > memoryLimit) throw new Error(`memory bound exceeded: rss ${rss >> 20} MiB, arrayBuffers ${arrayBuffers >> 20} MiB`);
  return outcome;
}

function child(seed: number, memoryLimit: number, sharedDir: string | undefined): void {
  const seeds = loadSeeds(sharedDir);
  const path = join(tmpdir(), `gguf-mmap-fuzz-${process.pid}.gguf`);
  process.on('message', (msg: { from: number; to: number } | 'stop') => {
    if (msg === 'stop') {
      rmSync(path, { force: true });
      process.exit(0);
    }
    for (let index = msg.from; index < msg.to; index++) {
      const { bytes, label } = makeCase(seeds, seed, index);
      let report: CaseOutcome;
      try {
        report = { index, outcome: runCase(path, bytes, memoryLimit) };
      } catch (error) {
        report = { index, bug: error instanceof Error ? `${error.name}: ${error.message}` : String(error), label };
      }
      process.send!(report);
    }
    process.send!({ chunkDone: msg.to });
  });
  process.send!('ready');
}

// ---- parent: hands out chunks, watches for crashes and hangs ----

const CHUNK = 250;

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const jobs = options.jobs ?? availableParallelism();
  const timeoutMs = options.timeoutMs ?? 10_000;
  const memoryMb = options.memoryMb ?? 1024;
  const script = join(packageRoot(), 'dist/scripts/fuzz.js');
  const report: FuzzReport = { cases: 0, opened: 0, rejected: {}, bugs: [], seconds: 0 };
  // The parent rebuilds a case only to save or label a bug: the seed files are loaded then.
  let seeds: ReturnType<typeof loadSeeds> | undefined;
  const caseOf = (index: number) => makeCase((seeds ??= loadSeeds(options.sharedDir)), options.seed, index);
  let nextChunk = 0;

  const record = (r: CaseOutcome): void => {
    report.cases++;
    if ('bug' in r) {
      report.bugs.push({ index: r.index, label: r.label, problem: r.bug });
      if (options.saveDir) {
        mkdirSync(options.saveDir, { recursive: true });
        writeFileSync(join(options.saveDir, `seed${options.seed}-case${r.index}.gguf`), caseOf(r.index).bytes);
      }
    } else if (r.outcome === 'opened') {
      report.opened++;
    } else {
      report.rejected[r.outcome] = (report.rejected[r.outcome] ?? 0) + 1;
    }
    options.onProgress?.(report.cases, options.iterations);
  };

  const worker = (): Promise<void> =>
    new Promise((done) => {
      let proc: ChildProcess;
      let inFlight = -1; // the case the child is working on
      let end = -1; // end of its chunk
      let lastReport = Date.now();
      const sendChunk = (): void => {
        if (nextChunk >= options.iterations) {
          proc.send('stop');
          return;
        }
        inFlight = nextChunk;
        end = Math.min(options.iterations, nextChunk + CHUNK);
        nextChunk = end;
        lastReport = Date.now();
        proc.send({ from: inFlight, to: end });
      };
      const start = (resumeAt?: number): void => {
        proc = fork(script, ['--child', String(options.seed), String(memoryMb << 20), options.sharedDir ?? ''], {
          execArgv: [`--max-old-space-size=${memoryMb}`],
          stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        });
        let stderr = '';
        proc.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
        proc.on('message', (m: 'ready' | CaseOutcome | { chunkDone: number }) => {
          lastReport = Date.now();
          if (m === 'ready') {
            if (resumeAt !== undefined && resumeAt < end) {
              inFlight = resumeAt;
              proc.send({ from: resumeAt, to: end });
            } else {
              sendChunk();
            }
          } else if ('chunkDone' in m) {
            sendChunk();
          } else {
            record(m);
            inFlight = m.index + 1;
          }
        });
        const watchdog = setInterval(() => {
          if (Date.now() - lastReport > timeoutMs && inFlight >= 0 && inFlight < end) proc.kill('SIGKILL');
        }, 100);
        proc.on('exit', (code, signal) => {
          clearInterval(watchdog);
          if (inFlight >= 0 && inFlight < end) {
            // The child died or hung on case `inFlight`: blame it, carry on after it.
            const hung = Date.now() - lastReport > timeoutMs;
            record({ index: inFlight, bug: hung ? `timeout: over ${timeoutMs} ms` : `crash: exit ${code ?? signal} ${stderr.trim()}`, label: caseOf(inFlight).label });
            start(inFlight + 1);
            return;
          }
          done();
        });
      };
      start();
    });

  await Promise.all(Array.from({ length: jobs }, worker));
  report.seconds = (Date.now() - started) / 1000;
  return report;
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    child(Number(args[1]), Number(args[2]), args[3] || undefined);
    return;
  }
  const iterations = Number(flag(args, '--iterations') ?? 1000);
  const seed = Number(flag(args, '--seed') ?? 1);
  if (!Number.isSafeInteger(iterations) || iterations < 0 || !Number.isSafeInteger(seed)) {
    console.error('usage: npm run fuzz -- --iterations N --seed S [--jobs J] [--timeout-ms T] [--memory-mb M] [--save DIR]');
    process.exitCode = 1;
    return;
  }
  const sharedDir = process.env.GGUF_MMAP_SHARED ?? resolve(packageRoot(), '../shared');
  const tty = process.stderr.isTTY;
  const report = await runFuzz({
    iterations,
    seed,
    jobs: flag(args, '--jobs') ? Number(flag(args, '--jobs')) : undefined,
    timeoutMs: flag(args, '--timeout-ms') ? Number(flag(args, '--timeout-ms')) : undefined,
    memoryMb: flag(args, '--memory-mb') ? Number(flag(args, '--memory-mb')) : undefined,
    saveDir: flag(args, '--save'),
    sharedDir,
    onProgress: (done, total) => {
      if (tty && (done % 500 === 0 || done === total)) process.stderr.write(`\r${done}/${total}`);
    },
  });
  if (tty) process.stderr.write('\n');
  console.log(`seed ${seed}: ${report.cases} cases in ${report.seconds.toFixed(1)} s: ${report.opened} opened, rejected ${JSON.stringify(report.rejected)}`);
  for (const bug of report.bugs) console.log(`BUG case ${bug.index} (${bug.label}): ${bug.problem}`);
  console.log(report.bugs.length === 0 ? 'no bugs: every case opened or gave a GgufError' : `${report.bugs.length} bugs`);
  process.exitCode = report.bugs.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
