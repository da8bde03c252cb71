import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GgufError, openGguf } from '../../lib/index.js';
import { exercise } from '../../scripts/exercise.js';
import { loadSeeds, makeCase } from '../../scripts/fuzz-cases.js';
import { runFuzz } from '../../scripts/fuzz.js';
import { SHARED_DIR } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

// The fuzzer (scripts/fuzz.ts) run as CI's fixed-seed pass, and the cases it once found, kept.
// Its children run the compiled dist/scripts/fuzz.js, which `npm test` builds first.

const CI_SEED = 20261130;
const CI_CASES = 5000;

describe('fuzzing', () => {
  it(`a fixed-seed pass of ${CI_CASES} mutated files: each opens or gives a GgufError; no crash, hang or runaway memory`, async () => {
    const report = await runFuzz({ iterations: CI_CASES, seed: CI_SEED, sharedDir: SHARED_DIR, timeoutMs: 20_000 });
    expect(report.bugs).toEqual([]);
    expect(report.cases).toBe(CI_CASES);
    // The mutations reach deep: cases of many kinds get through, and many checks fire.
    expect(report.opened).toBeGreaterThan(CI_CASES / 50);
    expect(Object.keys(report.rejected).length).toBeGreaterThan(12);
  }, 300_000);

  // Regressions: (seed, case) pairs the fuzzer once failed on, rebuilt from their numbers.
  const regressions: Array<{ seed: number; index: number; was: string }> = [
    // An empty file (a fixture cut to 0 bytes) gave a system error EINVAL, not a GgufError.
    { seed: 1, index: 545, was: 'EINVAL: file is empty' },
    { seed: 1, index: 1855, was: 'EINVAL: file is empty' },
  ];
  for (const { seed, index, was } of regressions) {
    it(`seed ${seed} case ${index} (was: ${was})`, () => {
      const { bytes } = makeCase(loadSeeds(SHARED_DIR), seed, index);
      const path = join(tempDir(), 'case.gguf');
      writeFileSync(path, bytes);
      try {
        using g = openGguf(path);
        exercise(g);
      } catch (error) {
        expect(error).toBeInstanceOf(GgufError);
      }
    });
  }
});
