// The viewer's server over plain HTTP: its security rules, and its API against what the library
// itself says (inspect --json's summary, GgufTensor.dequantize for the statistics).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeInspectJson } from '../../lib/cli/inspect.js';
import { encodeGguf, openGguf, openGgufRemote, startViewServer as startFromIndex, writeGgufFile, writeGgufSplit, type GgufFile, type GgufWriteSpec, type GgufWriteValue } from '../../lib/index.js';
import { hostAllowed } from '../../lib/view/access.js';
import { ARRAY_SCAN_BUDGET, METADATA_PAGE_BYTES } from '../../lib/view/metadata-api.js';
import { startViewServer, type ViewServer } from '../../lib/view/server.js';
import type { HubServer } from '../../scripts/hub-imitation.js';
import { useHubImitation } from '../helpers/hub.js';
import { tempDir } from '../helpers/tmp.js';
import { CHAT_TEMPLATE, expectedStats, MARKUP_NAME, MARKUP_TENSOR, MILLION, millionName as nameOf, millionTensorFile, dotNamesSpec, noVocabularySpec, rawGet, textModelSpec, viewModelSpec } from './view-model.js';

function checkStats(got: any, values: Float32Array): void {
  const want = expectedStats(values);
  expect(got.count).toBe(want.count);
  expect(got.finite).toBe(want.finite);
  expect(got.nan).toBe(want.nan);
  expect(got.inf).toBe(want.inf);
  expect(got.zeros).toBe(want.zeros);
  expect(got.min).toBe(want.min);
  expect(got.max).toBe(want.max);
  expect(got.mean).toBeCloseTo(want.mean, 10);
  expect(got.std).toBeCloseTo(want.std, 10);
  expect(got.histogram.counts).toEqual(want.counts);
  expect(got.histogram.counts.reduce((a: number, c: number) => a + c, 0)).toBe(got.count - got.nan - got.inf);
  expect(got.histogram.edges).toHaveLength(want.counts.length + 1);
  expect(got.histogram.edges[0]).toBe(want.min);
  expect(got.histogram.edges.at(-1)).toBe(want.max);
}

let dir: string;
let path: string;
let g: GgufFile;
let server: ViewServer;
const api = async (p: string) => {
  const r = await rawGet(server.port, `${p}${p.includes('?') ? '&' : '?'}token=${server.token}`);
  return { status: r.status, json: JSON.parse(r.body) };
};

beforeAll(async () => {
  dir = tempDir('gguf-mmap-view-');
  path = join(dir, 'model.gguf');
  writeGgufFile(path, viewModelSpec());
  g = openGguf(path);
  server = await startViewServer(g, { source: path, sampleLimit: 4096 });
});
afterAll(async () => {
  await server?.close();
  g?.close();
});

