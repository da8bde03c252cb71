import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openGguf, type GgufFile } from '../file/gguf-file.js';
import { openGgufRemote } from '../remote/open-remote.js';
import { startViewServer, type ViewServer } from '../view/server.js';
import { writeStaticView } from '../view/static-files.js';
import { fileURLToPath } from 'node:url';

export class ViewUsageError extends Error {}

export interface ViewArgs {
  /** A file, URL or hf: URI; for --static, an optional URL the page opens. */
  target: string | undefined;
  port: number | undefined;
  open: boolean;
  /** --static DIR: write a page that needs no server into DIR. */
  staticDir: string | undefined;
}

export function parseViewArgs(args: string[]): ViewArgs {
  let port: number | undefined;
  let open = false;
  let staticDir: string | undefined;
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--open') open = true;
    else if (arg === '--static') {
      staticDir = args[++i];
      if (staticDir === undefined || staticDir === '') throw new ViewUsageError('--static takes a folder to write the page into');
    }
    else if (arg === '--port') {
      const value = args[++i];
      if (value === undefined || !/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new ViewUsageError('--port takes a port number (0 to 65535)');
      port = Number(value);
    } else if (arg.startsWith('--')) throw new ViewUsageError(`unknown option '${arg}'`);
    else positional.push(arg);
  }
  if (staticDir !== undefined) {
    if (positional.length > 1 || (positional[0] !== undefined && !/^https?:\/\//.test(positional[0]))) throw new ViewUsageError('view --static DIR takes at most one URL (the page opens a dropped or picked file itself)');
    if (port !== undefined) throw new ViewUsageError('--port has no use with --static (no server runs)');
    return { target: positional[0], port, open, staticDir };
  }
  if (positional.length !== 1) throw new ViewUsageError('view takes one FILE, URL or hf: URI');
  return { target: positional[0]!, port, open, staticDir };
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
  if (args.staticDir !== undefined) {
    const page = writeStaticView(args.staticDir, args.target);
    write(`${page}\n`);
    if (args.open) openInBrowser(fileURLToPath(page.replace(/\?.*$/, '')));
    return;
  }
  const target = args.target!;
  const remote = /^(https?:\/\/|hf:)/.test(target);
  const file: GgufFile = remote ? await openGgufRemote(target) : openGguf(target);
  let server: ViewServer;
  try {
    server = await startViewServer(file, { port: args.port, source: target });
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
