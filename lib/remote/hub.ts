import { hfHome, hubEndpointSetting, storedHubToken } from '#platform/hub-env';

export { hfHome };

/** A file in a Hugging Face repository: `hf:org/repo/path/to/file.gguf[@revision]`. */
export interface HubFile {
  readonly repo: string;
  readonly path: string;
  readonly revision: string;
}

export const REPO_PART = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The Hub's address: HF_ENDPOINT (a mirror), else huggingface.co. */
export function hubEndpoint(): string {
  return (hubEndpointSetting() ?? 'https://huggingface.co').replace(/\/+$/, '');
}

/** Parses `hf:org/repo/path[@revision]`; undefined for anything that does not start with `hf:`. */
export function parseHubUri(uri: string): HubFile | undefined {
  if (!uri.startsWith('hf:')) return undefined;
  let rest = uri.slice(3).replace(/^\/+/, '');
  let revision = 'main';
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    revision = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const parts = rest.split('/');
  const [org, name, ...path] = parts;
  if (org === undefined || name === undefined || !REPO_PART.test(org) || !REPO_PART.test(name) || path.length === 0 || revision === '') {
    throw new TypeError(`'${uri}' is not a Hub file: hf:ORG/REPO/PATH[@REVISION]`);
  }
  // A path names a file inside the repository: no empty, '.' or '..' segments.
  if (path.some((p) => p === '' || p === '.' || p === '..')) throw new TypeError(`'${uri}': the file path must not have empty, '.' or '..' parts`);
  return { repo: `${org}/${name}`, path: path.join('/'), revision };
}

/** The URL that serves the file (`/resolve/`), on the endpoint. */
export function resolveUrl(file: HubFile, endpoint = hubEndpoint()): string {
  const path = file.path.split('/').map(encodeURIComponent).join('/');
  return `${endpoint}/${file.repo}/resolve/${encodeURIComponent(file.revision)}/${path}`;
}

/**
 * The token huggingface_hub would send: HF_TOKEN, else the file HF_TOKEN_PATH names, else
 * $HF_HOME/token (HF_HOME defaults to ~/.cache/huggingface); undefined when there is none.
 */
export function hubToken(): string | undefined {
  const stored = storedHubToken();
  return stored === undefined ? undefined : checkedToken(stored.token, stored.from);
}

/** The Authorization header for the Hub: `token` if given, else hubToken()'s; undefined for none. */
export function hubAuthorization(token?: string): string | undefined {
  return bearer(token ?? hubToken());
}

/**
 * The header for a token: one that a header cannot carry (a line break, a control or non-ASCII
 * character) is a TypeError that does not show it, rather than fetch's error quoting the value.
 */
export function bearer(token: string | undefined, from = '{ token }'): string | undefined {
  return token === undefined ? undefined : `Bearer ${checkedToken(token, from)}`;
}

function checkedToken(token: string, from: string): string {
  if (!/^[\x21-\x7e]+$/.test(token)) throw new TypeError(`the token from ${from} has a character an HTTP header cannot carry (a space, a line break, a control or non-ASCII character); it is not shown here`);
  return token;
}
