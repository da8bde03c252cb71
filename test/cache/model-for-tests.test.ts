// modelForTests for a suite that has its model elsewhere, or must not skip (issue 27 item 33).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GgufError, modelForTests } from '../../lib/index.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir();
const cacheDir = join(dir, 'hub');
mkdirSync(cacheDir);
const offline = { cacheDir, offline: true };
const saved = process.env.GGUF_MMAP_REQUIRE_TEST_MODELS;
afterEach(() => {
  if (saved === undefined) delete process.env.GGUF_MMAP_REQUIRE_TEST_MODELS;
  else process.env.GGUF_MMAP_REQUIRE_TEST_MODELS = saved;
});

describe('modelForTests: { path }, { required }', () => {
  it('{ path } of a local file is used as it is, without the cache or the network', async () => {
    const local = join(dir, 'local.gguf');
    writeFileSync(local, 'GGUF');
    expect(await modelForTests('hf:org/repo:Q4_K_M', { ...offline, path: local })).toEqual({ path: local, skip: undefined });
    // Empty (an unset variable passed through as ''): the cache, as without it.
    expect((await modelForTests('hf:org/repo:Q4_K_M', { ...offline, path: '' })).skip).toMatch(/^skipped: /);
  });

  it('{ path } naming no file throws FILE_NOT_FOUND naming the path the user gave', async () => {
    const missing = join(dir, 'nowhere.gguf');
    await expect(modelForTests('hf:org/repo:Q4_K_M', { ...offline, path: missing })).rejects.toThrow(
      expect.objectContaining({ code: 'FILE_NOT_FOUND', message: expect.stringContaining(missing) }),
    );
    await expect(modelForTests('hf:org/repo:Q4_K_M', { ...offline, path: dir })).rejects.toBeInstanceOf(GgufError);
  });

  it('required (the option, or GGUF_MMAP_REQUIRE_TEST_MODELS=1) turns a skip into an error with its reason', async () => {
    delete process.env.GGUF_MMAP_REQUIRE_TEST_MODELS;
    expect((await modelForTests('hf:org/repo/m.gguf', offline)).skip).toMatch(/not cached and offline/);
    await expect(modelForTests('hf:org/repo/m.gguf', { ...offline, required: true })).rejects.toThrow(/hf:org\/repo\/m\.gguf is required \(\{ required: true \}\) but .*not cached and offline/);
    process.env.GGUF_MMAP_REQUIRE_TEST_MODELS = '1';
    await expect(modelForTests('hf:org/repo/m.gguf', offline)).rejects.toThrow(/GGUF_MMAP_REQUIRE_TEST_MODELS=1/);
    // The option says no whatever the environment says.
    expect((await modelForTests('hf:org/repo/m.gguf', { ...offline, required: false })).skip).toMatch(/^skipped: /);
  });
});
