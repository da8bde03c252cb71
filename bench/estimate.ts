// Memory estimate: how long estimateMemory and largestContext take on the headers of real model
// shapes (Llama 3.1 8B, Qwen3 30B-A3B, Gemma 3 27B; tensors listed, no data, written with the
// project's writer), the compute buffer being ggml's allocator replayed over the whole graph; with
// one CUDA GPU, estimateMemory at half the layers and fitGpuLayers (the scheduler replayed too).
// In the same run, when node-llama-cpp is installed in the directory GGUF_MMAP_BENCH_DEPS names
// (default /work/nlc), its own estimate (GgufInsights.estimateContextResourceRequirements) on the
// same file; skipped otherwise.
//
// node dist/bench/estimate.js
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { estimateMemory, fitGpuLayers, largestContext, openGguf, writeGgufFile } from '../lib/index.js';
import { MODEL_SHAPES, modelShapeSpec } from '../scripts/model-shapes.js';
import { median } from './stats.js';

function time<T>(fn: () => T, runs: number): { ms: number; value: T } {
  let value = fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    value = fn();
    samples.push(performance.now() - t0);
  }
  return { ms: median(samples), value };
}

const DEPS = process.env.GGUF_MMAP_BENCH_DEPS ?? '/work/nlc';
async function loadNodeLlamaCpp(): Promise<any> {
  try {
    const entry = createRequire(join(DEPS, 'package.json')).resolve('node-llama-cpp');
    return await import(pathToFileURL(entry).href);
  } catch {
    return undefined;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-bench-estimate-'));
try {
  const nlc = existsSync(DEPS) ? await loadNodeLlamaCpp() : undefined;
  const llama = nlc ? await nlc.getLlama({ gpu: false, build: 'never' }) : undefined;
  console.log('memory estimate (median of 20 runs)');
  for (const s of MODEL_SHAPES) {
    const path = join(dir, `${s.arch}.gguf`);
    // tensors without data are left sparse: the estimate reads only the header
    writeGgufFile(path, modelShapeSpec(s));
    const file = openGguf(path);
    const options = { contextSize: 32768, sequences: 4, cpuFeatures: [] as string[] };
    const one = time(() => estimateMemory(file, options), 20);
    const inverse = time(() => largestContext(file, 24 * 2 ** 30, { sequences: 4, cpuFeatures: [] }), 5);
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
    let line = `  ${s.name.padEnd(14)} estimateMemory ${one.ms.toFixed(2)} ms (32768 tokens, 4 sequences: KV ${mib(one.value.kvCache)}, compute ${mib(one.value.compute)}); largestContext(24 GiB) ${inverse.ms.toFixed(1)} ms -> ${inverse.value}`;
    if (llama) {
      const insights = await nlc.GgufInsights.from(await nlc.readGgufFileInfo(path), llama);
      // node-llama-cpp's contextSize is per sequence
      const theirs = time(() => insights.estimateContextResourceRequirements({ contextSize: 8192, sequences: 4, modelGpuLayers: 0, batchSize: 512, flashAttention: true }).cpuRam as number, 20);
      line += `; node-llama-cpp GgufInsights ${theirs.ms.toFixed(2)} ms (${mib(theirs.value)} for the context, ours ${mib(one.value.kvCache + one.value.compute + one.value.output)})`;
    }
    console.log(line);
    // with one CUDA GPU: half the layers offloaded, and the most layers that fit in 8 and 24 GiB
    const half = Math.ceil((s.layers + 1) / 2);
    const gpu = time(() => estimateMemory(file, { contextSize: 32768, gpu: 'cuda', gpuLayers: half }), 20);
    const fit8 = time(() => fitGpuLayers(file, 8 * 2 ** 30, { contextSize: 32768, gpu: 'cuda' }), 10);
    const fit24 = time(() => fitGpuLayers(file, 24 * 2 ** 30, { contextSize: 32768, gpu: 'cuda' }), 10);
    console.log(`  ${''.padEnd(14)} with a CUDA GPU: estimateMemory ${gpu.ms.toFixed(2)} ms (${half} layers: GPU ${mib(gpu.value.gpuTotal!)}); fitGpuLayers(8 GiB) ${fit8.ms.toFixed(1)} ms -> ${fit8.value}, (24 GiB) ${fit24.ms.toFixed(1)} ms -> ${fit24.value} of ${s.layers + 1}`);
    file.close();
  }
  if (!llama) console.log(`  (node-llama-cpp not found under ${DEPS}: its estimate not compared)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
