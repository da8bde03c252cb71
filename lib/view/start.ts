import type { GgufFile } from '../file/gguf-file.js';
import type { ViewServer, ViewServerOptions } from './server.js';

/**
 * Serves `file` to the viewer's page on 127.0.0.1 (see server.ts). The server's modules (node:http
 * among them) are loaded on this first call, so importing the library does not pay for them.
 */
export async function startViewServer(file: GgufFile, options: ViewServerOptions = {}): Promise<ViewServer> {
  const { startViewServer: start } = await import('./server.js');
  return start(file, options);
}