describe('view server: security', () => {
  it('answers only to a 127.0.0.1 URL with the token', () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/?token=${server.token}`);
    expect(server.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('401 without the token or with a wrong one, on the page, its assets and the API', async () => {
    for (const p of ['/', '/assets/view.js', '/api/summary', '/api/tensors', `/api/summary?token=${server.token.slice(1)}x`]) {
      const r = await rawGet(server.port, p);
      expect(r.status, p).toBe(401);
      expect(r.body).not.toContain('llama');
    }
    const wrongCookie = await rawGet(server.port, '/api/summary', { Cookie: `gguf_mmap_view_${server.port}=nope` });
    expect(wrongCookie.status).toBe(401);
  });

  it('403 for a Host other than 127.0.0.1:PORT or localhost:PORT (DNS rebinding), even with the token', async () => {
    for (const host of ['evil.example', `evil.example:${server.port}`, '127.0.0.1', `127.0.0.1:${server.port + 1}`, `localhost.evil.example:${server.port}`, `[::1]:${server.port}`]) {
      const r = await rawGet(server.port, `/api/summary?token=${server.token}`, { Host: host });
      expect(r.status, host).toBe(403);
    }
    expect((await rawGet(server.port, `/api/summary?token=${server.token}`, { Host: `localhost:${server.port}` })).status).toBe(200);
  });

  it('on port 80 the Host browsers send, without the port, is this server too', async (ctx) => {
    const request = (host: string) => ({ headers: { host } });
    expect(hostAllowed(request('127.0.0.1'), 80)).toBe(true);
    expect(hostAllowed(request('localhost'), 80)).toBe(true);
    expect(hostAllowed(request('127.0.0.1:80'), 80)).toBe(true);
    expect(hostAllowed(request('evil.example'), 80)).toBe(false);
    expect(hostAllowed(request('127.0.0.1'), 8080)).toBe(false);
    // The server itself, where this process may listen on 80 (root, or a lowered unprivileged port floor).
    let s: ViewServer;
    try {
      s = await startViewServer(g, { port: 80 });
    } catch {
      return ctx.skip('port 80 cannot be listened on here');
    }
    try {
      expect((await rawGet(80, `/api/summary?token=${s.token}`, { Host: '127.0.0.1' })).status).toBe(200);
      expect((await rawGet(80, `/api/summary?token=${s.token}`, { Host: 'evil.example' })).status).toBe(403);
    } finally {
      await s.close();
    }
  });

  it('the page sets an HttpOnly, SameSite=Strict cookie that then stands for the token; no CORS headers', async () => {
    const page = await rawGet(server.port, `/?token=${server.token}`, { Origin: 'http://evil.example' });
    expect(page.status).toBe(200);
    const cookie = String(page.headers['set-cookie']);
    expect(cookie).toContain(`gguf_mmap_view_${server.port}=${server.token}`);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const byCookie = await rawGet(server.port, '/api/summary', { Cookie: `other=1; gguf_mmap_view_${server.port}=${server.token}`, Origin: 'http://evil.example' });
    expect(byCookie.status).toBe(200);
    for (const r of [page, byCookie]) expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('serves nothing of the disk but its assets: paths outside them are 404', async () => {
    for (const p of ['/package.json', '/../package.json', '/assets/../../package.json', '/assets/%2e%2e/%2e%2e/package.json', '/assets/..%2f..%2fpackage.json', '/etc/passwd', '/assets/server.js', '/lib/view/server.ts', '/model.gguf', `/${path}`, '/assets/', '/api/../../etc/passwd']) {
      const r = await rawGet(server.port, `${p}${p.includes('?') ? '&' : '?'}token=${server.token}`);
      expect(r.status, p).toBe(404);
      expect(r.body).not.toContain('"name": "gguf-mmap"');
    }
  });

  it('read-only: other methods are 405', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) expect((await rawGet(server.port, `/api/summary?token=${server.token}`, {}, method)).status).toBe(405);
  });

  it('the page itself holds nothing from the file: names reach it only as JSON', async () => {
    const html = (await rawGet(server.port, `/?token=${server.token}`)).body;
    expect(html).not.toContain('onerror');
    expect(html).not.toContain('tok1');
    const rows = (await api(`/api/tensors?filter=${encodeURIComponent('<img')}`)).json;
    expect(rows.rows.map((r: any) => r.name)).toEqual([MARKUP_TENSOR]);
    const detail = await api(`/api/tensor?name=${encodeURIComponent(MARKUP_TENSOR)}`);
    expect(detail.json.name).toBe(MARKUP_TENSOR);
  });
});

describe('view server: API', () => {
  it('/api/summary is what inspect --json prints (less metadata and tensors)', async () => {
    let text = '';
    writeInspectJson(g, (chunk) => (text += chunk));
    const inspected = JSON.parse(text);
    const { json } = await api('/api/summary');
    for (const k of ['version', 'endian', 'alignment', 'dataOffset', 'fileSize', 'summary']) expect(json[k], k).toEqual(inspected[k]);
    expect(json.summary.name).toBe(MARKUP_NAME);
    expect(json.view.tensorCount).toBe(g.tensorCount);
    expect(json.view.source).toBe(path);
  });

  it('/api/tensors filters, sorts and pages as the tensor list does', async () => {
    const all = g.tensors;
    const page = (await api('/api/tensors?offset=2&limit=3')).json;
    expect(page.total).toBe(all.length);
    expect(page.rows.map((r: any) => r.name)).toEqual(all.slice(2, 5).map((t) => t.name));
    expect(page.rows[0]).toEqual({ index: 2, name: all[2]!.name, type: all[2]!.type, shape: [...all[2]!.shape], nbytes: all[2]!.nbytes, offset: all[2]!.offset, part: 0 });
    const q = (await api('/api/tensors?filter=ATTN_&sort=-size&limit=100')).json;
    const want = all.filter((t) => t.name.includes('attn_')).sort((a, b) => b.nbytes - a.nbytes || all.indexOf(b) - all.indexOf(a));
    expect(q.matched).toBe(want.length);
    expect(q.rows.map((r: any) => r.name)).toEqual(want.map((t) => t.name));
    const byName = (await api('/api/tensors?sort=name&limit=1000')).json;
    expect(byName.rows.map((r: any) => r.name)).toEqual(all.map((t) => t.name).sort());
    const byOffset = (await api('/api/tensors?sort=-offset&limit=1')).json;
    expect(byOffset.rows[0].name).toBe([...all].sort((a, b) => b.offset - a.offset)[0]!.name);
    expect((await api('/api/tensors?sort=bogus')).status).toBe(400);
    expect((await api('/api/tensors?offset=-1')).status).toBe(400);
  });

  it('/api/tensor/stats equals the statistics of the library\'s dequantize', async () => {
    for (const name of ['blk.0.ffn_down.weight', 'blk.1.ffn_down.weight', 'blk.0.attn_q.weight', 'blk.1.attn_k.weight', 'blk.0.attn_norm.weight', MARKUP_TENSOR]) {
      const { status, json } = await api(`/api/tensor/stats?name=${encodeURIComponent(name)}`);
      expect(status, name).toBe(200);
      expect(json.sampled).toBe(false);
      checkStats(json, g.tensor(name)!.dequantize());
    }
    const special = (await api('/api/tensor/stats?name=blk.0.ffn_down.weight')).json;
    expect([special.nan, special.inf, special.posInf, special.negInf, special.zeros > 1]).toEqual([1, 3, 2, 1, true]);
    expect((await api('/api/tensor/stats?name=no.such.tensor')).status).toBe(404);
  });

  it('past the sample limit: the documented rows, the same each time', async () => {
    // output.weight: 300 rows of 256 values, the limit 4096 values: 16 rows, in 16 runs of 1 row.
    const t = g.tensor('output.weight')!;
    const { json } = await api('/api/tensor/stats?name=output.weight');
    expect(json.sampled).toEqual({ rows: 16, runs: 16, rowsPerRun: 1, of: 300, rowLength: 256 });
    const rows = Array.from({ length: 16 }, (_, r) => Math.floor((r * (300 - 1)) / 15));
    const values = new Float32Array(16 * 256);
    rows.forEach((row, k) => values.set(t.dequantizeRows(row, 1), k * 256));
    checkStats(json, values);
    const again = (await api('/api/tensor/stats?name=output.weight')).json;
    expect(again).toEqual(json);
    const detail = (await api('/api/tensor?name=output.weight')).json;
    expect(detail).toMatchObject({ statsSampled: true, statsBytes: 16 * 144, byteRange: [t.fileOffset, t.fileOffset + t.nbytes], blockSize: 256, typeSize: 144 });
  });

  it('/api/layers: a cell per block and kind', async () => {
    const { json } = await api('/api/layers');
    expect(json.blocks).toBe(2);
    expect(json.kinds.map((k: any) => k.name)).toEqual(['attn_norm.weight', 'attn_q.weight', 'attn_k.weight', 'ffn_down.weight']);
    expect(json.cells).toHaveLength(8);
    expect(json.cells.find((c: any) => c.block === 1 && json.kinds[c.kind].name === 'ffn_down.weight')).toMatchObject({ name: 'blk.1.ffn_down.weight', type: 'Q4_K' });
    expect(json.others.map((o: any) => o.name)).toEqual(['token_embd.weight', MARKUP_TENSOR, 'output.weight']);
  });

  it('/api/metadata: every key with its type, in pages; arrays paged and searchable', async () => {
    const { json } = await api('/api/metadata');
    expect(json).toMatchObject({ total: g.metadata.size, offset: 0, next: null });
    expect(json.entries.map((e: any) => e.key)).toEqual([...g.metadata.keys()]);
    expect(json.entries.map((e: any) => e.index)).toEqual([...g.metadata.keys()].map((_, i) => i));
    expect(json.entries.find((e: any) => e.key === 'tokenizer.chat_template').value).toBe(CHAT_TEMPLATE);
    const tokens = json.entries.find((e: any) => e.key === 'tokenizer.ggml.tokens');
    expect(tokens).toMatchObject({ type: 'ARRAY', arrayType: 'STRING', length: 300 });
    expect((await api('/api/metadata/entry?key=tokenizer.chat_template')).json.value).toBe(CHAT_TEMPLATE);
    expect((await api('/api/metadata/entry?key=no.such.key')).status).toBe(404);
    const array = (q: string) => api(`/api/metadata/array?index=${tokens.index}&${q}`);
    const page = (await array('offset=290&limit=50')).json;
    expect(page.items.map((i: any) => i.value)).toEqual(Array.from({ length: 10 }, (_, i) => `tok${290 + i}`));
    expect(page.next).toBeNull();
    const found = (await array('filter=tok29&limit=5')).json;
    expect(found.items.map((i: any) => i.index)).toEqual([29, 290, 291, 292, 293]);
    // The next slice from where this one stopped, by element and byte position.
    const rest = (await array(`filter=tok29&limit=5&offset=${found.next}&at=${found.nextAt}`)).json;
    expect(rest.items.map((i: any) => i.index)).toEqual([294, 295, 296, 297, 298]);
    expect((await api('/api/metadata/array?key=tokenizer.ggml.scores&offset=2&limit=2')).json.items).toEqual([{ index: 2, value: -2 }, { index: 3, value: -3 }]);
    expect((await api('/api/metadata/array?key=general.name')).status).toBe(404);
  });
});

describe('view server: any name, any header size, any array length', () => {
  async function serve(spec: GgufWriteSpec, name: string) {
    const p = join(dir, name);
    writeGgufFile(p, spec);
    const file = openGguf(p);
    const s = await startViewServer(file);
    const raw = (q: string) => rawGet(s.port, `${q}${q.includes('?') ? '&' : '?'}token=${s.token}`);
    const get = async (q: string) => JSON.parse((await raw(q)).body);
    return { file, raw, get, [Symbol.asyncDispose]: async () => (await s.close(), file.close()) };
  }

  it('tensors and arrays named . and .. open by name (a query value) and by index', async () => {
    await using m = await serve(dotNamesSpec(), 'dots.gguf');
    for (const [name, index] of [['.', 0], ['..', 1]] as const) {
      expect((await m.get(`/api/tensor?name=${encodeURIComponent(name)}`)).name).toBe(name);
      expect((await m.get(`/api/tensor?index=${index}`)).name).toBe(name);
      checkStats(await m.get(`/api/tensor/stats?name=${encodeURIComponent(name)}`), m.file.tensor(name)!.dequantize());
    }
    const entries = (await m.get('/api/metadata')).entries;
    expect(entries.map((e: any) => [e.index, e.key])).toEqual([[0, '.'], [1, '..'], [2, 'general.architecture']]);
    expect((await m.get('/api/metadata/array?index=1&offset=18')).items.map((i: any) => i.value)).toEqual(['dotdot18', 'dotdot19']);
    expect((await m.get('/api/metadata/array?key=.&offset=18')).items.map((i: any) => i.value)).toEqual(['dot18', 'dot19']);
  });

  it('/api/metadata is paged by size: an 8 MB header in pages of at most 1 MiB, every key once; a long key is cut in the list, its array still opens', async () => {
    const long = 'k'.repeat(10_000);
    const spec: GgufWriteSpec = {
      metadata: [
        ...Array.from({ length: 40 }, (_, i) => [`big.${i}`, { type: 'STRING', value: String.fromCharCode(97 + (i % 26)).repeat(200_000) }] as [string, GgufWriteValue]),
        [long, { type: 'ARRAY', arrayType: 'INT32', value: Array.from({ length: 20 }, (_, i) => i) }],
      ],
      tensors: [],
    };
    await using m = await serve(spec, 'big-header.gguf');
    const keys: string[] = [];
    let offset: number | null = 0;
    let pages = 0;
    while (offset !== null) {
      const r = await m.raw(`/api/metadata?offset=${offset}`);
      expect(r.status).toBe(200);
      expect(Buffer.byteLength(r.body)).toBeLessThanOrEqual(METADATA_PAGE_BYTES + 200);
      const page = JSON.parse(r.body);
      expect(page.total).toBe(41);
      keys.push(...page.entries.map((e: any) => e.key));
      for (const e of page.entries) if (e.key.startsWith('big.')) expect(e.value).toHaveLength(200_000);
      offset = page.next;
      pages++;
    }
    expect(pages).toBeGreaterThan(5);
    expect(keys.slice(0, 40)).toEqual(Array.from({ length: 40 }, (_, i) => `big.${i}`));
    expect(keys[40]).toBe(long.slice(0, 4096));
    expect((await m.get('/api/metadata/array?index=40&offset=19')).items).toEqual([{ index: 19, value: 19 }]);
  });

  it('/api/metadata/array: a search looks at a bounded slice per request, the next one continues; the slices find every match', async () => {
    const n = ARRAY_SCAN_BUDGET + (ARRAY_SCAN_BUDGET >> 1);
    const bytes = Array.from({ length: n }, (_, i) => (i * 7) % 251);
    const strings = Array.from({ length: n }, (_, i) => `s${i % 100_003}`);
    await using m = await serve({ metadata: [['bytes', { type: 'ARRAY', arrayType: 'UINT8', value: bytes }], ['strings', { type: 'ARRAY', arrayType: 'STRING', value: strings }]], tensors: [] }, 'long-arrays.gguf');
    for (const [index, values, filter] of [[0, bytes, '250'], [1, strings, '99999']] as const) {
      const want = (values as readonly (string | number)[]).flatMap((v, i) => (String(v).includes(filter) ? [i] : []));
      const found: number[] = [];
      let offset: number | null = 0;
      let at: number | null = null;
      let requests = 0;
      while (offset !== null) {
        const page: any = await m.get(`/api/metadata/array?index=${index}&filter=${filter}&limit=1000&offset=${offset}${at === null ? '' : `&at=${at}`}`);
        // Each answer looked at no more than the budget.
        if (page.next !== null) expect(page.next - offset).toBeLessThanOrEqual(ARRAY_SCAN_BUDGET);
        found.push(...page.items.map((i: any) => i.index));
        offset = page.next;
        at = page.nextAt;
        requests++;
      }
      expect(found).toEqual(want);
      expect(requests).toBeGreaterThan(1);
    }
    // Unfiltered, the last elements of the string array without a position: walked there in slices too.
    const tail = await m.get(`/api/metadata/array?index=1&offset=${n - 2}`);
    expect(tail.items).toEqual([]);
    expect(tail.next).toBe(ARRAY_SCAN_BUDGET);
    const last = await m.get(`/api/metadata/array?index=1&offset=${n - 2}&from=${tail.next}&at=${tail.nextAt}`);
    expect(last.items).toEqual([{ index: n - 2, value: strings[n - 2] }, { index: n - 1, value: strings[n - 1] }]);
    expect(last.next).toBeNull();
  }, 60_000);
});

/** The values of pieces of `pieceLength` (runs as the sample documents them) from all `values`. */
function pieceSample(values: Float32Array, pieceLength: number, runs: number, rowsPerRun: number): Float32Array {
  const pieces = values.length / pieceLength;
  const out = new Float32Array(runs * rowsPerRun * pieceLength);
  for (let r = 0; r < runs; r++) {
    const start = Math.floor((r * (pieces - rowsPerRun)) / (runs - 1));
    out.set(values.subarray(start * pieceLength, (start + rowsPerRun) * pieceLength), r * rowsPerRun * pieceLength);
  }
  return out;
}

describe('view server: statistics of rows longer than the sample', () => {
  const hubImitation = useHubImitation();
  const spec = (): GgufWriteSpec => ({
    metadata: [],
    tensors: [
      { name: 'one-row', type: 'F32', shape: [65536], data: new Uint8Array(Float32Array.from({ length: 65536 }, (_, i) => Math.sin(i * 0.01) * (i % 7)).buffer) },
      { name: 'long-rows', type: 'Q8_0', shape: [8192, 3], data: (() => { const b = new Uint8Array((8192 * 3 / 32) * 34); for (let i = 0; i < b.length; i++) b[i] = (i * 37) & 0xff; for (let k = 0; k < b.length; k += 34) b.set([0x00, 0x24], k); return b; })() },
    ],
  });

  it('a one-row tensor, and rows longer than the sample limit: pieces of rows, the sample\'s size, the documented values', async () => {
    const p = join(dir, 'long-rows.gguf');
    writeGgufFile(p, spec());
    using file = openGguf(p);
    const s = await startViewServer(file, { sampleLimit: 4096 });
    try {
      const get = async (q: string) => JSON.parse((await rawGet(s.port, `${q}&token=${s.token}`)).body);
      // one-row: 65,536 values; pieces of 64 (4096 / 64 runs); 64 runs of one piece: 4,096 values, not 65,536.
      const one = await get('/api/tensor/stats?name=one-row');
      expect(one.sampled).toEqual({ rows: 64, runs: 64, rowsPerRun: 1, of: 1024, rowLength: 64 });
      expect(one.count).toBe(4096);
      checkStats(one, pieceSample(file.tensor('one-row')!.dequantize(), 64, 64, 1));
      expect(await get('/api/tensor?name=one-row')).toMatchObject({ statsSampled: true, statsBytes: 4096 * 4 });
      // long-rows: Q8_0 rows of 8,192 values in blocks of 32: pieces of 64 (two blocks).
      const long = await get('/api/tensor/stats?name=long-rows');
      expect(long.sampled).toEqual({ rows: 64, runs: 64, rowsPerRun: 1, of: 384, rowLength: 64 });
      checkStats(long, pieceSample(file.tensor('long-rows')!.dequantize(), 64, 64, 1));
      expect(await get('/api/tensor?name=long-rows')).toMatchObject({ statsSampled: true, statsBytes: 64 * 2 * 34 });
    } finally {
      await s.close();
    }
  });

  it.skipIf(process.platform === 'win32' && process.env.WINEPREFIX !== undefined)('a remote one-row tensor: only the sampled pieces are fetched', async () => {
    const imitation = hubImitation;
    imitation.hub.files.set('org/long/model.gguf', { bytes: encodeGguf(spec()) });
    const remote = await openGgufRemote('hf:org/long/model.gguf', { backoffMs: 1 });
    const s = await startViewServer(remote, { sampleLimit: 4096 });
    try {
      const t = remote.tensor('one-row')!;
      const before = imitation.hub.log.length;
      const stats = JSON.parse((await rawGet(s.port, `/api/tensor/stats?name=one-row&token=${s.token}`)).body);
      expect(stats.count).toBe(4096);
      const fetched = imitation.hub.log
        .slice(before)
        .filter((r) => r.server === 'cdn' && r.range !== undefined)
        .map((r) => /bytes=(\d+)-(\d+)/.exec(r.range!)!)
        .filter((m) => Number(m[1]) >= t.fileOffset)
        .reduce((sum, m) => sum + Number(m[2]) - Number(m[1]) + 1, 0);
      // The 64 pieces' bytes (16 KiB), not the tensor's 256 KiB.
      expect(fetched).toBe(4096 * 4);
    } finally {
      await s.close();
      remote.close();
    }
  });
});

describe('view server: a type without a float conversion', () => {
  it('the tensor says so, and its statistics are 422 NO_DEQUANTIZER', async () => {
    const idsPath = join(dir, 'ids.gguf');
    writeGgufFile(idsPath, { tensors: [{ name: 'ids', type: 'I64', shape: [4] }] });
    using file = openGguf(idsPath);
    // Through the library's export (which loads the server on first call).
    const s = await startFromIndex(file);
    try {
      const get = async (p: string) => {
        const r = await rawGet(s.port, `${p}&token=${s.token}`);
        return { status: r.status, json: JSON.parse(r.body) };
      };
      expect((await get('/api/tensor?name=ids')).json.canDequantize).toBe(false);
      expect(await get('/api/tensor/stats?name=ids')).toMatchObject({ status: 422, json: { error: { code: 'NO_DEQUANTIZER' } } });
    } finally {
      await s.close();
    }
  });
});

describe('view server: a split model', () => {
  it('any part shows the whole model; a tensor of the last part has its part, offset and values', async () => {
    const paths = writeGgufSplit(join(dir, 'split'), viewModelSpec(), { maxTensors: 4 });
    expect(paths.length).toBeGreaterThan(2);
    using split = openGguf(paths[1]!);
    const s = await startViewServer(split);
    try {
      const get = async (p: string) => JSON.parse((await rawGet(s.port, `${p}${p.includes('?') ? '&' : '?'}token=${s.token}`)).body);
      const summary = await get('/api/summary');
      expect(summary.parts.map((p: any) => p.path)).toEqual(paths);
      expect(summary.summary).toEqual({ ...(await api('/api/summary')).json.summary, parts: paths.length, fileBytes: split.fileSize });
      const t = split.tensor('output.weight')!;
      expect(t.part).toBe(paths.length - 1);
      const page = await get('/api/tensors?filter=output.weight');
      expect(page.rows).toEqual([{ index: split.tensorCount - 1, name: 'output.weight', type: 'Q4_K', shape: [256, 300], nbytes: t.nbytes, offset: t.offset, part: paths.length - 1 }]);
      const stats = await get('/api/tensor/stats?name=output.weight');
      expect(stats.sampled).toBe(false);
      checkStats(stats, g.tensor('output.weight')!.dequantize());
    } finally {
      await s.close();
    }
  });
});

describe('view server: the tokenizer and the chat template', () => {
  async function serve(spec: GgufWriteSpec, name: string) {
    const p = join(dir, name);
    writeGgufFile(p, spec);
    const file = openGguf(p);
    const s = await startViewServer(file);
    const get = async (q: string) => {
      const r = await rawGet(s.port, `${q}${q.includes('?') ? '&' : '?'}token=${s.token}`);
      return { status: r.status, json: JSON.parse(r.body) };
    };
    return { path: p, file, get, [Symbol.asyncDispose]: async () => (await s.close(), file.close()) };
  }

  it('/api/tokenize: the ids of GgufFile.tokenizer(), and pieces as `gguf-mmap tokenize` shows them (an emoji\'s byte tokens as <0xF0>...)', async () => {
    await using m = await serve(textModelSpec(), 'text.gguf');
    expect((await m.get('/api/summary')).json.view.features).toEqual({ tokenizer: true, chatTemplate: true });
    const text = 'hi 😀 <b>bold</b>';
    const tok = await m.get(`/api/tokenize?text=${encodeURIComponent(text)}`);
    expect(tok.status).toBe(200);
    expect(tok.json.ids).toEqual(Array.from(m.file.tokenizer().encode(text, { addSpecial: true, parseSpecial: false })));
    // The emoji's UTF-8 bytes, one byte token each: not four U+FFFD.
    const bytes = tok.json.pieces.filter((p: any) => p.bytes).map((p: any) => p.text);
    expect(bytes).toEqual(['<0xF0>', '<0x9F>', '<0x98>', '<0x80>']);
    expect(tok.json.pieces.some((p: any) => p.text.includes('\uFFFD'))).toBe(false);
    // The CLI prints the same pieces: quoted text, bare bytes.
    const cli = spawnSync(process.execPath, [join(import.meta.dirname, '../../dist/lib/cli/cli.js'), 'tokenize', m.path, text], { encoding: 'utf8' });
    expect(cli.status).toBe(0);
    const printed = cli.stdout.trimEnd().split('\n').map((line) => line.replace(/^ *\d+ {2}/, ''));
    expect(printed).toEqual(tok.json.pieces.map((p: any) => (p.bytes ? p.text : `'${p.text}'`)));
    const chat = await m.get('/api/chat');
    expect(chat.status).toBe(200);
    expect(chat.json.text).toBe(m.file.applyChatTemplate(chat.json.messages, { addGenerationPrompt: true }));
  });

  it('a file without a vocabulary (mmproj, LoRA): the summary says there is no tokenizer; /api/tokenize and /api/chat are 501', async () => {
    await using m = await serve(noVocabularySpec(), 'no-vocab.gguf');
    const { features } = (await m.get('/api/summary')).json.view;
    expect(features).toMatchObject({ tokenizer: false, chatTemplate: false });
    expect(features.tokenizerNote).toContain('no vocabulary');
    expect(await m.get('/api/tokenize?text=hi')).toMatchObject({ status: 501, json: { error: { code: 'NOT_AVAILABLE' } } });
    expect(await m.get('/api/chat')).toMatchObject({ status: 501, json: { error: { code: 'NOT_AVAILABLE' } } });
  });

  it('a vocabulary the library does not support: no tokenizer, and the summary says why', async () => {
    await using m = await serve({ metadata: [['tokenizer.ggml.model', { type: 'STRING', value: 'plamo2' }], ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: ['a'] }]], tensors: [] }, 'plamo.gguf');
    const { features } = (await m.get('/api/summary')).json.view;
    expect(features.tokenizer).toBe(false);
    expect(features.tokenizerNote).toContain('plamo2');
    expect((await m.get('/api/tokenize?text=hi')).status).toBe(501);
  });
});

describe('view server: a million tensors', () => {
  it('the first rows, a filter and a sort over a million names', async () => {
    using big = openGguf(millionTensorFile());
    const s = await startViewServer(big);
    try {
      const get = async (p: string) => JSON.parse((await rawGet(s.port, `${p}&token=${s.token}`)).body);
      const first = await get('/api/tensors?offset=0&limit=50');
      const N = MILLION;
      expect(first.total).toBe(N);
      expect(first.rows.map((r: any) => r.name)).toEqual(Array.from({ length: 50 }, (_, i) => nameOf(i)));
      const last = await get(`/api/tensors?offset=${N - 1}&limit=50`);
      expect(last.rows.map((r: any) => r.name)).toEqual([nameOf(N - 1)]);
      const filtered = await get('/api/tensors?filter=.t999.&limit=3&sort=-index');
      expect(filtered.matched).toBe(1000);
      expect(filtered.rows.map((r: any) => r.name)).toEqual([nameOf(N - 1), nameOf(N - 1001), nameOf(N - 2001)]);
      const bySize = await get('/api/tensors?sort=-size&limit=2&filter=blk.7.');
      // Descending: the largest first, ties in reverse file order (the ascending order reversed).
      expect(bySize.rows.map((r: any) => [r.name, r.nbytes])).toEqual([[nameOf(7997), 3], [nameOf(7994), 3]]);
      expect(bySize.matched).toBe(1000);
    } finally {
      await s.close();
    }
  });
});

// Under wine fetch cannot reach a local server (vitest.config.ts): no remote model there.
const underWine = process.platform === 'win32' && process.env.WINEPREFIX !== undefined;

describe.skipIf(underWine)('view server: a remote model through the Hub imitation', () => {
  const imitation = useHubImitation();
  let hub: HubServer;
  beforeAll(() => {
    hub = imitation.hub;
  });

  it('the header at open; a tensor\'s bytes by range only when its statistics are asked for', async () => {
    const bytes = encodeGguf(viewModelSpec());
    hub.files.set('org/view/model.gguf', { bytes });
    const remote = await openGgufRemote('hf:org/view/model.gguf', { backoffMs: 1 });
    const s = await startViewServer(remote, { source: 'hf:org/view/model.gguf' });
    try {
      const get = async (p: string) => JSON.parse((await rawGet(s.port, `${p}${p.includes('?') ? '&' : '?'}token=${s.token}`)).body);
      const summary = await get('/api/summary');
      expect(summary.summary).toEqual((await api('/api/summary')).json.summary);
      expect(summary.view).toMatchObject({ remote: true, source: 'hf:org/view/model.gguf' });
      await get('/api/tensors?sort=name');
      await get('/api/layers');
      await get('/api/metadata');
      const t = remote.tensor('blk.1.ffn_down.weight')!;
      const dataRequests = () => hub.log.filter((r) => r.server === 'cdn' && r.range !== undefined && Number(/bytes=(\d+)/.exec(r.range)![1]) >= remote.dataOffset);
      expect(dataRequests()).toEqual([]);
      const detail = await get('/api/tensor?name=blk.1.ffn_down.weight');
      expect(detail).toMatchObject({ remote: true, statsBytes: t.nbytes });
      expect(dataRequests()).toEqual([]);
      const stats = await get('/api/tensor/stats?name=blk.1.ffn_down.weight');
      checkStats(stats, g.tensor('blk.1.ffn_down.weight')!.dequantize());
      expect(dataRequests().map((r) => r.range)).toEqual([`bytes=${t.fileOffset}-${t.fileOffset + t.nbytes - 1}`]);
    } finally {
      await s.close();
      remote.close();
    }
  });
});

// xdg-open is the opener there: a stand-in on PATH records what the browser would be given.
describe.skipIf(process.platform !== 'linux')('gguf-mmap view --open', () => {
  it('starts the browser with a page only this user can read, not the tokened URL (a command line is public); the page is gone after', async () => {
    const bin = tempDir('gguf-mmap-view-open-');
    const argvFile = join(bin, 'argv');
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$@" > '${argvFile}'\n`, { mode: 0o755 });
    const cli = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
    const child = spawn(process.execPath, [cli, 'view', path, '--open'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await expect.poll(() => existsSync(argvFile) && readFileSync(argvFile, 'utf8').endsWith('\n'), { timeout: 20_000 }).toBe(true);
      const url = out.trim();
      const token = new URL(url).searchParams.get('token')!;
      const argv = readFileSync(argvFile, 'utf8').trimEnd().split('\n');
      expect(argv).toHaveLength(1);
      expect(argv[0]).not.toContain(token);
      const page = argv[0]!;
      expect(statSync(page).mode & 0o077).toBe(0);
      expect(statSync(dirname(page)).mode & 0o077).toBe(0);
      const html = readFileSync(page, 'utf8');
      expect(html).toContain(`<meta http-equiv="refresh" content="0;url=${url}">`);
      expect((await rawGet(Number(new URL(url).port), `/api/summary?token=${token}`)).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exit).toBe(0);
      expect(existsSync(page)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});

// Windows has no signals to send a process (kill ends it at once): this runs where they exist.
describe.skipIf(process.platform === 'win32')('gguf-mmap view (the command)', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('prints one line, the URL; %s closes the server and frees the port', async (signal) => {
    const cli = join(import.meta.dirname, '../../dist/lib/cli/cli.js');
    const child = spawn(process.execPath, [cli, 'view', path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(out.trim());
      });
      child.on('exit', () => reject(new Error(`view exited: ${out}`)));
    });
    const m = /^http:\/\/127\.0\.0\.1:(\d+)\/\?token=([A-Za-z0-9_-]{43})$/.exec(url);
    expect(m, url).not.toBeNull();
    const port = Number(m![1]);
    expect((await rawGet(port, `/api/summary?token=${m![2]}`)).status).toBe(200);
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill(signal);
    expect(await exit).toBe(0);
    expect(out.trim().split('\n')).toHaveLength(1);
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('connect', () => (socket.destroy(), resolve(false)));
      socket.on('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  });
});
