import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonPath } from '../lib/native.js';

describe('native addon', () => {
  it('loads the build that GGUF_MMAP_ADDON names, else node-gyp build/Release', () => {
    const path = addonPath();
    expect(existsSync(path)).toBe(true);
    const wanted = process.env.GGUF_MMAP_ADDON;
    if (wanted) expect(resolve(path)).toBe(resolve(wanted));
    else expect(path).toMatch(/build\/Release\/gguf_mmap\.node$/);
    console.info(`addon under test: ${path}`);
  });
});
