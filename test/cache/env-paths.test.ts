// HF_HOME, HF_HUB_CACHE and HF_TOKEN_PATH as huggingface_hub reads them:
// os.path.expandvars(os.path.expanduser(value)) (issue 27, item 7).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hubCacheDir } from '../../lib/index.js';
import { expandEnvPath } from '../../lib/remote/env-path.js';
import { hfHome, hubToken } from '../../lib/remote/hub.js';
import { tempDir } from '../helpers/tmp.js';

const NAMES = ['HOME', 'HF_HOME', 'HF_HUB_CACHE', 'HUGGINGFACE_HUB_CACHE', 'HF_TOKEN', 'HF_TOKEN_PATH', 'XDG_CACHE_HOME', 'GGUF_MMAP_TEST_BASE'] as const;
let saved: Record<string, string | undefined>;
let home: string;
beforeEach(() => {
  saved = Object.fromEntries(NAMES.map((n) => [n, process.env[n]]));
  for (const n of NAMES) delete process.env[n];
  home = tempDir('gguf-mmap-home-');
  process.env.HOME = home;
});
afterEach(() => {
  for (const n of NAMES) {
    if (saved[n] === undefined) delete process.env[n];
    else process.env[n] = saved[n];
  }
});

describe('paths from the environment', () => {
  it("HF_HOME='~/hf' is under the home folder, not a folder named ~ in the working directory", () => {
    process.env.HF_HOME = '~/hf';
    expect(hfHome()).toBe(`${home}/hf`); // as Python's expanduser gives it, on Windows too
    expect(hubCacheDir()).toBe(join(home, 'hf', 'hub'));
    process.env.HF_HOME = '~';
    expect(hfHome()).toBe(home);
  });

  it('$VAR and ${VAR} are expanded in HF_HOME and HF_HUB_CACHE; unset names and unknown users stay as written', () => {
    process.env.GGUF_MMAP_TEST_BASE = '/data/models';
    process.env.HF_HOME = '$GGUF_MMAP_TEST_BASE/hf';
    expect(hfHome()).toBe('/data/models/hf');
    process.env.HF_HUB_CACHE = '${GGUF_MMAP_TEST_BASE}/cache';
    expect(hubCacheDir()).toBe('/data/models/cache');
    process.env.HF_HUB_CACHE = '~/c/$GGUF_MMAP_TEST_BASE';
    // No normalising, as Python's: the value's leading slash after c/.
    expect(hubCacheDir()).toBe(`${home}/c//data/models`);
    expect(expandEnvPath('/x/$GGUF_MMAP_NOT_SET_ANYWHERE/y')).toBe('/x/$GGUF_MMAP_NOT_SET_ANYWHERE/y');
    expect(expandEnvPath('~gguf-mmap-no-such-user/x')).toBe('~gguf-mmap-no-such-user/x');
    expect(expandEnvPath('/a/~/b')).toBe('/a/~/b');
    // XDG_CACHE_HOME too, as huggingface_hub expands the HF_HOME it makes of it.
    delete process.env.HF_HOME;
    process.env.XDG_CACHE_HOME = '~/xdg';
    expect(hfHome()).toBe(join(home, 'xdg', 'huggingface'));
  });

  it("HF_TOKEN_PATH='~/token' is read from the home folder", () => {
    mkdirSync(join(home, 'secrets'));
    writeFileSync(join(home, 'secrets', 'token'), 'hf_from_token_path\n');
    process.env.HF_TOKEN_PATH = '~/secrets/token';
    expect(hubToken()).toBe('hf_from_token_path');
    process.env.GGUF_MMAP_TEST_BASE = join(home, 'secrets');
    process.env.HF_TOKEN_PATH = '${GGUF_MMAP_TEST_BASE}/token';
    expect(hubToken()).toBe('hf_from_token_path');
  });
});
