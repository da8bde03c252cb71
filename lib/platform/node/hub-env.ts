import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { expandEnvPath } from '../../remote/env-path.js';

/** HF_ENDPOINT, if set. */
export function hubEndpointSetting(): string | undefined {
  return process.env.HF_ENDPOINT || undefined;
}

/**
 * The token huggingface_hub would find, unchecked, and where it came from: HF_TOKEN, else the
 * file HF_TOKEN_PATH names, else $HF_HOME/token; undefined when there is none.
 */
export function storedHubToken(): { token: string; from: string } | undefined {
  const fromEnv = process.env.HF_TOKEN?.trim();
  if (fromEnv) return { token: fromEnv, from: 'HF_TOKEN' };
  const path = process.env.HF_TOKEN_PATH ? expandEnvPath(process.env.HF_TOKEN_PATH) : join(hfHome(), 'token');
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
  return text === '' ? undefined : { token: text, from: path };
}

/**
 * huggingface_hub's home: HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface;
 * `~` and `$VAR` expanded as huggingface_hub expands them.
 */
export function hfHome(): string {
  return expandEnvPath(process.env.HF_HOME || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'huggingface'));
}
