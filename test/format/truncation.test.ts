import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { encodeGguf } from '../../lib/index.js';
import { everyCut, everyTypeSpec, sampledCuts, sweep } from '../../scripts/truncation-sweep.js';
import { sharedPath, SKIP_SHARED } from '../helpers/shared.js';

// Every cut of the writer-built file; for the real fixtures every cut in the first 64 KiB and the
// last 4 KiB and about 40,000 evenly spaced between (cutting those everywhere is 6.4 million
// parses, minutes of CPU: `npm run sweep` does it, see the README).
describe('truncation sweep: every cut opens or gives a GgufError, nothing else', () => {
  it('a writer-built file with every value type and every tensor type, both byte orders, cut everywhere', () => {
    for (const endian of ['little', 'big'] as const) {
      const bytes = encodeGguf({ ...everyTypeSpec(), endian });
      const result = sweep(bytes, everyCut(bytes.length));
      expect(result.cuts).toBe(bytes.length + 1);
      expect(result.opened, endian).toBeGreaterThan(0); // the whole file, and cuts in its final padding
      expect(Object.keys(result.failed)).toEqual(expect.arrayContaining(['TRUNCATED', 'TENSOR_OUT_OF_BOUNDS']));
    }
  });

  const files = SKIP_SHARED
    ? []
    : [...readdirSync(sharedPath('fixtures/real')).filter((f) => f.endsWith('.gguf')), 'invalid/prerelease-magic-fugg.gguf'];
  for (const file of files) {
    it.skipIf(SKIP_SHARED)(`fixtures/real/${file}`, () => {
      const bytes = new Uint8Array(readFileSync(sharedPath('fixtures/real', file)));
      const result = sweep(bytes, sampledCuts(bytes.length, 64 << 10, Math.max(16, Math.ceil(bytes.length / 40_000))));
      // A valid file opens whole; the pre-release file never does.
      expect(result.opened > 0).toBe(!file.startsWith('invalid/'));
      // Tens of thousands of parses: 5-15 s here, several times that under the sanitizers.
    }, 240_000);
  }
});
