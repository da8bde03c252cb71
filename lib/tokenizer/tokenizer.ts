/**
 * A GGUF file's tokenizer, as llama.cpp v0.5.0 (llama_tokenize / llama_detokenize) applies it:
 * one class over the vocabulary types (SPM, BPE, WPM, UGM, RWKV), built from the metadata alone.
 */
import { GgufError } from '../errors.js';
import type { GgufMetadata } from '../file/metadata.js';
import { BpeSession } from './bpe.js';
import { decodeOffThread, encodeOffThread } from '#platform/async-tokenizer';
import { rwkvTokenize, rwkvUnescape } from './rwkv.js';
import { SpecialTokenSplitter, type Fragment } from './special-split.js';
import { spmTokenize } from './spm.js';
import { UgmSession } from './ugm.js';
import { CPT_TO_BYTE, decodeCodepoints, putUtf8 } from './unicode.js';
import {
  ATTR_BYTE,
  ATTR_CONTROL,
  ATTR_NORMAL,
  ATTR_UNKNOWN,
  ATTR_USER_DEFINED,
  TOKEN_TYPE_NAMES,
  Vocabulary,
  type TokenTypeName,
  type VocabType,
} from './vocab.js';
import { wpmTokenize } from './wpm.js';

export interface EncodeOptions {
  /** Add BOS/EOS (and SEP for BERT) as the vocabulary says (default true). */
  addSpecial?: boolean;
  /** Turn the texts of control tokens in the text into those tokens (default false). */
  parseSpecial?: boolean;
}

export interface DecodeOptions {
  /** Drop a leading BOS and trailing EOS that the vocabulary adds (default false). */
  removeSpecial?: boolean;
  /** Render control and unknown tokens as their text (default false: they render as nothing). */
  unparseSpecial?: boolean;
}

/** A decoder for tokens that arrive one at a time: characters split across tokens come out whole, once. */
export interface StreamingDecoder {
  /** The text completed by these tokens. */
  push(...ids: number[]): string;
  /** What is left (an incomplete character as U+FFFD). */
  flush(): string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
const SPACE_ESCAPE = [0xe2, 0x96, 0x81];

export class Tokenizer {
  private readonly vocab: Vocabulary;
  private bpe: BpeSession | undefined;
  private ugm: UgmSession | undefined;

  /** Whether the file's header is gone (closed): the vocabulary's texts, types and scores lie in it. */
  private readonly headerGone: () => boolean;

  /** @internal Made by GgufFile.tokenizer(). */
  constructor(metadata: GgufMetadata, modelName = 'model') {
    this.vocab = new Vocabulary(metadata, modelName);
    this.headerGone = () => metadata.headerGone();
  }

  /** CLOSED once the file is closed: its pages read as zeros, and ids or text made from them would be wrong. */
  private checkOpen(): void {
    if (this.headerGone()) throw new GgufError('CLOSED', "tokenizer used after its file was closed (the vocabulary is read from the file's header)", 0);
  }

  /** 'SPM', 'BPE', 'WPM', 'UGM' or 'RWKV' (llama.cpp's vocabulary types). */
  get type(): VocabType {
    return this.vocab.type;
  }
  /** tokenizer.ggml.model. */
  get model(): string {
    return this.vocab.model;
  }
  /** tokenizer.ggml.pre (undefined when absent). */
  get pre(): string | undefined {
    return this.vocab.pre;
  }
  get vocabSize(): number {
    return this.vocab.size;
  }
  private id(id: number): number | undefined {
    return id < 0 ? undefined : id;
  }
  get bos(): number | undefined { return this.id(this.vocab.special.bos); }
  get eos(): number | undefined { return this.id(this.vocab.special.eos); }
  get eot(): number | undefined { return this.id(this.vocab.special.eot); }
  get eom(): number | undefined { return this.id(this.vocab.special.eom); }
  get unk(): number | undefined { return this.id(this.vocab.special.unk); }
  get sep(): number | undefined { return this.id(this.vocab.special.sep); }
  get pad(): number | undefined { return this.id(this.vocab.special.pad); }
  get mask(): number | undefined { return this.id(this.vocab.special.mask); }
  get fimPre(): number | undefined { return this.id(this.vocab.special.fimPre); }
  get fimSuf(): number | undefined { return this.id(this.vocab.special.fimSuf); }
  get fimMid(): number | undefined { return this.id(this.vocab.special.fimMid); }
  get fimPad(): number | undefined { return this.id(this.vocab.special.fimPad); }
  get fimRep(): number | undefined { return this.id(this.vocab.special.fimRep); }
  get fimSep(): number | undefined { return this.id(this.vocab.special.fimSep); }
  /** Whether encode() adds BOS / EOS with addSpecial. */
  get addsBos(): boolean { return this.vocab.addBos; }
  get addsEos(): boolean { return this.vocab.addEos; }

