// estimateMemory on a remote file: the header over HTTP (the Hub imitation), no tensor data read,
// the same figures as llama.cpp recorded for the model.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { estimateMemory, openGgufRemote } from '../../lib/index.js';
import { useHubImitation } from '../helpers/hub.js';
import { readJson, sharedPath, SKIP_SHARED } from '../helpers/shared.js';

const box = useHubImitation();

interface Row {
  model: string;
  settings: { contextSize: number; sequences: number; unifiedKv: boolean; flashAttention: boolean };
  weights: number;
  kvCache: number;
}

describe.skipIf(SKIP_SHARED)('estimateMemory on a remote file', () => {
  it('gpt-oss (sliding-window layers) from its header alone matches llama.cpp', async () => {
    const model = 'gpt-oss-moe.gguf';
    const size = readJson<Record<string, number>>(sharedPath('memory', 'sizes.json'))[model]!;
    const head = readFileSync(sharedPath('memory', 'headers', `${model}.head`));
    const bytes = new Uint8Array(size);
    bytes.set(head);
    box.hub.files.set(`org/repo/${model}`, { bytes });
    const file = await openGgufRemote(`hf:org/repo/${model}`, { backoffMs: 1 });
    try {
      for (const row of readJson<Row[]>(sharedPath('memory', 'expected.json')).filter((r) => r.model === model)) {
        const e = estimateMemory(file, { ...row.settings, cpuFeatures: ['avx2', 'avx512f'] });
        expect(e.weights).toBe(row.weights);
        expect(e.kvCache).toBe(row.kvCache);
      }
    } finally {
      file.close();
    }
    const fetched = box.hub.log.filter((r) => r.server === 'cdn').reduce((a, r) => a + r.bytes, 0);
    expect(fetched).toBeLessThan(size); // the header (in its first 4 MiB read), not the whole file
  });
});
