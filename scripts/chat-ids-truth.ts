// Writes test/chat/own-templates-expected.json: for each shared vocabulary that carries its own
// tokenizer.chat_template, a few conversations (with and without tools) rendered by jinja2 (the
// shared chat-template-ref.py) and turned into ids by llama.cpp v0.5.0's server rule: the BOS text
// taken off the front when the vocabulary adds BOS (and a trailing EOS text when it adds EOS),
// then llama_tokenize with add_special and parse_special on, here node-llama-cpp 3.22.1's tokenize
// (parse_special on, add_special off) with the BOS / EOS that add_special adds around it.
//
// node dist/scripts/chat-ids-truth.js [NODE_LLAMA_CPP_DIR] (default /work/ref/node_modules); needs
// python3 with jinja2. Not run by the tests: they read the JSON it wrote.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openGguf } from '../lib/index.js';
import { packageRoot } from '../lib/package-root.js';

const root = packageRoot();
const shared = join(root, '..', 'shared');
const vocabDir = join(shared, 'tokenizer', 'vocab');
const deps = process.argv[2] ?? '/work/ref/node_modules';

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] },
    },
  },
];
const conversations = [
  { id: 'chat', tools: undefined, messages: [
    { role: 'system', content: 'You are brief.' },
    { role: 'user', content: 'Hello! What is 2 + 2?' },
    { role: 'assistant', content: 'It is 4.' },
    { role: 'user', content: 'And in words, with 🙂?' },
  ] },
  { id: 'tools', tools, messages: [
    { role: 'user', content: 'Weather in Paris?' },
  ] },
  { id: 'no-system', tools: undefined, messages: [
    { role: 'user', content: '  spaces\n\nand lines  ' },
    { role: 'assistant', content: 'Noted.' },
    { role: 'user', content: 'Ünïcödé 東京 <s> </s>' },
  ] },
];

interface Case {
  vocab: string;
  id: string;
  messages: object[];
  tools?: object[];
  text: string;
  ids: number[];
}

const dir = mkdtempSync(join(tmpdir(), 'chat-ids-'));
try {
  const vocabs = readdirSync(vocabDir).filter((f) => f.endsWith('.gguf')).sort();
  const inputs: Array<{ vocab: string; conv: (typeof conversations)[number]; bos: string; eos: string; addBos: boolean; addEos: boolean; template: string }> = [];
  for (const file of vocabs) {
    using g = openGguf(join(vocabDir, file));
    const template = g.metadata.getString('tokenizer.chat_template');
    if (template === undefined) continue;
    const tok = g.tokenizer();
    const bos = tok.bos === undefined ? '' : tok.tokenText(tok.bos);
    const eos = tok.eos === undefined ? '' : tok.tokenText(tok.eos);
    for (const conv of conversations) inputs.push({ vocab: file.slice('ggml-vocab-'.length, -'.gguf'.length), conv, bos, eos, addBos: tok.addsBos, addEos: tok.addsEos, template });
  }
  const casesPath = join(dir, 'cases.json');
  writeFileSync(casesPath, JSON.stringify(inputs.map((x, i) => ({ id: String(i), template: x.template, bos_token: x.bos, eos_token: x.eos, messages: x.conv.messages, tools: x.conv.tools, add_generation_prompt: true }))));
  const py = spawnSync('python3', [join(shared, 'chat-templates', 'chat-template-ref.py'), casesPath], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (py.status !== 0) throw new Error(py.stderr);
  const rendered = JSON.parse(py.stdout) as Array<{ id: string; ok: boolean; text?: string; error?: string }>;

  const require = createRequire(join(deps, 'package.json'));
  const nlc = (await import(pathToFileURL(require.resolve('node-llama-cpp')).href)) as {
    getLlama(o: unknown): Promise<{ loadModel(o: unknown): Promise<{ tokenize(t: string, special?: boolean): number[]; dispose(): Promise<void> }> }>;
  };
  const llama = await nlc.getLlama({ gpu: false, logLevel: 'error' });
  const out: Case[] = [];
  for (const [i, x] of inputs.entries()) {
    const r = rendered[i]!;
    if (!r.ok) {
      console.log(`${x.vocab} ${x.conv.id}: the template raises (${r.error}), left out`);
      continue;
    }
    // common/chat.cpp: the BOS text off the front when the vocabulary adds BOS, the EOS text off
    // the end when it adds EOS.
    let text = r.text!;
    if (x.addBos && x.bos !== '' && text.startsWith(x.bos)) text = text.slice(x.bos.length);
    if (x.addEos && x.eos !== '' && text.endsWith(x.eos)) text = text.slice(0, -x.eos.length);
    const model = await llama.loadModel({ modelPath: join(vocabDir, `ggml-vocab-${x.vocab}.gguf`), vocabOnly: true });
    const body = Array.from(model.tokenize(text, true));
    await model.dispose();
    using g = openGguf(join(vocabDir, `ggml-vocab-${x.vocab}.gguf`));
    const tok = g.tokenizer();
    const ids = [...(x.addBos ? [tok.bos!] : []), ...body, ...(x.addEos ? [tok.eos!] : [])];
    out.push({ vocab: x.vocab, id: x.conv.id, messages: x.conv.messages, ...(x.conv.tools === undefined ? {} : { tools: x.conv.tools }), text: r.text!, ids });
  }
  const path = join(root, 'test', 'chat', 'own-templates-expected.json');
  writeFileSync(path, `${JSON.stringify(out, null, 0)}\n`);
  console.log(`wrote ${path}: ${out.length} cases over ${new Set(out.map((c) => c.vocab)).size} vocabularies`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
