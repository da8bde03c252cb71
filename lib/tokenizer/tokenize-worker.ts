// A worker of Tokenizer.encodeAsync / decodeAsync (async-tokenizer.ts): builds each vocabulary's
// Tokenizer once, from the caller's shared copy of the header bytes, and runs encode/decode on it.
import { parentPort } from 'node:worker_threads';
import { GgufMetadata } from '../file/metadata.js';
import { PART_LENGTH, serializeError, type TokenizeAnswer, type TokenizeRequest, type VocabularyCopy } from './async-tokenizer.js';
import { Tokenizer } from './tokenizer.js';

const port = parentPort!;
const tokenizers = new Map<number, Tokenizer>();
/** Parts of a long text to encode, before its request; of a decoded text, left to send. */
const incoming = new Map<number, string[]>();
const outgoing = new Map<number, { text: string; at: number }>();

function build(copy: VocabularyCopy): Tokenizer {
  const view = new DataView(copy.bytes);
  // The copy is this worker's (shared with the caller, which never writes it again): never closed.
  const metadata = new GgufMetadata(copy.records, { view, fileSize: copy.fileSize, littleEndian: copy.littleEndian, wideCounts: copy.wideCounts, closed: () => false });
  return new Tokenizer(metadata, copy.name);
}

/** The next part of a decoded text, or the rest with the answer itself. */
function send(id: number): void {
  const out = outgoing.get(id)!;
  if (out.text.length - out.at > PART_LENGTH) {
    port.postMessage({ id, part: out.text.slice(out.at, out.at + PART_LENGTH) } satisfies TokenizeAnswer);
    out.at += PART_LENGTH;
    return;
  }
  outgoing.delete(id);
  port.postMessage({ id, text: out.at === 0 ? out.text : out.text.slice(out.at) } satisfies TokenizeAnswer);
}

port.on('message', (request: TokenizeRequest) => {
  if ('more' in request) return send(request.id);
  if ('part' in request) {
    const parts = incoming.get(request.id) ?? [];
    parts.push(request.part);
    incoming.set(request.id, parts);
    return;
  }
  let answer: TokenizeAnswer;
  try {
    if (request.evict !== undefined) tokenizers.delete(request.evict);
    if (request.vocabulary !== undefined) tokenizers.set(request.vocab, build(request.vocabulary));
    const tokenizer = tokenizers.get(request.vocab)!;
    if (request.kind === 'encode') {
      const parts = incoming.get(request.id);
      incoming.delete(request.id);
      const ids = tokenizer.encode(parts === undefined ? request.text : parts.join('') + request.text, request.options);
      port.postMessage({ id: request.id, ids } satisfies TokenizeAnswer, [ids.buffer as ArrayBuffer]);
      return;
    }
    outgoing.set(request.id, { text: tokenizer.decode(request.ids, request.options), at: 0 });
    return send(request.id);
  } catch (error) {
    incoming.delete(request.id);
    answer = { id: request.id, error: serializeError(error) };
  }
  port.postMessage(answer);
});
port.postMessage({ ready: true } satisfies TokenizeAnswer);
