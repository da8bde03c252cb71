// Tokenizer.encodeAsync / decodeAsync: exactly encode's ids and decode's text (the shared
// vocabularies, a 4 MB text), computed off the event loop (a timer runs while a long text is
// encoded), on a pool that many calls share, from a copy of the header (close() meanwhile changes
// nothing), and leaving the process free to exit. The worker script is the compiled one: these
// run the library from dist/ (npm test builds it first).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DIST_INDEX } from '../helpers/child.js';
import { SKIP_SHARED, SHARED_DIR, sharedPath } from '../helpers/shared.js';
import { tempDir } from '../helpers/tmp.js';

type Lib = typeof import('../../lib/index.js');
const lib = (await import(DIST_INDEX)) as Lib;
const pool = (await import(DIST_INDEX.replace(/index\.js$/, 'tokenizer/async-tokenizer.js'))) as typeof import('../../lib/tokenizer/async-tokenizer.js');

const vocabDir = SHARED_DIR === undefined ? undefined : sharedPath('tokenizer', 'vocab');
const names = vocabDir === undefined || !existsSync(vocabDir) ? [] : readdirSync(vocabDir).filter((f) => f.endsWith('.gguf')).map((f) => f.slice(0, -5));
const vocabPath = (name: string) => join(vocabDir!, `${name}.gguf`);
const textsOf = (name: string) => (JSON.parse(readFileSync(sharedPath('tokenizer', 'expected', `${name}.json`), 'utf8')) as Array<{ text: string }>).map((e) => e.text);

/** The shared texts, each made long enough to go to a worker (longer than 256 UTF-16 units). */
function longTexts(name: string, tok: import('../../lib/index.js').Tokenizer): string[] {
  const texts = textsOf(name);
  const special = [tok.bos, tok.eos, tok.eot].filter((id) => id !== undefined).map((id) => tok.tokenText(id!));
  const out: string[] = [];
  for (let i = 0; i < texts.length; i += 10) {
    // Ten texts with the vocabulary's special-token texts between (parseSpecial splits them out).
    let text = texts.slice(i, i + 10).join(special[i % Math.max(1, special.length)] ?? ' ');
    while (text.length <= 300) text += ` ${text}`;
    out.push(text);
  }
  return out;
}

const equal = (a: ArrayLike<number>, b: ArrayLike<number>) => a.length === b.length && Array.prototype.every.call(a, (x: number, i: number) => x === b[i]);

describe.skipIf(SKIP_SHARED || names.length === 0)('encodeAsync / decodeAsync on the shared vocabularies', () => {
  it.each(names)('%s: the same ids and text as encode / decode', async (name) => {
    using file = lib.openGguf(vocabPath(name));
    const tok = file.tokenizer();
    for (const text of longTexts(name, tok)) {
      for (const options of [{}, { addSpecial: false, parseSpecial: true }]) {
        const ids = tok.encode(text, options);
        const got = await tok.encodeAsync(text, options);
        expect(got).toBeInstanceOf(Int32Array);
        expect(equal(got, ids), `${name} ${JSON.stringify(options)} ${text.slice(0, 40)}`).toBe(true);
        for (const decodeOptions of [{}, { removeSpecial: true, unparseSpecial: true }]) {
          expect(await tok.decodeAsync(ids, decodeOptions)).toBe(tok.decode(ids, decodeOptions));
          expect(await tok.decodeAsync(Array.from(ids), decodeOptions)).toBe(tok.decode(ids, decodeOptions));
        }
      }
    }
  });
});

