import { spawn } from 'node:child_process';
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

/** The system's way to open a URL in the browser. */
function openInBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]] : ['xdg-open', [url]];
  const child = spawn(command, args as string[], { detached: true, stdio: 'ignore' });
  child.on('error', () => process.stderr.write(`gguf-mmap: could not start a browser (${command}); open the URL above\n`));
  child.unref();
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
  if (args.open) openInBrowser(server.url);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
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
