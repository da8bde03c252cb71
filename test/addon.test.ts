import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonPath } from '../lib/native.js';

describe('native addon', () => {
  it('loads the build that GGUF_MMAP_ADDON names, else node-gyp build/Release, else the prebuilt binary', () => {
    const path = addonPath();
    expect(existsSync(path)).toBe(true);
    const wanted = process.env.GGUF_MMAP_ADDON;
    if (wanted) expect(resolve(path)).toBe(resolve(wanted));
    else expect(path).toMatch(/build\/Release\/gguf_mmap\.node$|prebuilds\/linux-x64\/gguf-mmap\.glibc\.node$/);
    console.info(`addon under test: ${path}`);
  });
});
