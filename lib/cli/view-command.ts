import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openGguf, type GgufFile } from '../file/gguf-file.js';
import { openGgufRemote } from '../remote/open-remote.js';
import { startViewServer, type ViewServer } from '../view/server.js';

export class ViewUsageError extends Error {}

export interface ViewArgs {
  target: string;
  port: number | undefined;
  open: boolean;
}

export function parseViewArgs(args: string[]): ViewArgs {
  let port: number | undefined;
  let open = false;
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--open') open = true;
    else if (arg === '--port') {
      const value = args[++i];
      if (value === undefined || !/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new ViewUsageError('--port takes a port number (0 to 65535)');
      port = Number(value);
    } else if (arg.startsWith('--')) throw new ViewUsageError(`unknown option '${arg}'`);
    else positional.push(arg);
  }
  if (positional.length !== 1) throw new ViewUsageError('view takes one FILE, URL or hf: URI');
  return { target: positional[0]!, port, open };
}

/** The system's way to open a file in the browser. */
function openInBrowser(path: string): void {
  const [command, args] = process.platform === 'darwin' ? ['open', [path]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', path]] : ['xdg-open', [path]];
  const child = spawn(command, args as string[], { detached: true, stdio: 'ignore' });
  child.on('error', () => process.stderr.write(`gguf-mmap: could not start a browser (${command}); open the URL above\n`));
  child.unref();
}

const attribute = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/**
 * A page that sends the browser on to `url`, in a new directory only this user can read: the
 * browser is started with its path, so the token is on no command line (any local user can read
 * those, in /proc). Removed when the server stops.
 */
export function writeLaunchPage(url: string): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-view-'));
  const path = join(dir, 'open.html');
  const href = attribute(url);
  writeFileSync(path, `<!doctype html>\n<meta charset="utf-8">\n<meta name="referrer" content="no-referrer">\n<meta http-equiv="refresh" content="0;url=${href}">\n<title>gguf-mmap view</title>\n<a href="${href}">gguf-mmap view</a>\n`, { mode: 0o600 });
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * `view TARGET`: opens the model (a file, a split set's part, a URL or an hf: URI), serves the
 * page, prints its URL (one line) and runs until SIGINT or SIGTERM, which close the server and
 * the file.
 */
export async function runView(args: ViewArgs, write: (line: string) => void): Promise<void> {
  const remote = /^(https?:\/\/|hf:)/.test(args.target);
  const file: GgufFile = remote ? await openGgufRemote(args.target) : openGguf(args.target);
  let server: ViewServer;
  try {
    server = await startViewServer(file, { port: args.port, source: args.target });
  } catch (error) {
    file.close();
    throw error;
  }
  write(`${server.url}\n`);
  const launch = args.open ? writeLaunchPage(server.url) : undefined;
  if (launch !== undefined) openInBrowser(launch.path);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    launch?.remove();
    server
      .close()
      .finally(() => {
        file.close();
        process.exit(0);
      });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
