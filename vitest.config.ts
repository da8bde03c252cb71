import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Files share no state, but several map large sparse files: two at a time suits 2 cores.
    maxWorkers: 2,
  },
});