  /** Whether the token ends generation (llama_vocab_is_eog). */
  isEog(id: number): boolean {
    return this.vocab.eog.has(id);
  }

  /** The token's type from tokenizer.ggml.token_type, as llama.cpp adjusts it. */
  tokenType(id: number): TokenTypeName {
    this.checkOpen();
    this.check(id);
    const a = this.vocab.attr(id);
    if (a & ATTR_UNKNOWN) return 'unknown';
    if (a & ATTR_CONTROL) return 'control';
    if (a & ATTR_USER_DEFINED) return 'user-defined';
    if (a & ATTR_BYTE) return 'byte';
    if (a & ATTR_NORMAL) return 'normal';
    if (a & 2) return 'unused';
    return TOKEN_TYPE_NAMES[0];
  }

  /** The id of the token whose text is exactly `text`, or undefined. */
  tokenId(text: string): number | undefined {
    this.checkOpen();
    return this.vocab.tokenId(text);
  }

  /** The token's text as stored in the vocabulary (e.g. 'Ġthe', '▁the', '<0x0A>'). */
  tokenText(id: number): string {
    this.checkOpen();
    this.check(id);
    return decoder.decode(this.vocab.tokenBytes(id));
  }

  private check(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocab.size) throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.vocab.size - 1})`);
  }

  /** Token ids of a text, exactly as llama_tokenize(vocab, text, addSpecial, parseSpecial). */
  encode(text: string, options: EncodeOptions = {}): Int32Array {
    this.checkOpen();
    const addSpecial = options.addSpecial ?? true;
    const parseSpecial = options.parseSpecial ?? false;
    if (typeof text !== 'string') throw new TypeError('encode: text must be a string');
    const bytes = encoder.encode(text);
    const fragments = bytes.length === 0 ? [] : this.partition(bytes, parseSpecial);
    const v = this.vocab;
    const s = v.special;
    const out: number[] = [];
    const textOf = (f: { offset: number; length: number }) => bytes.subarray(f.offset, f.offset + f.length);
    switch (v.type) {
      case 'SPM': {
        let prevSpecial = true;
        if (addSpecial && v.addBos) out.push(this.required(s.bos, 'BOS'));
        for (const f of fragments) {
          if (typeof f === 'number') {
            out.push(f);
            prevSpecial = true;
            continue;
          }
          spmTokenize(v, escapeSpaces(textOf(f), v.addSpacePrefix && prevSpecial), out);
          prevSpecial = false;
        }
        if (addSpecial && v.addEos) out.push(this.required(s.eos, 'EOS'));
        break;
      }
      case 'BPE': {
        this.bpe ??= new BpeSession(v, v.preTokenizer!);
        if (addSpecial && v.addBos) out.push(this.required(s.bos, 'BOS'));
        for (const f of fragments) {
          if (typeof f === 'number') out.push(f);
          else this.bpe.tokenize(v.escapeWhitespaces ? escapeSpaces(textOf(f), false) : textOf(f), out);
        }
        if (addSpecial && v.addEos) out.push(this.required(s.eos, 'EOS'));
        break;
      }
      case 'WPM': {
        if (addSpecial) out.push(this.required(s.bos, 'BOS'));
        for (const f of fragments) {
          if (typeof f === 'number') out.push(f);
          else wpmTokenize(v, textOf(f), out);
        }
        if (addSpecial) out.push(this.required(s.sep, 'SEP'));
        break;
      }
      case 'UGM': {
        this.ugm ??= new UgmSession(v);
        if (addSpecial && v.addBos) out.push(this.required(s.bos, 'BOS'));
        for (const f of fragments) {
          if (typeof f === 'number') out.push(f);
          else this.ugm.tokenize(textOf(f), out);
        }
        if (addSpecial && v.addEos) out.push(this.required(s.eos, 'EOS'));
        break;
      }
      case 'RWKV': {
        for (const f of fragments) {
          if (typeof f === 'number') out.push(f);
          else rwkvTokenize(v, textOf(f), out);
        }
        break;
      }
    }
    return Int32Array.from(out);
  }

  /**
   * encode() off the event loop: the same ids, computed on a worker thread of a pool the process
   * shares (short texts on this thread). See docs/api.md, "Tokenizing off the event loop".
   */
  encodeAsync(text: string, options: EncodeOptions = {}): Promise<Int32Array> {
    return encodeOffThread(this, text, options);
  }

  /** decode() off the event loop, as encodeAsync. */
  decodeAsync(ids: ArrayLike<number>, options: DecodeOptions = {}): Promise<string> {
    return decodeOffThread(this, ids, options);
  }

  private required(id: number, what: string): number {
    if (id < 0) throw new GgufError('UNSUPPORTED_TOKENIZER', `the vocabulary adds ${what} but has no ${what} token`, 0);
    return id;
  }

  /** Splitters of special and user-defined tokens: all of them (parseSpecial) or those neither control nor unknown. */
  private splitters: [SpecialTokenSplitter | undefined, SpecialTokenSplitter | undefined] = [undefined, undefined];

  /** Splits special (and user-defined) token texts out of the text, longest token first (tokenizer_st_partition). */
  private partition(bytes: Uint8Array, parseSpecial: boolean): Fragment[] {
    const v = this.vocab;
    const k = parseSpecial ? 1 : 0;
    this.splitters[k] ??= new SpecialTokenSplitter(parseSpecial ? v.specialTokens : v.specialTokens.filter((id) => (v.attr(id) & (ATTR_CONTROL | ATTR_UNKNOWN)) === 0), v);
    return this.splitters[k].split(bytes);
  }

  /** The bytes of a token's piece (llama_token_to_piece with lstrip 0): control and unknown tokens are empty unless `special`. */
  pieceBytes(id: number, options: { special?: boolean } = {}): Uint8Array {
    this.checkOpen();
    this.check(id);
    return this.piece(id, options.special ?? true);
  }

  /** A token's piece as text (see pieceBytes; an incomplete character is U+FFFD). */
  tokenToPiece(id: number, options: { special?: boolean } = {}): string {
    return decoder.decode(this.pieceBytes(id, options));
  }

  private piece(id: number, special: boolean): Uint8Array {
    const v = this.vocab;
    const attr = v.attr(id);
    if (!special && (attr & (ATTR_UNKNOWN | ATTR_CONTROL)) !== 0) return EMPTY;
    const text = v.tokenBytes(id);
    if (v.type === 'RWKV') return rwkvUnescape(text);
    if (attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED)) return text;
    if (attr & ATTR_NORMAL) {
      if (v.type === 'BPE' && !v.escapeWhitespaces) return byteDecode(text);
      return unescapeSpaces(text);
    }
    if (attr & ATTR_BYTE) {
      if (v.type === 'WPM') return EMPTY;
      return Uint8Array.of(parseHexByte(text));
    }
    return EMPTY;
  }

  /** The bytes of llama_detokenize(ids, removeSpecial, unparseSpecial). */
  decodeBytes(ids: ArrayLike<number>, options: DecodeOptions = {}): Uint8Array {
    this.checkOpen();
    const v = this.vocab;
    const removeSpecial = options.removeSpecial ?? false;
    const unparseSpecial = options.unparseSpecial ?? false;
    for (let i = 0; i < ids.length; i++) this.check(ids[i]!);
    let first = 0;
    let last = ids.length;
    let removeSpace = v.addSpacePrefix;
    if (removeSpecial && v.addBos && last > 0 && ids[0] === v.special.bos) {
      removeSpace = false;
      first++;
    }
    if (removeSpecial && v.addEos && last > first && ids[last - 1] === v.special.eos) last--;
    const pieces: Uint8Array[] = [];
    let total = 0;
    for (let i = first; i < last; i++) {
      let p = this.piece(ids[i]!, unparseSpecial);
      if (removeSpace && p.length > 0 && p[0] === 0x20) p = p.subarray(1);
      removeSpace = false;
      pieces.push(p);
      total += p.length;
    }
    let out: Uint8Array = new Uint8Array(total);
    let at = 0;
    for (const p of pieces) {
      out.set(p, at);
      at += p.length;
    }
    if (v.cleanSpaces) out = cleanSpaces(out);
    return out;
  }

  /** llama_detokenize(ids, removeSpecial, unparseSpecial) as text (invalid UTF-8 as U+FFFD). */
  decode(ids: ArrayLike<number>, options: DecodeOptions = {}): string {
    return decoder.decode(this.decodeBytes(ids, options));
  }

  /**
   * A decoder for tokens that come one at a time: the pieces of llama_token_to_piece, the first
   * one's leading space removed where the vocabulary adds one, unless `continuation` (the ids go
   * on from a text already shown, as a server streams what it generates after a prompt: llama.cpp
   * gives each its piece as it is). (llama_detokenize's clean-up of spaces before punctuation
   * needs the whole text and is not applied.)
   */
  streamingDecoder(options: { unparseSpecial?: boolean; continuation?: boolean } = {}): StreamingDecoder {
    const text = new TextDecoder('utf-8', { ignoreBOM: true });
    let first = this.vocab.addSpacePrefix && options.continuation !== true;
    return {
      push: (...ids: number[]) => {
        this.checkOpen();
        let s = '';
        for (const id of ids) {
          this.check(id);
          let p = this.piece(id, options.unparseSpecial ?? false);
          if (first && p.length > 0 && p[0] === 0x20) p = p.subarray(1);
          first = false;
          s += text.decode(p, { stream: true });
        }
        return s;
      },
      flush: () => text.decode(),
    };
  }
}

const EMPTY = new Uint8Array(0);

function parseHexByte(text: Uint8Array): number {
  // "<0xXX>": strtol of the two characters after "<0x" (non-hex ends the number).
  let v = 0;
  for (let k = 3; k < 5 && k < text.length; k++) {
    const c = text[k]!;
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 55 : c >= 0x61 && c <= 0x66 ? c - 87 : -1;
    if (d < 0) break;
    v = v * 16 + d;
  }
  return v & 0xff;
}

/** Spaces to U+2581 (with one in front if asked), as llama.cpp's llama_escape_whitespace. */
function escapeSpaces(text: Uint8Array, prefix: boolean): Uint8Array {
  let spaces = prefix ? 1 : 0;
  for (let i = 0; i < text.length; i++) if (text[i] === 0x20) spaces++;
  if (spaces === 0) return text;
  const out = new Uint8Array(text.length + (prefix ? 1 : 0) + spaces * 2);
  let o = 0;
  if (prefix) {
    out.set(SPACE_ESCAPE, 0);
    o = 3;
  }
  for (let i = 0; i < text.length; i++) {
    const b = text[i]!;
    if (b === 0x20) {
      out[o++] = 0xe2;
      out[o++] = 0x96;
      out[o++] = 0x81;
    } else out[o++] = b;
  }
  return out;
}

function unescapeSpaces(text: Uint8Array): Uint8Array {
  let found = false;
  for (let i = 0; i + 2 < text.length; i++) if (text[i] === 0xe2 && text[i + 1] === 0x96 && text[i + 2] === 0x81) found = true;
  if (!found) return text;
  const out = new Uint8Array(text.length);
  let o = 0;
  for (let i = 0; i < text.length; i++) {
    if (i + 2 < text.length && text[i] === 0xe2 && text[i + 1] === 0x96 && text[i + 2] === 0x81) {
      out[o++] = 0x20;
      i += 2;
    } else out[o++] = text[i]!;
  }
  return out.subarray(0, o);
}

/** GPT-2's byte-level alphabet back to bytes (llama_decode_text, with its [UNK_BYTE_...] for other codepoints). */
function byteDecode(text: Uint8Array): Uint8Array {
  const offsets = new Uint32Array(text.length + 1);
  const cpts = decodeCodepoints(text, 0, text.length, offsets);
  const out: number[] = [];
  for (let i = 0; i < cpts.length; i++) {
    const c = cpts[i]!;
    const b = c < CPT_TO_BYTE.length ? CPT_TO_BYTE[c]! : -1;
    if (b >= 0) {
      out.push(b);
      continue;
    }
    const utf8 = new Uint8Array(4);
    const n = putUtf8(utf8, 0, c);
    const hex = Array.from(utf8.subarray(0, n), (x) => x.toString(16).padStart(2, '0')).join('');
    out.push(...encoder.encode(`[UNK_BYTE_0x${hex}`), ...text, 0x5d);
  }
  return Uint8Array.from(out);
}

/** llama_detokenize's clean_spaces passes over the bytes. */
function cleanSpaces(text: Uint8Array): Uint8Array {
  const t = text.slice();
  let total = t.length;
  // " ?", " !", " .", " ,"
  let n = total;
  total = n ? 1 : 0;
  for (let i = 1; i < n; i++) {
    const x = t[i]!;
    if (t[i - 1] === 0x20 && (x === 0x3f || x === 0x21 || x === 0x2e || x === 0x2c)) total--;
    t[total++] = x;
  }
  // " ' "
  n = total;
  total = n ? 1 : 0;
  for (let i = 1; i < n; i++) {
    const x = t[i]!;
    if (x === 0x27 && i + 1 < n && t[i - 1] === 0x20 && t[i + 1] === 0x20) {
      total--;
      t[++i] = 0;
    }
    t[total++] = x;
  }
  // " 's", " 'm", " 're", " 've"
  n = total;
  total = n ? 1 : 0;
  for (let i = 1; i < n; i++) {
    const x = t[i]!;
    if (t[i - 1] === 0x20 && x === 0x27 && i + 1 < n) {
      const x1 = t[i + 1]!;
      if (x1 === 0x73 || x1 === 0x6d) total--;
      else if (i + 2 < n) {
        const x2 = t[i + 2]!;
        if ((x1 === 0x72 && x2 === 0x65) || (x1 === 0x76 && x2 === 0x65)) total--;
      }
    }
    t[total++] = x;
  }
  return t.subarray(0, total);
}
