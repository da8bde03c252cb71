// The page the browser tests drive (test/web/browser.test.ts), bundled from the package as a
// user's app would be: `import ... from 'gguf-mmap'` under the bundler's browser condition.
// Its checks return JSON-safe results; the test compares them with Node's answers.
import { dequantize, estimateMemory, fitGpuLayers, GgufError, largestContext, openGgufBlob, openGgufRemote, parseGguf, renderChatTemplate } from 'gguf-mmap';

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
const sha256 = async (view) => hex(new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(view.buffer, view.byteOffset, view.byteLength))));
const plain = (value) => JSON.parse(JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)));

/** What a page shows of a file: its header, and each tensor's bytes and floats hashed. */
async function describe(file, names) {
  const tensors = [];
  for (const name of names ?? file.tensors.map((t) => t.name)) {
    const t = file.tensor(name);
    const bytes = await t.fetchBytes();
    const floats = await t.dequantizeAsync();
    tensors.push({ name, type: t.type, bytes: await sha256(bytes), floats: await sha256(floats), length: floats.length, rows: t.rows >= 3 ? await sha256(await t.gatherRowsAsync([0, 2, 1])) : null });
  }
  return { mode: file.mode, tensorCount: file.tensorCount, fileSize: file.fileSize, summary: plain(file.summary()), tensors };
}

const ESTIMATE = { contextSize: 2048, cpuFeatures: [] };

window.checks = {
  async remote(url, names) {
    const file = await openGgufRemote(url);
    return {
      ...(await describe(file, names)),
      hyperparameters: plain(file.hyperparameters()),
      estimate: plain(estimateMemory(file, ESTIMATE)),
      largest: largestContext(file, 2 ** 31, { cpuFeatures: [] }),
      gpuEstimate: plain(estimateMemory(file, { ...ESTIMATE, gpu: 'cuda', gpuLayers: 11 })),
      gpuLayers: fitGpuLayers(file, 2 ** 29, { ...ESTIMATE, gpu: 'cuda' }),
      chat: file.applyChatTemplate([{ role: 'user', content: 'Hello there' }], { addGenerationPrompt: true }),
      chatIds: Array.from(file.applyChatTemplate([{ role: 'user', content: 'Hello there' }], { addGenerationPrompt: true, tokenize: true })),
    };
  },
  async picked() {
    const input = document.getElementById('file');
    return describe(await openGgufBlob(input.files[0]));
  },
  async memory(url, name) {
    // parseGguf over the whole file's bytes: the synchronous dequantize of a page's own buffer.
    const file = parseGguf(await (await fetch(url)).arrayBuffer());
    return sha256(dequantize(file.tensor(name).type, file.tensor(name).bytes));
  },
  async tokenize(url, texts) {
    const file = await openGgufRemote(url);
    const tok = file.tokenizer();
    const out = [];
    for (const text of texts) {
      const special = tok.encode(text, { addSpecial: true, parseSpecial: true });
      out.push({
        special: Array.from(special),
        plain: Array.from(await tok.encodeAsync(text, { addSpecial: false, parseSpecial: false })),
        detok: hex(tok.decodeBytes(special, { removeSpecial: false, unparseSpecial: true })),
      });
    }
    return out;
  },
  render(cases, day) {
    return cases.map((c) => {
      try {
        return { ok: true, text: renderChatTemplate(c.template, { messages: c.messages, tools: c.tools, addGenerationPrompt: c.add_generation_prompt, bosToken: c.bos_token, eosToken: c.eos_token, variables: c.extra, now: new Date(day) }) };
      } catch (error) {
        return { ok: false, code: error instanceof GgufError ? error.code : undefined, error: String(error.message) };
      }
    });
  },
};

// A file picked or dropped: its summary on the page (what a user's page would do).
async function show(blob) {
  const file = await openGgufBlob(blob);
  document.getElementById('out').textContent = JSON.stringify(plain(file.summary()), null, 2);
}
document.getElementById('file').addEventListener('change', (e) => e.target.files[0] && show(e.target.files[0]));
document.addEventListener('dragover', (e) => e.preventDefault());
document.addEventListener('drop', (e) => {
  e.preventDefault();
  const f = e.dataTransfer?.files[0];
  if (f) show(f);
});
window.ready = true;
