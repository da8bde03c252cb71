// npm run bench: rendering real chat templates (the shared cases) with renderChatTemplate against
// @huggingface/jinja's own Template on the same inputs (the engine without our corrections and
// budgets), and what running a render in a worker thread instead would cost (why the budgets are
// counted in-process: see docs/api.md, "Chat templates").
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Template } from '@huggingface/jinja';
import { renderChatTemplate } from '../lib/index.js';
import { packageRoot } from '../lib/package-root.js';
import { median } from './stats.js';
import type { ChatTemplateCase as Case } from '../scripts/chat-cases.js';


const RUNS = 50;

function time(fn: () => unknown, runs = RUNS): number {
  return median(
    Array.from({ length: runs }, () => {
      const start = performance.now();
      fn();
      return performance.now() - start;
    }),
  );
}

async function workerCosts(template: string, context: object): Promise<{ spawn: number; roundTrip: number }> {
  const source = `
    const { parentPort } = require('node:worker_threads');
    import(${JSON.stringify(join(packageRoot(), 'node_modules/@huggingface/jinja/dist/index.js'))}).then(({ Template }) => {
      parentPort.on('message', ({ template, context }) => parentPort.postMessage(new Template(template).render(context)));
      parentPort.postMessage('ready');
    });`;
  const spawns: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    const worker = new Worker(source, { eval: true });
    await new Promise((resolve) => worker.once('message', resolve));
    worker.postMessage({ template, context });
    await new Promise((resolve) => worker.once('message', resolve));
    spawns.push(performance.now() - start);
    await worker.terminate();
  }
  const worker = new Worker(source, { eval: true });
  await new Promise((resolve) => worker.once('message', resolve));
  const trips: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    worker.postMessage({ template, context });
    await new Promise((resolve) => worker.once('message', resolve));
    trips.push(performance.now() - start);
  }
  await worker.terminate();
  return { spawn: median(spawns), roundTrip: median(trips) };
}

async function main(): Promise<void> {
  const dir = process.env.GGUF_MMAP_SHARED ? join(process.env.GGUF_MMAP_SHARED, 'chat-templates') : join(packageRoot(), '../shared/chat-templates');
  if (!existsSync(join(dir, 'cases.json'))) {
    console.log(`\nchat templates: skipped (no ${dir}/cases.json)`);
    return;
  }
  const cases = JSON.parse(readFileSync(join(dir, 'cases.json'), 'utf8')) as Case[];
  const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as Array<{ ok: boolean }>;
  console.log(`\nchat templates: one render of each template's first conversation that renders, median of ${RUNS} (after the first render, which parses)`);
  console.log('| template | chars | first render | renderChatTemplate | @huggingface/jinja Template.render | ratio |');
  console.log('|---|---:|---:|---:|---:|---:|');
  const seen = new Set<string>();
  const ratios: number[] = [];
  let sample: { template: string; context: object } | undefined;
  for (const [i, c] of cases.entries()) {
    const name = c.id.split('#')[0]!;
    if (seen.has(name) || !expected[i]!.ok) continue;
    seen.add(name);
    const options = { messages: c.messages, tools: c.tools, addGenerationPrompt: c.add_generation_prompt, bosToken: c.bos_token, eosToken: c.eos_token, variables: c.extra };
    const context = { messages: c.messages, add_generation_prompt: c.add_generation_prompt, bos_token: c.bos_token, eos_token: c.eos_token, ...(c.tools ? { tools: c.tools } : {}), ...c.extra };
    const start = performance.now();
    renderChatTemplate(c.template, options);
    const first = performance.now() - start;
    const ours = time(() => renderChatTemplate(c.template, options));
    let theirs: number | undefined;
    try {
      const t = new Template(c.template);
      t.render(context);
      theirs = time(() => t.render(context));
    } catch {
      theirs = undefined; // the engine alone cannot render this one
    }
    if (theirs !== undefined) {
      ratios.push(ours / theirs);
      sample ??= { template: c.template, context };
    }
    console.log(`| ${name} | ${c.template.length} | ${first.toFixed(2)} ms | ${ours.toFixed(3)} ms | ${theirs === undefined ? 'fails' : `${theirs.toFixed(3)} ms`} | ${theirs === undefined ? '' : `${(ours / theirs).toFixed(2)}x`} |`);
  }
  console.log(`median ratio (ours / engine alone): ${median(ratios).toFixed(2)}x`);
  const { spawn, roundTrip } = await workerCosts(sample!.template, sample!.context);
  console.log(`a render in a new worker thread (spawn, load the engine, render): ${spawn.toFixed(1)} ms; in a worker kept alive (one message there and back): ${roundTrip.toFixed(3)} ms`);
}

await main();
