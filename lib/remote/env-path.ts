import { readFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';

/**
 * A path from the environment as huggingface_hub reads HF_HOME, HF_HUB_CACHE and HF_TOKEN_PATH
 * (`os.path.expandvars(os.path.expanduser(value))`): a leading `~` or `~user` becomes that home,
 * then `$NAME` and `${NAME}` become the variable's value; unknown names and users stay as written.
 */
export function expandEnvPath(value: string, env: NodeJS.ProcessEnv = process.env): string {
  return expandVars(expandUser(value, env), env);
}

/**
 * Python's expanduser: `~` is HOME (else the account's home), `~user` that user's. On Windows
 * (ntpath) the name ends at either slash. Not normalized, as Python leaves it.
 */
export function expandUser(path: string, env: NodeJS.ProcessEnv = process.env): string {
  if (!path.startsWith('~')) return path;
  const windows = process.platform === 'win32';
  const found = path.slice(1).search(windows ? /[\\/]/ : /\//);
  const end = found < 0 ? path.length : found + 1;
  const name = path.slice(1, end);
  const home = name === '' ? (env.HOME ?? (windows ? env.USERPROFILE : undefined) ?? homedir()) : homeOf(name);
  if (home === undefined) return path;
  return home.replace(windows ? /[\\/]+$/ : /\/+$/, '') + path.slice(end) || '/';
}

/** Python's posixpath.expandvars: `$NAME` and `${NAME}` of variables that are set; others stay. */
export function expandVars(path: string, env: NodeJS.ProcessEnv = process.env): string {
  if (!path.includes('$')) return path;
  return path.replace(/\$(\w+|\{[^}]*\})/g, (whole, name: string) => {
    const key = name.startsWith('{') ? name.slice(1, -1) : name;
    return env[key] ?? whole;
  });
}

/** The home folder of the account `name` (this process's, else /etc/passwd's), if there is one. */
function homeOf(name: string): string | undefined {
  try {
    const me = userInfo();
    if (me.username === name) return me.homedir;
  } catch {
    // no account for this uid
  }
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const fields = line.split(':');
      if (fields[0] === name && fields.length >= 6) return fields[5];
    }
  } catch {
    // no passwd file (Windows): the path stays as written, as Python leaves it
  }
  return undefined;
}
