import type { VocabularySource } from '../../tokenizer/async-tokenizer.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from '../../tokenizer/tokenizer.js';

// A page's encodeAsync/decodeAsync run on the calling thread, in a later microtask (there are no
// worker_threads; a page that must not block runs the library in a Web Worker).

export function registerVocabularySource(_tokenizer: Tokenizer, _source: VocabularySource): void {}

export function encodeOffThread(tokenizer: Tokenizer, text: string, options: EncodeOptions): Promise<Int32Array> {
  const plain = { addSpecial: options.addSpecial, parseSpecial: options.parseSpecial };
  return Promise.resolve().then(() => tokenizer.encode(text, plain));
}

export function decodeOffThread(tokenizer: Tokenizer, ids: ArrayLike<number>, options: DecodeOptions): Promise<string> {
  const plain = { removeSpecial: options.removeSpecial, unparseSpecial: options.unparseSpecial };
  return Promise.resolve().then(() => tokenizer.decode(ids, plain));
}
