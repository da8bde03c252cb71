// gguf-mmap view: the page. Everything shown from the file goes in through textContent or
// attributes set one by one, never as markup.
const $ = (id) => document.getElementById(id);

/** An element with properties (className, title, textContent, dataset keys as data-*) and children. */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'text') node.textContent = v;
    else if (k === 'style') node.setAttribute('style', v);
    else if (k.startsWith('data-')) node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c);
  return node;
}

// The static page (gguf-mmap view --static) has no server: static-app.js answers the API in the
// page, over the file opened there.
const inPage = globalThis.ggufViewStatic;

async function api(path) {
  if (inPage !== undefined) return inPage.api(path);
  const response = await fetch(path, { credentials: 'same-origin' });
  const body = await response.json();
  if (!response.ok) {
    const error = new Error(body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

function showError(error) {
  const p = $('error');
  p.hidden = false;
  p.textContent = String(error.message ?? error);
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
function bytes(n) {
  let i = 0;
  let v = n;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${UNITS[i]}`;
}
function count(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} M`;
  return n.toLocaleString('en-US');
}
function num(x) {
  if (x === null || x === undefined) return '—';
  if (typeof x !== 'number') return String(x);
  return Number.isInteger(x) ? x.toLocaleString('en-US') : Number(x.toPrecision(6)).toString();
}

// Colours by type: the families share a hue (K-quants warm, legacy quants green, floats blue, IQ purple).
const TYPE_COLORS = {
  F32: '#1f4e99', F16: '#3b7bd8', BF16: '#6aa0e8', F64: '#0f2f66',
  Q8_0: '#2e8b57', Q8_1: '#3f9f68', Q5_0: '#58b368', Q5_1: '#74c47f', Q4_0: '#8fd19a', Q4_1: '#a9ddb1',
  Q8_K: '#7a1f1f', Q6_K: '#b8432f', Q5_K: '#d9673a', Q4_K: '#e8913f', Q3_K: '#f0b64b', Q2_K: '#f5d36a',
  IQ4_NL: '#5b3c99', IQ4_XS: '#6f4fb0', IQ3_S: '#8566c4', IQ3_XXS: '#9a7fd4', IQ2_S: '#ad96df', IQ2_XS: '#bfaee8', IQ2_XXS: '#d0c4f0', IQ1_S: '#ddd4f5', IQ1_M: '#e8e2f8',
  TQ1_0: '#8a8a8a', TQ2_0: '#a5a5a5', MXFP4: '#c0398b', I8: '#444', I16: '#555', I32: '#666', I64: '#777',
};
function typeColor(type) {
  if (TYPE_COLORS[type]) return TYPE_COLORS[type];
  let h = 0;
  for (const c of type) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h} 45% 55%)`;
}

let summary;

function fact(dl, label, value) {
  dl.append(el('div', {}, el('dt', { text: label }), el('dd', { text: value })));
}

function renderSummary(s) {
  const m = s.summary;
  $('model-name').textContent = m.name ?? m.architecture ?? 'GGUF model';
  $('model-source').textContent = s.view.source + (s.view.remote ? ' (remote)' : '');
  document.title = `${m.name ?? 'model'} · gguf-mmap view`;
  const facts = $('facts');
  const h = m.hyperparameters;
  fact(facts, 'name', m.name ?? '—');
  fact(facts, 'architecture', m.architecture ?? '—');
  fact(facts, 'parameters', `${count(m.parameters)} (${m.parameters.toLocaleString('en-US')})`);
  fact(facts, 'file size', `${bytes(m.fileBytes)}${m.parts > 1 ? ` in ${m.parts} parts` : ''}`);
  fact(facts, 'bits per weight', m.bitsPerWeight.toFixed(2));
  fact(facts, 'context length', h.context_length === undefined ? '—' : num(Number(h.context_length)));
  fact(facts, 'tensors', s.view.tensorCount.toLocaleString('en-US'));
  fact(facts, 'vocabulary', m.vocabularySize === null ? '—' : m.vocabularySize.toLocaleString('en-US'));
  fact(facts, 'format', `GGUF v${s.version}, ${s.endian}-endian, alignment ${s.alignment}`);
  const bar = $('quant-bar');
  const legend = $('quant-legend');
  const total = m.bytes || 1;
  for (const t of m.byType) {
    const span = el('span', { title: `${t.type}: ${bytes(t.bytes)}, ${t.tensors} tensors, ${t.bitsPerWeight.toFixed(2)} bpw`, 'data-type': t.type });
    span.style.width = `${(t.bytes / total) * 100}%`;
    span.style.background = typeColor(t.type);
    bar.append(span);
    const swatch = el('i');
    swatch.style.background = typeColor(t.type);
    legend.append(el('li', {}, swatch, `${t.type} ${bytes(t.bytes)} (${((t.bytes / total) * 100).toFixed(1)}%), ${t.tensors} tensors, ${t.bitsPerWeight.toFixed(2)} bpw`));
  }
  const hyper = $('hyper');
  // file.hyperparameters() first (llama.cpp's values, defaults filled in), then the raw keys
  if (s.hyperparameters) for (const [k, v] of typedFacts(s.hyperparameters)) fact(hyper, k, v);
  else if (s.hyperparametersError) fact(hyper, 'hyperparameters', `${s.hyperparametersError.code}: ${s.hyperparametersError.message}`);
  for (const [k, v] of Object.entries(h)) fact(hyper, k, Array.isArray(v) ? `[${v.map(num).join(', ')}]` : num(v));
}

/** The typed hyperparameters as [label, text] cards: what the family has (absent fields are null). */
function typedFacts(t) {
  const per = (v) => (Array.isArray(v) ? `[${v.map(num).join(', ')}]` : num(v));
  const f = [['family', t.family], ['blocks', num(t.blockCount)], ['embedding length', num(t.embeddingLength)]];
  if (t.family !== 'recurrent') f.push(['heads (KV heads)', `${per(t.headCount)} (${per(t.headCountKv)})`], ['key / value head size', `${num(t.keyLength)} / ${num(t.valueLength)}`]);
  if (t.feedForwardLength !== null) f.push(['feed-forward length', per(t.feedForwardLength)]);
  if (t.rope) f.push(['rope', `${num(t.rope.dimensionCount)} dims, base ${num(t.rope.freqBase)}, ${t.rope.scaling.type} ×${num(t.rope.scaling.factor)}`]);
  if (t.rmsNormEpsilon) f.push(['RMS norm epsilon', num(t.rmsNormEpsilon)]);
  if (t.layerNormEpsilon) f.push(['norm epsilon', num(t.layerNormEpsilon)]);
  if (t.experts) f.push(['experts (used, shared)', `${num(t.experts.count)} (${per(t.experts.used)}, ${num(t.experts.shared)})`]);
  if (t.slidingWindow) f.push(['sliding window', `${num(t.slidingWindow.size)} on ${t.slidingWindow.blocks.filter(Boolean).length} of ${t.blockCount} blocks`]);
  if (t.ssm) f.push(['SSM conv, inner, state, groups', [t.ssm.convKernel, t.ssm.innerSize, t.ssm.stateSize, t.ssm.groupCount].map(num).join(', ')]);
  if (t.wkv) f.push(['WKV head size', num(t.wkv.headSize)]);
  if (t.shortConvolution) f.push(['short convolution', num(t.shortConvolution.cacheLength)]);
  if (t.recurrentState) f.push(['recurrent state (floats)', `${num(t.recurrentState.convolution)} + ${num(t.recurrentState.state)}`]);
  return f;
}

// ---- tooltip -------------------------------------------------------------------------------
const tooltip = el('div', { id: 'tooltip', hidden: true });
function tip(event, text) {
  tooltip.hidden = text === undefined;
  if (text === undefined) return;
  tooltip.textContent = text;
  tooltip.style.left = `${event.clientX + 12}px`;
  tooltip.style.top = `${event.clientY + 12}px`;
}

// ---- layer map -----------------------------------------------------------------------------
function renderLayers(map) {
  const grid = $('layer-map');
  const kindLabel = (k) => k.replace(/\.weight$/, '');
  // Column widths by the kind's largest tensor (square root: a 40x larger FFN is not 40x wider).
  const biggest = Math.max(1, ...map.kinds.map((k) => k.maxBytes));
  const widths = map.kinds.map((k) => Math.max(12, Math.round(110 * Math.sqrt(k.maxBytes / biggest))));
  grid.style.gridTemplateColumns = `40px ${widths.map((w) => `${w}px`).join(' ')}`;
  // Every element placed by its row and column: a block without a tensor of some kind leaves its
  // slot empty, with no element in it (a header of unusual names can have thousands of kinds and
  // blocks, and one element per slot would be millions).
  const place = (node, row, column) => {
    node.style.gridRow = String(row);
    node.style.gridColumn = String(column);
    return node;
  };
  map.kinds.forEach((k, i) => grid.append(place(el('div', { className: 'col-head', text: kindLabel(k.name), title: k.name }), 1, i + 2)));
  const byBlock = new Map();
  for (const c of map.cells) {
    if (!byBlock.has(c.block)) byBlock.set(c.block, []);
    byBlock.get(c.block).push(c);
  }
  const blocks = [...byBlock.keys()].sort((a, b) => a - b);
  blocks.forEach((b, r) => {
    const row = r + 2;
    grid.append(place(el('div', { className: 'row-head', text: String(b) }), row, 1));
    for (const c of byBlock.get(b)) {
      const cell = el('div', { className: 'layer-cell', 'data-name': c.name, 'data-type': c.type });
      cell.style.background = typeColor(c.type);
      const label = `${c.name}\n${c.type}, ${bytes(c.nbytes)}`;
      cell.addEventListener('mousemove', (e) => tip(e, label));
      cell.addEventListener('mouseleave', (e) => tip(e, undefined));
      cell.addEventListener('click', () => openTensor(c.index, c.name));
      grid.append(place(cell, row, c.kind + 2));
    }
  });
  const others = $('layer-others');
  for (const o of map.others) {
    const chip = el('span', { className: 'layer-other', text: o.name, 'data-name': o.name });
    chip.style.background = typeColor(o.type);
    const label = `${o.name}\n${o.type}, ${bytes(o.nbytes)}`;
    chip.addEventListener('mousemove', (e) => tip(e, label));
    chip.addEventListener('mouseleave', (e) => tip(e, undefined));
    chip.addEventListener('click', () => openTensor(o.index, o.name));
    others.append(chip);
  }
  const notes = [];
  if (map.blocks === 0) notes.push('No tensors named blk.N.* in this model.');
  if (map.otherCount > map.others.length) notes.push(`${map.otherCount.toLocaleString('en-US')} tensors outside the blocks; the first ${map.others.length} shown.`);
  if (map.truncated) notes.push('Only the first blocks are drawn (a map past 4,096 cells).');
  $('layer-note').textContent = notes.join(' ');
}

// ---- tensor table: rows drawn as they scroll, pages fetched from the server -----------------
const ROW_HEIGHT = 24;
const PAGE = 200;
const table = { filter: '', sort: 'index', matched: 0, pages: new Map(), generation: 0 };

function query(offset) {
  const p = new URLSearchParams({ filter: table.filter, sort: table.sort, offset: String(offset), limit: String(PAGE) });
  return `/api/tensors?${p}`;
}

async function loadPage(pageIndex) {
  if (table.pages.has(pageIndex)) return;
  const generation = table.generation;
  table.pages.set(pageIndex, null);
  const page = await api(query(pageIndex * PAGE));
  if (generation !== table.generation) return;
  table.pages.set(pageIndex, page.rows);
  table.matched = page.matched;
  drawRows();
}

function drawRows() {
  const scroll = $('tensor-scroll');
  const spacer = $('tensor-spacer');
  spacer.style.height = `${table.matched * ROW_HEIGHT}px`;
  $('tensor-count').textContent = table.filter === '' ? `${table.matched.toLocaleString('en-US')}` : `${table.matched.toLocaleString('en-US')} of ${summary.view.tensorCount.toLocaleString('en-US')} match`;
  const first = Math.max(0, Math.floor(scroll.scrollTop / ROW_HEIGHT) - 5);
  const last = Math.min(table.matched, first + Math.ceil(scroll.clientHeight / ROW_HEIGHT) + 10);
  const rows = [];
  for (let k = first; k < last; k++) {
    const pageIndex = Math.floor(k / PAGE);
    const page = table.pages.get(pageIndex);
    if (page === undefined) {
      loadPage(pageIndex).catch(showError);
      continue;
    }
    const t = page?.[k - pageIndex * PAGE];
    if (t === undefined) continue;
    const swatch = el('i', { className: 'swatch' });
    swatch.style.background = typeColor(t.type);
    const row = el(
      'div',
      { className: 'trow', 'data-name': t.name, title: t.name },
      el('span', { className: 'tname', text: t.name }),
      el('span', { className: 'ttype' }, swatch, t.type),
      el('span', { text: `[${t.shape.join(', ')}]` }),
      el('span', { className: 'num tsize', text: bytes(t.nbytes) }),
      el('span', { className: 'num toffset', text: (summary.parts?.length > 1 ? `${t.part + 1}:` : '') + t.offset.toLocaleString('en-US') }),
    );
    row.style.top = `${k * ROW_HEIGHT}px`;
    row.addEventListener('click', () => openTensor(t.index, t.name));
    rows.push(row);
  }
  spacer.replaceChildren(...rows);
}

function resetTable() {
  table.generation++;
  table.pages = new Map();
  $('tensor-scroll').scrollTop = 0;
  for (const b of document.querySelectorAll('#tensor-head button')) {
    const key = table.sort.replace(/^-/, '');
    b.classList.toggle('active', b.dataset.sort === key);
    b.classList.toggle('desc', b.dataset.sort === key && table.sort.startsWith('-'));
  }
  return loadPage(0).catch(showError);
}

function setupTable() {
  let timer;
  $('tensor-filter').addEventListener('input', (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      table.filter = e.target.value;
      resetTable();
    }, 120);
  });
  for (const b of document.querySelectorAll('#tensor-head button')) {
    b.addEventListener('click', () => {
      const key = b.dataset.sort;
      table.sort = table.sort === key ? `-${key}` : key;
      resetTable();
    });
  }
  $('tensor-scroll').addEventListener('scroll', () => drawRows(), { passive: true });
  table.matched = summary.view.tensorCount;
  return resetTable();
}

// ---- one tensor: facts, then statistics and histogram -----------------------------------------
let opened = 0;
// By index: any name works, `.` and `..` too (a URL path would drop them as dot segments).
async function openTensor(index, name) {
  const generation = ++opened;
  const section = $('tensor');
  section.hidden = false;
  $('tensor-name').textContent = name;
  const facts = $('tensor-facts');
  const statsList = $('tensor-stats');
  facts.replaceChildren();
  statsList.replaceChildren();
  $('histogram').replaceChildren();
  section.scrollIntoView({ block: 'start' });
  const t = await api(`/api/tensor?index=${index}`);
  if (generation !== opened) return;
  fact(facts, 'type', t.type);
  fact(facts, 'shape', `[${t.shape.join(', ')}]`);
  fact(facts, 'elements', t.nelements.toLocaleString('en-US'));
  fact(facts, 'size', `${bytes(t.nbytes)} (${t.nbytes.toLocaleString('en-US')} bytes)`);
  fact(facts, 'byte range', `${t.byteRange[0].toLocaleString('en-US')} – ${t.byteRange[1].toLocaleString('en-US')}${summary.parts?.length > 1 ? ` of part ${t.part + 1}` : ''}`);
  fact(facts, 'block', `${t.blockSize} values in ${t.typeSize} bytes`);
  const status = $('tensor-status');
  if (!t.canDequantize) {
    status.textContent = `${t.type} has no float conversion: no statistics.`;
    return;
  }
  const what = t.statsSampled ? `a sample of its rows (${bytes(t.statsBytes)})` : `${bytes(t.statsBytes)}`;
  status.textContent = t.remote ? `Fetching ${what} over HTTP (${t.statsBytes.toLocaleString('en-US')} bytes)…` : `Reading ${what}…`;
  let s;
  try {
    s = await api(`/api/tensor/stats?index=${index}`);
  } catch (error) {
    if (generation === opened) status.textContent = `Statistics failed: ${error.message}`;
    return;
  }
  if (generation !== opened) return;
  // Rows longer than the sample are sampled as pieces of rows.
  const rows = s.sampled && s.sampled.rowLength !== t.rowLength ? `pieces of ${s.sampled.rowLength.toLocaleString('en-US')} values` : 'rows';
  status.textContent = s.sampled
    ? `Sampled: ${s.sampled.rows.toLocaleString('en-US')} of ${s.sampled.of.toLocaleString('en-US')} ${rows} (${s.sampled.runs} evenly spaced runs of ${s.sampled.rowsPerRun}), ${s.count.toLocaleString('en-US')} values.`
    : `All ${s.count.toLocaleString('en-US')} values.`;
  status.dataset.sampled = s.sampled ? 'yes' : 'no';
  const stat = (label, value, key) => {
    const d = el('div', { 'data-stat': key }, el('dt', { text: label }), el('dd', { text: value }));
    statsList.append(d);
  };
  stat('min', num(s.min), 'min');
  stat('max', num(s.max), 'max');
  stat('mean', num(s.mean), 'mean');
  stat('std', num(s.std), 'std');
  stat('NaN', num(s.nan), 'nan');
  stat('±Inf', s.inf === 0 ? '0' : `${num(s.inf)} (+${num(s.posInf)}, −${num(s.negInf)})`, 'inf');
  stat('zeros', `${num(s.zeros)} (${((s.zeros / Math.max(1, s.count)) * 100).toFixed(2)}%)`, 'zeros');
  drawHistogram(s.histogram);
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

function drawHistogram({ edges, counts }) {
  const box = $('histogram');
  if (counts.length === 0) {
    box.append(el('p', { className: 'hint', text: 'No finite values.' }));
    return;
  }
  const W = 900;
  const H = 220;
  const pad = 24;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'histogram of the values' });
  const most = Math.max(...counts);
  const bw = (W - 2 * pad) / counts.length;
  counts.forEach((c, i) => {
    const h = most === 0 ? 0 : ((H - 2 * pad) * c) / most;
    const rect = svg('rect', { x: pad + i * bw, y: H - pad - h, width: Math.max(1, bw - 1), height: h, 'data-count': c });
    const title = svg('title', {});
    title.textContent = `${num(edges[i])} … ${num(edges[i + 1])}: ${c.toLocaleString('en-US')}`;
    rect.append(title);
    chart.append(rect);
  });
  const label = (x, anchor, text) => {
    const t = svg('text', { x, y: H - 6, 'text-anchor': anchor });
    t.textContent = text;
    chart.append(t);
  };
  label(pad, 'start', num(edges[0]));
  label(W - pad, 'end', num(edges[edges.length - 1]));
  const top = svg('text', { x: pad, y: 14 });
  top.textContent = `${most.toLocaleString('en-US')} in the fullest bin`;
  chart.append(top);
  box.append(chart);
}

// ---- metadata: pages of about 1 MiB, more on request ---------------------------------------
const arrayState = { index: 0, filter: '', offset: 0, at: undefined, next: null, nextAt: null, back: [], generation: 0 };
const ARRAY_PAGE = 100;
let metadataNext = null;

function metadataRow(e) {
  const value = el('td');
  if (e.arrayType === undefined) {
    const text = typeof e.value === 'string' && e.value.length > 300 ? `${e.value.slice(0, 300)}… (${e.value.length.toLocaleString('en-US')} characters${e.truncated ? ', cut' : ''})` : JSON.stringify(e.value);
    value.textContent = text;
  } else {
    value.append(`[${e.preview.map((v) => JSON.stringify(v)).join(', ')}${e.length > e.preview.length ? ', …' : ''}] `);
    if (e.length > e.preview.length) {
      const button = el('button', { text: `browse ${e.length.toLocaleString('en-US')}` });
      button.addEventListener('click', () => openArray(e.index, e.key));
      value.append(button);
    }
  }
  const type = e.arrayType === undefined ? e.type : `${e.arrayType}[${e.length.toLocaleString('en-US')}]`;
  const key = e.keyTruncated ? `${e.key}… (cut)` : e.key;
  return el('tr', { 'data-key': e.key }, el('td', { text: key }), el('td', { text: type }), value);
}

function renderMetadata(page) {
  let tbody = $('metadata-table').querySelector('tbody');
  if (tbody === null) {
    tbody = el('tbody');
    tbody.append(el('tr', {}, el('th', { text: 'key' }), el('th', { text: 'type' }), el('th', { text: 'value' })));
    $('metadata-table').replaceChildren(tbody);
  }
  for (const e of page.entries) tbody.append(metadataRow(e));
  metadataNext = page.next;
  const shown = page.next === null ? page.total : page.next;
  $('metadata-count').textContent = shown === page.total ? `${page.total.toLocaleString('en-US')} keys` : `${shown.toLocaleString('en-US')} of ${page.total.toLocaleString('en-US')} keys`;
  $('metadata-more').hidden = page.next === null;
}

function setupMetadata() {
  $('metadata-more').addEventListener('click', () => {
    if (metadataNext !== null) api(`/api/metadata?offset=${metadataNext}`).then(renderMetadata).catch(showError);
  });
  // The template's text, wherever its key is among the pages.
  if (!summary.view.features.chatTemplate) $('chat-template').textContent = '(none)';
  else api('/api/metadata/entry?key=tokenizer.chat_template').then((e) => ($('chat-template').textContent = String(e.value)), showError);
}

// A search looks at a bounded slice of the array per request (the server stays responsive): the
// page asks slice after slice until it has a page of matches or reaches the end.
async function loadArray() {
  const generation = ++arrayState.generation;
  const items = [];
  let offset = arrayState.offset;
  let at = arrayState.at;
  let page;
  do {
    const p = new URLSearchParams({ index: String(arrayState.index), filter: arrayState.filter, offset: String(offset), limit: String(ARRAY_PAGE - items.length) });
    if (at !== undefined && at !== null) p.set('at', String(at));
    page = await api(`/api/metadata/array?${p}`);
    if (generation !== arrayState.generation) return;
    items.push(...page.items);
    offset = page.next;
    at = page.nextAt;
  } while (items.length < ARRAY_PAGE && page.next !== null);
  arrayState.next = page.next;
  arrayState.nextAt = page.nextAt;
  const end = page.next === null ? page.length : page.next;
  const range = `elements ${(arrayState.offset + (end > arrayState.offset ? 1 : 0)).toLocaleString('en-US')}–${end.toLocaleString('en-US')} of ${page.length.toLocaleString('en-US')}`;
  $('array-count').textContent = arrayState.filter ? `${items.length} ${items.length === 1 ? 'match' : 'matches'} in ${range}` : range;
  $('array-items').replaceChildren(...items.map((item) => el('li', { value: item.index, text: JSON.stringify(item.value) })));
}

function openArray(index, key) {
  Object.assign(arrayState, { index, filter: '', offset: 0, at: undefined, back: [] });
  $('array-view').hidden = false;
  $('array-key').textContent = key;
  $('array-filter').value = '';
  loadArray().catch(showError);
}

function setupArrayView() {
  let timer;
  $('array-filter').addEventListener('input', (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      Object.assign(arrayState, { filter: e.target.value, offset: 0, at: undefined, back: [] });
      loadArray().catch(showError);
    }, 150);
  });
  $('array-prev').addEventListener('click', () => {
    const back = arrayState.back.pop();
    if (back === undefined) return;
    Object.assign(arrayState, back);
    loadArray().catch(showError);
  });
  $('array-next').addEventListener('click', () => {
    if (arrayState.next === null) return;
    arrayState.back.push({ offset: arrayState.offset, at: arrayState.at });
    Object.assign(arrayState, { offset: arrayState.next, at: arrayState.nextAt });
    loadArray().catch(showError);
  });
}

// ---- tokenizer and chat template (when the library has them) --------------------------------
function setupText(features) {
  $('tokenizer-absent').hidden = features.tokenizer;
  if (!features.tokenizer) $('tokenizer-absent').textContent = features.tokenizerNote;
  $('tokenizer-box').hidden = !features.tokenizer;
  if (features.tokenizer) {
    let timer;
    const run = async () => {
      const p = new URLSearchParams({ text: $('tokenizer-input').value, special: $('tokenizer-special').checked ? '1' : '0' });
      const r = await api(`/api/tokenize?${p}`);
      $('token-count').textContent = `${r.ids.length} tokens`;
      // A piece that is part of a character (byte-fallback tokens of an emoji) comes as its bytes, <0xF0>, as the CLI shows it.
      const token = (id, piece) =>
        el('span', piece.bytes ? { className: 'bytes', title: `id ${id}: bytes of a character split across tokens` } : { title: `id ${id}` }, piece.text, el('small', { text: String(id) }));
      $('tokens').replaceChildren(...r.ids.map((id, i) => token(id, r.pieces[i])));
    };
    $('tokenizer-input').addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => run().catch(showError), 150);
    });
    $('tokenizer-special').addEventListener('change', () => run().catch(showError));
    run().catch(showError);
  }
  $('chat-absent').hidden = features.chatTemplate;
  $('chat-rendered').hidden = !features.chatTemplate;
  if (features.chatTemplate) {
    api('/api/chat')
      .then((r) => ($('chat-rendered').textContent = r.text))
      .catch((error) => {
        $('chat-rendered').textContent = `The template did not render: ${error.message}`;
      });
  }
}

async function main() {
  // The token now lives in the cookie the first load set: keep it out of the address bar and history.
  if (location.search.includes('token=')) history.replaceState(null, '', location.pathname + location.hash);
  document.body.append(tooltip);
  summary = await api('/api/summary');
  renderSummary(summary);
  document.body.dataset.ready = 'summary';
  // The table's first rows before the layer map: for a million tensors the map's names take the
  // server a second to decode, and the rows need none of them.
  await setupTable();
  setupArrayView();
  setupMetadata();
  setupText(summary.view.features);
  // Each drawn on its own: one failing leaves the other.
  const drawn = await Promise.allSettled([api('/api/layers').then(renderLayers), api('/api/metadata').then(renderMetadata)]);
  for (const d of drawn) if (d.status === 'rejected') showError(d.reason);
  document.body.dataset.ready = 'all';
}

if (inPage !== undefined) inPage.whenOpened(() => main().catch(showError));
else main().catch(showError);
