// npm run sweep: the full truncation sweep, every cut of every real fixture in ../shared and of
// the writer-built every-type file (both byte orders), one file per child process, as many at once
// as there are cores. Prints the counts per file; exits 1 if any cut gives anything but success
// or a GgufError.
import { fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeGguf } from '../lib/index.js';
import { everyCut, everyTypeSpec, sweep, type SweepResult } from './truncation-sweep.js';

const here = fileURLToPath(import.meta.url);

function corpus(): Array<{ name: string; bytes: () => Uint8Array }> {
  const shared = process.env.GGUF_MMAP_SHARED ?? resolve(here, '../../../../shared');
  const real = join(shared, 'fixtures/real');
  const files = [...readdirSync(real).filter((f) => f.endsWith('.gguf')), 'invalid/prerelease-magic-fugg.gguf'];
  return [
    { name: 'writer every-type (little-endian)', bytes: () => encodeGguf(everyTypeSpec()) },
    { name: 'writer every-type (big-endian)', bytes: () => encodeGguf({ ...everyTypeSpec(), endian: 'big' }) },
    ...files.map((f) => ({ name: `real/${f}`, bytes: () => new Uint8Array(readFileSync(join(real, f))) })),
  ];
}

async function main(): Promise<void> {
  const child = process.argv.indexOf('--child');
  if (child >= 0) {
    const entry = corpus()[Number(process.argv[child + 1])]!;
    const bytes = entry.bytes();
    const result = sweep(bytes, everyCut(bytes.length));
    process.send!({ name: entry.name, ...result });
    return;
  }
  const entries = corpus();
  const started = Date.now();
  let next = 0;
  let failures = 0;
  let totalCuts = 0;
  const runOne = async (): Promise<void> => {
    while (next < entries.length) {
      const index = next++;
      const result = await new Promise<(SweepResult & { name: string }) | string>((done) => {
        const proc = fork(here, ['--child', String(index)], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
        let stderr = '';
        let reported: SweepResult & { name: string };
        proc.stderr!.on('data', (d) => (stderr += d));
        proc.on('message', (m) => (reported = m as never));
        proc.on('exit', (code, signal) => done(code === 0 && reported ? reported : `${entries[index]!.name}: exit ${code ?? signal}\n${stderr}`));
      });
      if (typeof result === 'string') {
        failures++;
        console.log(`FAIL ${result}`);
        continue;
      }
      totalCuts += result.cuts;
      console.log(`${result.name}: ${result.cuts} cuts, ${result.opened} opened, failed ${JSON.stringify(result.failed)}`);
    }
  };
  await Promise.all(Array.from({ length: availableParallelism() }, runOne));
  console.log(`${totalCuts} cuts of ${entries.length} files in ${((Date.now() - started) / 1000).toFixed(0)} s: ${failures === 0 ? 'every cut opened or gave a GgufError' : `${failures} files FAILED`}`);
  process.exitCode = failures === 0 ? 0 : 1;
}

await main();