describe.skipIf(SKIP_SHARED || !names.includes('ggml-vocab-bert-bge'))('encodeAsync off the event loop', () => {
  it(
    'a 4 MB text: the same ids and text, and a timer runs while it is encoded and decoded',
    async () => {
      using file = lib.openGguf(vocabPath('ggml-vocab-bert-bge'));
      const tok = file.tokenizer();
      const texts = textsOf('ggml-vocab-bert-bge');
      let text = '';
      // A surrogate pair at many places: the text crosses to the worker in parts that may split one.
      for (let i = 0; text.length < 4 << 20; i++) text += `${texts[i % texts.length]} 🙂`;
      const ids = tok.encode(text);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      try {
        const got = await tok.encodeAsync(text);
        const whileEncoding = ticks;
        expect(equal(got, ids)).toBe(true);
        // encode() on this thread would let no timer run until it returned.
        expect(whileEncoding).toBeGreaterThan(0);
        const decoded = await tok.decodeAsync(got);
        expect(ticks).toBeGreaterThan(whileEncoding);
        expect(decoded).toBe(tok.decode(ids));
      } finally {
        clearInterval(timer);
      }
    },
    240_000,
  );

  it('32 concurrent calls share the pool (no worker each) and each gets its own ids', async () => {
    using file = lib.openGguf(vocabPath('ggml-vocab-bert-bge'));
    const tok = file.tokenizer();
    const texts = longTexts('ggml-vocab-bert-bge', tok);
    const inputs = Array.from({ length: 32 }, (_, i) => `${i} ${texts[i % texts.length]}`);
    const calls = inputs.map((t) => tok.encodeAsync(t));
    const maxWorkers = Math.max(1, Math.min(4, (await import('node:os')).availableParallelism() - 1));
    expect(pool.tokenizerWorkerCount()).toBeLessThanOrEqual(maxWorkers);
    const got = await Promise.all(calls);
    expect(pool.tokenizerWorkerCount()).toBeLessThanOrEqual(maxWorkers);
    got.forEach((ids, i) => expect(equal(ids, tok.encode(inputs[i]!)), inputs[i]).toBe(true));
  });

  it('errors as encode / decode throw them; after close(), CLOSED; a call in flight at close() is unaffected', async () => {
    const file = lib.openGguf(vocabPath('ggml-vocab-bert-bge'));
    const tok = file.tokenizer();
    const text = longTexts('ggml-vocab-bert-bge', tok)[0]!.repeat(20);
    await expect(tok.encodeAsync(42 as unknown as string)).rejects.toThrow(new TypeError('encode: text must be a string'));
    const bad = new Int32Array(1000).fill(100);
    bad[700] = tok.vocabSize;
    const thrown = (() => {
      try {
        tok.decode(bad);
      } catch (error) {
        return error as Error;
      }
    })();
    // From the worker (an Int32Array is checked there) and from this thread (a list is checked here).
    await expect(tok.decodeAsync(bad)).rejects.toThrow(thrown);
    await expect(tok.decodeAsync(Array.from(bad))).rejects.toThrow(thrown);
    await expect(tok.decodeAsync(bad)).rejects.toBeInstanceOf(RangeError);
    const ids = tok.encode(text);
    await tok.encodeAsync(text); // the workers' copy of the header is made
    const inFlight = tok.encodeAsync(text);
    file.close();
    expect(equal(await inFlight, ids)).toBe(true);
    await expect(tok.encodeAsync(text)).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(tok.decodeAsync(ids)).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it('a file in memory (parseGguf) too', async () => {
    using file = lib.parseGguf(readFileSync(vocabPath('ggml-vocab-bert-bge')));
    const tok = file.tokenizer();
    const text = longTexts('ggml-vocab-bert-bge', tok)[1]!;
    expect(equal(await tok.encodeAsync(text), tok.encode(text))).toBe(true);
  });

  it('the workers do not keep the process alive, but a call in flight does', () => {
    const script = `
      import { openGguf } from ${JSON.stringify(DIST_INDEX)};
      const tok = openGguf(${JSON.stringify(vocabPath('ggml-vocab-bert-bge'))}).tokenizer();
      const text = 'hello world '.repeat(5000);
      const expected = Array.from(tok.encode(text));
      // Not awaited: only the call in flight holds the process until its answer.
      tok.encodeAsync(text).then((ids) => {
        console.log(JSON.stringify(Array.from(ids).join() === expected.join()));
        // Fires only if something (an idle worker) keeps the process alive: it should exit now.
        setTimeout(() => console.log('still alive'), 3000).unref();
      });
    `;
    // A file, not \`node -e\`: an evaluated module's process exits when it is done, workers or not.
    const path = join(tempDir(), 'alive.mjs');
    writeFileSync(path, script);
    const r = spawnSync(process.execPath, [path], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('true\n');
    expect(r.status).toBe(0);
  }, 150_000);
});
