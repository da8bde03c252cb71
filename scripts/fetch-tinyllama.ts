// npm run fetch:tinyllama: downloads the real TinyLlama Q4_K_M model into the Hugging Face cache
// with pullModel (resumed, sha256-checked, a progress bar), where modelForTests, the TinyLlama
// test and the benchmarks find it. The path is printed last.
import { pullModel } from '../lib/cache/pull.js';
import { progressBar } from '../lib/cli/progress-bar.js';
import { TINYLLAMA_URI } from './tinyllama.js';

async function main(): Promise<void> {
  const bar = progressBar(process.stderr.isTTY ? process.stderr : undefined, { afterMs: 0 });
  try {
    const pulled = await pullModel(TINYLLAMA_URI, { onProgress: (done, total) => bar.update(done, total) });
    bar.end();
    console.log(pulled.path);
  } catch (error) {
    bar.end();
    throw error;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`fetch:tinyllama: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
