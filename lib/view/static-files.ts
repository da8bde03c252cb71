import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../package-root.js';

/** The chooser the static page shows until a file is open (static-page.ts wires it). */
const CHOOSER = `<section id="open">
  <h2>Open a GGUF file</h2>
  <p class="hint">Drop a file on this page, pick one, or give its URL. Nothing is uploaded: the page reads the header (and, when asked, a tensor's bytes) where it runs. A URL's server must allow this page (CORS) and range requests, as the Hugging Face Hub does.</p>
  <p><input type="file" id="open-file" accept=".gguf"></p>
  <form id="open-url"><input id="open-url-input" type="url" size="60" placeholder="https://huggingface.co/ORG/REPO/resolve/main/model.gguf" spellcheck="false"> <button>Open</button></form>
  <p id="open-status" class="hint"></p>
</section>`;

/** The server's page made static: assets beside it, the in-page API's script first, the chooser on top. */
export function staticIndexHtml(html: string): string {
  const replaced = html
    .replace('<link rel="stylesheet" href="/assets/view.css">', '<link rel="stylesheet" href="view.css">')
    .replace('<script type="module" src="/assets/view.js"></script>', '<script src="static-app.js" defer></script>\n<script src="view.js" defer></script>')
    .replace('<main>', `<main>\n${CHOOSER}`);
  if (!replaced.includes('static-app.js') || !replaced.includes('id="open"')) throw new Error('gguf-mmap: lib/view/page/index.html is not the page static-files.ts knows');
  return replaced;
}

/**
 * `gguf-mmap view --static DIR`: writes the viewer as files that need no server (index.html,
 * view.css, view.js and static-app.js, the browser build bundled with the viewer's API) into
 * `dir`, and returns the page's file: URL (with `?url=` when a URL to open is given).
 */
export function writeStaticView(dir: string, url?: string): string {
  const root = packageRoot();
  const page = join(root, 'lib', 'view', 'page');
  const app = join(root, 'dist', 'lib', 'view', 'static-app.js');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'index.html'), staticIndexHtml(readFileSync(join(page, 'index.html'), 'utf8')));
  for (const name of ['view.css', 'view.js']) writeFileSync(join(dir, name), readFileSync(join(page, name)));
  writeFileSync(join(dir, 'static-app.js'), readFileSync(app));
  const href = pathToFileURL(resolve(dir, 'index.html'));
  if (url !== undefined) href.searchParams.set('url', url);
  return href.href;
}
