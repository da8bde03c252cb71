/**
 * The viewer with no server (`gguf-mmap view --static DIR`): bundled for the browser into
 * static-app.js (scripts/build-view-static.ts), it opens a file dropped on the page or picked, or
 * a URL (typed, or `?url=` in the page's address), with the browser build (bundled under the
 * browser condition: lib/platform/web), and answers the page's
 * API calls (view.js api()) in the page with the server's own code (view-api.ts).
 */
import { GgufError } from '../errors.js';
import { openGgufBlob } from '../file/open-blob.js';
import { openGgufRemote } from '../remote/open-remote.js';
import { createViewApi, HttpError, type ViewApi } from './view-api.js';

// The DOM as this file uses it (the project compiles with Node's types only).
interface Element {
  hidden: boolean;
  textContent: string | null;
  value: string;
  files: ArrayLike<Blob & { name: string }> | null;
  addEventListener(type: string, listener: (event: any) => void): void;
}
const page = globalThis as unknown as {
  document: Element & { getElementById(id: string): Element | null };
  location: { search: string };
  ggufViewStatic?: { api(path: string): Promise<unknown>; whenOpened(run: () => void): void };
};

let answer: ViewApi | undefined;
let run: (() => void) | undefined;
let opened = false;

/** The page's API call answered here, as the server would: its JSON, or an Error saying the code (and the status). */
async function api(path: string): Promise<unknown> {
  const url = new URL(path, 'http://static.invalid/');
  try {
    if (answer === undefined) throw new HttpError(409, 'NOT_OPEN', 'no file is open yet');
    return JSON.parse(await answer(url.pathname, url));
  } catch (error) {
    const status = error instanceof HttpError ? error.status : error instanceof GgufError ? (error.code === 'NO_DEQUANTIZER' ? 422 : 502) : 500;
    const code = error instanceof HttpError || error instanceof GgufError ? error.code : 'INTERNAL';
    const failure = new Error(`${code}: ${error instanceof Error ? error.message : String(error)}`) as Error & { status: number };
    failure.status = status;
    throw failure;
  }
}

function start(): void {
  if (opened && run !== undefined) run();
}

/** Opens the file or URL and hands the page over to view.js (once: another file, another page load). */
async function open(target: Blob & { name?: string } | string): Promise<void> {
  if (answer !== undefined) return;
  const $ = (id: string) => page.document.getElementById(id);
  const status = $('open-status');
  if (status !== null) status.textContent = 'Opening…';
  try {
    const file = typeof target === 'string' ? await openGgufRemote(target) : await openGgufBlob(target);
    answer = createViewApi(file, { source: typeof target === 'string' ? target : (target.name ?? 'dropped file') });
  } catch (error) {
    if (status !== null) status.textContent = `Could not open it: ${error instanceof Error ? error.message : String(error)}`;
    return;
  }
  const chooser = $('open');
  if (chooser !== null) chooser.hidden = true;
  opened = true;
  start();
}

page.ggufViewStatic = {
  api,
  whenOpened(then: () => void) {
    run = then;
    start();
  },
};

const $ = (id: string) => page.document.getElementById(id);
$('open-file')?.addEventListener('change', (event) => {
  const file = (event.target as Element).files?.[0];
  if (file !== undefined) void open(file);
});
$('open-url')?.addEventListener('submit', (event) => {
  event.preventDefault();
  const url = $('open-url-input')?.value.trim();
  if (url) void open(url);
});
page.document.addEventListener('dragover', (event) => event.preventDefault());
page.document.addEventListener('drop', (event) => {
  event.preventDefault();
  const file = event.dataTransfer?.files?.[0];
  if (file !== undefined) void open(file);
});
const fromAddress = new URLSearchParams(page.location.search).get('url');
if (fromAddress) void open(fromAddress);
