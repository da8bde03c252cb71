/**
 * A GGUF vocabulary as llama.cpp's llama_vocab::load reads it: token bytes (left in the header, not
 * copied), types as attributes, scores, special ids, the flags that steer tokenizing, and keyed hash
 * indexes of the tokens and of the BPE merges (names from a file: see format/name-index.ts).
 */
import { GgufError } from '../errors.js';
import type { GgufMetadata } from '../file/metadata.js';
import { ByteIndex, type RawStrings } from './byte-index.js';
import { preTokenizerOf, type PreTokenizer } from './pre-tokenizers.js';

/** llama_token_attr bits. */
export const ATTR_UNKNOWN = 1 << 0;
export const ATTR_UNUSED = 1 << 1;
export const ATTR_NORMAL = 1 << 2;
export const ATTR_CONTROL = 1 << 3;
export const ATTR_USER_DEFINED = 1 << 4;
export const ATTR_BYTE = 1 << 5;
export const ATTR_LSTRIP = 1 << 7;
export const ATTR_RSTRIP = 1 << 8;

/** GGUF token types (tokenizer.ggml.token_type) to attributes. */
const TYPE_TO_ATTR = [0, ATTR_NORMAL, ATTR_UNKNOWN, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_UNUSED, ATTR_BYTE];
export const TOKEN_TYPE_NAMES = ['undefined', 'normal', 'unknown', 'control', 'user-defined', 'unused', 'byte'] as const;
export type TokenTypeName = (typeof TOKEN_TYPE_NAMES)[number];

export type VocabType = 'SPM' | 'BPE' | 'WPM' | 'UGM' | 'RWKV';

export interface SpecialIds {
  bos: number;
  eos: number;
  eot: number;
  eom: number;
  unk: number;
  sep: number;
  pad: number;
  mask: number;
  fimPre: number;
  fimSuf: number;
  fimMid: number;
  fimPad: number;
  fimRep: number;
  fimSep: number;
}

const NULL = -1;
const encoder = new TextEncoder();

/** A STRING array's raw bytes and count, or undefined if absent. */
interface RawStringArray {
  raw: RawStrings;
  count: number;
}

function rawStrings(metadata: GgufMetadata, key: string): RawStringArray | undefined {
  const array = metadata.array(key);
  if (array === undefined) return undefined;
  if (array.elementType !== 'STRING') throw new GgufError('UNSUPPORTED_TOKENIZER', `'${key}' is an array of ${array.elementType}, not of strings`, metadata.info(key)!.offset);
  return { raw: array.rawBytes(), count: array.length };
}

export class Vocabulary {
  readonly type: VocabType;
  readonly model: string;
  readonly pre: string | undefined;
  readonly preTokenizer: PreTokenizer | undefined;
  readonly size: number;
  readonly bytes: Uint8Array;
  readonly starts: Uint32Array;
  readonly ends: Uint32Array;
  /** tokenizer.ggml.token_type (a view of the file), read through attr(). */
  private readonly types: Int32Array | undefined;
  /** Attributes llama.cpp's adjustments changed (a few tokens found by their text). */
  private readonly adjusted = new Map<number, number>();
  readonly scores: Float32Array | Int32Array | undefined;
  readonly special: SpecialIds;
  readonly eog: Set<number>;
  addBos = false;
  addEos = false;
  addSep = false;
  addSpacePrefix = false;
  removeExtraWhitespaces = false;
  escapeWhitespaces = true;
  treatWhitespaceAsSuffix = false;
  cleanSpaces = false;
  ignoreMerges = false;
  /** BERT normalizer options (llama.cpp's defaults: both on). */
  lowercase = true;
  stripAccents = true;
  private longest = -1;
  /** Token text to id (the last of duplicates, as llama.cpp's map). */
  private readonly index: ByteIndex;
  /**
   * "left right" to rank (the first of duplicates, as llama.cpp's emplace). Built at the first
   * merge: the largest index of a vocabulary (280k merges in Llama 3's), and an encode whose words
   * are all whole tokens never needs it.
   */
  private merges: ByteIndex | undefined;
  private mergeStrings: RawStringArray | undefined;
  /** Control, user-defined and unknown tokens, longest text first (llama.cpp's cache_special_tokens). */
  readonly specialTokens: Int32Array;
  readonly charsmap: Uint8Array | undefined;

  constructor(metadata: GgufMetadata, modelName: string) {
    const modelKey = metadata.info('tokenizer.ggml.model');
    const model = metadata.type('tokenizer.ggml.model') === 'STRING' ? metadata.getString('tokenizer.ggml.model')! : undefined;
    if (model === undefined) throw new GgufError('UNSUPPORTED_TOKENIZER', `${modelName}: no tokenizer.ggml.model string`, modelKey?.offset ?? 0);
    this.model = model;
    const preKey = metadata.info('tokenizer.ggml.pre');
    let pre = metadata.type('tokenizer.ggml.pre') === 'STRING' ? metadata.getString('tokenizer.ggml.pre') : undefined;
    const unsupported = (why: string) => new GgufError('UNSUPPORTED_TOKENIZER', `${modelName}: ${why}`, preKey?.offset ?? modelKey!.offset);
    const s: SpecialIds = { bos: NULL, eos: NULL, eot: NULL, eom: NULL, unk: NULL, sep: NULL, pad: NULL, mask: NULL, fimPre: NULL, fimSuf: NULL, fimMid: NULL, fimPad: NULL, fimRep: NULL, fimSep: NULL };
    this.special = s;
    let type: VocabType;
    if (model === 'llama') {
      type = 'SPM';
      Object.assign(s, { bos: 1, eos: 2, unk: 0 });
    } else if (model === 'bert') {
      type = 'WPM';
      Object.assign(s, { bos: 101, unk: 100, sep: 102, pad: 0, mask: 103 });
      this.addSep = true;
    } else if (model === 'gpt2') {
      type = 'BPE';
      Object.assign(s, { bos: 11, eos: 11 });
    } else if (model === 't5') {
      type = 'UGM';
      Object.assign(s, { eos: 1, unk: 2, pad: 0 });
    } else if (model === 'rwkv') {
      type = 'RWKV';
    } else if (model === 'gemma4') {
      type = 'BPE';
      pre = 'gemma4';
    } else {
      throw unsupported(`tokenizer model '${model}'${pre === undefined ? '' : ` (pre-tokenizer '${pre}')`} is not supported`);
    }
    this.type = type;
    this.pre = pre;

    if (type === 'BPE') {
      this.addSpacePrefix = false;
      this.escapeWhitespaces = false;
      this.cleanSpaces = true;
      const p = preTokenizerOf(pre ?? '');
      if (p === undefined) throw unsupported(`pre-tokenizer '${pre}' of tokenizer model '${model}' is not supported`);
      this.preTokenizer = p;
      Object.assign(this, p.flags);
      if (p.noBos === true) s.bos = NULL;
    } else if (type === 'SPM') {
      this.addSpacePrefix = true;
      this.cleanSpaces = false;
      this.addBos = true;
    } else if (type === 'WPM') {
      this.cleanSpaces = true;
      this.addBos = true;
      this.addSep = true;
    } else if (type === 'UGM') {
      this.addEos = true;
    }
    const bool = (key: string): boolean | undefined => (metadata.type(key) === 'BOOL' ? metadata.getBoolean(key) : undefined);
    this.addSpacePrefix = bool('tokenizer.ggml.add_space_prefix') ?? this.addSpacePrefix;
    this.removeExtraWhitespaces = bool('tokenizer.ggml.remove_extra_whitespaces') ?? this.removeExtraWhitespaces;

    const tokens = rawStrings(metadata, 'tokenizer.ggml.tokens');
    if (tokens === undefined) throw unsupported('no tokenizer.ggml.tokens');
    const n = tokens.count;
    this.size = n;
    if (n === 0) throw unsupported('an empty vocabulary');
    if (n > 0x7fffffff) throw unsupported('more tokens than int32 ids');
    this.index = ByteIndex.ofStrings(tokens.raw, n, true);
    this.bytes = tokens.raw.bytes;
    this.starts = this.index.starts;
    this.ends = this.index.ends;

    const scoresKey = metadata.info('tokenizer.ggml.scores');
    if (scoresKey !== undefined) {
      if (scoresKey.arrayType !== 'FLOAT32' && scoresKey.arrayType !== 'INT32') throw new GgufError('UNSUPPORTED_TOKENIZER', `${modelName}: tokenizer.ggml.scores is not an array of FLOAT32 or INT32`, scoresKey.offset);
      if (scoresKey.length! < n) throw new GgufError('UNSUPPORTED_TOKENIZER', `${modelName}: ${scoresKey.length} scores for ${n} tokens`, scoresKey.offset);
      this.scores = metadata.get('tokenizer.ggml.scores') as Float32Array | Int32Array;
    }
    const typesKey = metadata.info('tokenizer.ggml.token_type');
    let types: Int32Array | undefined;
    if (typesKey !== undefined) {
      if (typesKey.arrayType !== 'INT32') throw new GgufError('UNSUPPORTED_TOKENIZER', `${modelName}: tokenizer.ggml.token_type is not an array of INT32`, typesKey.offset);
      if (typesKey.length! < n) throw new GgufError('UNSUPPORTED_TOKENIZER', `${modelName}: ${typesKey.length} token types for ${n} tokens`, typesKey.offset);
      types = metadata.get('tokenizer.ggml.token_type') as Int32Array;
    }
    // No per-token JS loop at load (it would run in the interpreter, before the JIT): the types
    // stay in the file, the few control, user-defined and unknown tokens are found with indexOf.
    this.types = types?.subarray(0, n);
    const candidates: number[] = [];
    if (this.types !== undefined) {
      for (const t of [2, 3, 4]) for (let i = this.types.indexOf(t); i >= 0; i = this.types.indexOf(t, i + 1)) candidates.push(i);
    }

    if (type === 'BPE') {
      const merges = rawStrings(metadata, 'tokenizer.ggml.merges');
      if (merges === undefined) {
        if (pre !== 'kimi-k2') throw unsupported('no tokenizer.ggml.merges for a BPE vocabulary');
      } else {
        this.mergeStrings = merges;
      }
    }
    if (type === 'UGM') {
      const info = metadata.info('tokenizer.ggml.precompiled_charsmap');
      if (info !== undefined) {
        if (info.arrayType !== 'UINT8' && info.arrayType !== 'INT8') throw new GgufError('UNSUPPORTED_TOKENIZER', `${modelName}: precompiled_charsmap is not an array of bytes`, info.offset);
        const raw = metadata.get('tokenizer.ggml.precompiled_charsmap') as Uint8Array | Int8Array;
        this.charsmap = new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
      }
    }

    // Special ids: defaults out of range are dropped; keys out of range keep the default.
    const keys: Array<[keyof SpecialIds, string]> = [
      ['bos', 'bos_token_id'], ['eos', 'eos_token_id'], ['eot', 'eot_token_id'], ['eom', 'eom_token_id'], ['unk', 'unknown_token_id'],
      ['sep', 'seperator_token_id'], ['pad', 'padding_token_id'], ['mask', 'mask_token_id'], ['fimPre', 'fim_pre_token_id'], ['fimSuf', 'fim_suf_token_id'],
      ['fimMid', 'fim_mid_token_id'], ['fimPad', 'fim_pad_token_id'], ['fimRep', 'fim_rep_token_id'], ['fimSep', 'fim_sep_token_id'],
      ['fimPre', 'prefix_token_id'], ['fimSuf', 'suffix_token_id'], ['fimMid', 'middle_token_id'],
    ];
    for (const [name, key] of keys) {
      if (s[name] >= n) s[name] = NULL;
      const full = `tokenizer.ggml.${key}`;
      const t = metadata.type(full);
      if (t === undefined || !['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'UINT64', 'INT64'].includes(t)) continue;
      const v = Number(metadata.getBigInt(full)! & 0xffffffffn);
      if (v < n) s[name] = v;
    }
    this.addBos = bool('tokenizer.ggml.add_bos_token') ?? this.addBos;
    this.addEos = bool('tokenizer.ggml.add_eos_token') ?? this.addEos;
    this.addSep = bool('tokenizer.ggml.add_sep_token') ?? this.addSep;
    if (this.preTokenizer?.kind === 'gemma4' && !this.addBos) this.addBos = true;
    this.lowercase = bool('tokenizer.ggml.normalizer.lowercase') ?? this.lowercase;
    this.stripAccents = bool('tokenizer.ggml.normalizer.strip_accents') ?? this.lowercase;

    // Tokens found by their text (llama.cpp's workarounds for files without the ids).
    const control = (id: number) => {
      this.setAttr(id, this.attr(id) | ATTR_CONTROL);
    };
    const findFirst = (name: keyof SpecialIds, texts: readonly string[]) => {
      if (s[name] !== NULL) return;
      for (const text of texts) {
        const id = this.tokenId(text);
        if (id !== undefined) {
          s[name] = id;
          control(id);
          return;
        }
      }
    };
    findFirst('eot', ['<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|end_of_text|>', '<EOT>', '_<EOT>', '[EOT]', '<｜end▁of▁sentence｜>', '<end_of_utterance>']);
    findFirst('eom', ['<|eom_id|>']);
    findFirst('fimPre', ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>']);
    findFirst('fimSuf', ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>']);
    findFirst('fimMid', ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>']);
    findFirst('fimPad', ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]']);
    findFirst('fimRep', ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>']);
    findFirst('fimSep', ['<|file_sep|>']);

    const unusedBytes = encoder.encode('unused');
    for (const i of candidates) {
      if ((this.attr(i) & ATTR_CONTROL) !== 0 && (this.attr(i) & ATTR_UNUSED) === 0 && this.contains(i, unusedBytes)) this.setAttr(i, this.attr(i) | ATTR_UNUSED);
    }

    const eog = new Set<number>();
    for (const id of [s.fimPad, s.fimRep, s.fimSep]) if (id !== NULL) eog.add(id);
    for (const text of ['<|eot_id|>', '<|im_end|>', '<|end|>', '<|return|>', '<|call|>', '<|flush|>', '<|calls|>', '<end_of_turn>', '<|endoftext|>', '</s>', '<|eom_id|>', '<EOT>', '_<EOT>', '[EOT]', '[EOS]', '<|end_of_text|>', '<end_of_utterance>', '<eos>', '<turn|>', '<|tool_response>', '<｜end▁of▁sentence｜>', '[e~[']) {
      const id = this.tokenId(text);
      if (id !== undefined) {
        eog.add(id);
        control(id);
      }
    }
    for (const text of ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>']) {
      const id = this.tokenId(text);
      if (id !== undefined) this.setAttr(id, ATTR_USER_DEFINED);
    }
    for (const id of [s.eos, s.eot, s.eom]) if (id !== NULL) eog.add(id);
    const eogText = (text: string) => [...eog].find((id) => this.textIs(id, text));
    const end = eogText('<|end|>');
    if (end !== undefined && ((eogText('<|return|>') !== undefined && eogText('<|call|>') !== undefined) || ((eogText('<|call|>') ?? eogText('<|calls|>')) !== undefined && eogText('<|flush|>') !== undefined))) {
      eog.delete(end);
      this.setAttr(end, ATTR_USER_DEFINED);
    }
    const endS = eogText('</s>');
    if (endS !== undefined && eogText('<|tool_response>') !== undefined) {
      eog.delete(endS);
      this.setAttr(endS, ATTR_NORMAL);
    }
    this.eog = eog;

    const specials: number[] = [];
    // Tokens made control or user-defined above are the ones found by text (special ids included).
    const found = [...Object.values(s), ...eog].filter((id) => id >= 0);
    for (const text of ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>', '<|end|>', '</s>']) {
      const id = this.tokenId(text);
      if (id !== undefined) found.push(id);
    }
    for (const i of new Set([...candidates, ...found])) if ((this.attr(i) & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) !== 0) specials.push(i);
    specials.sort((a, b) => this.ends[b]! - this.starts[b]! - (this.ends[a]! - this.starts[a]!) || a - b);
    this.specialTokens = Int32Array.from(specials);

    // Per-model attributes llama.cpp sets by name.
    const name = (metadata.type('general.name') === 'STRING' ? metadata.getString('general.name')! : '').toLowerCase();
    const arch = metadata.type('general.architecture') === 'STRING' ? metadata.getString('general.architecture')! : '';
    const prePlain = pre ?? '';
    if (['jina-v2-de', 'jina-v2-es', 'jina-v2-code'].some((x) => prePlain.includes(x)) || ['nomic-bert-moe', 'jina-bert-v3'].some((x) => arch.includes(x))) {
      const id = this.tokenId('<mask>');
      if (id !== undefined) this.setAttr(id, this.attr(id) | ATTR_LSTRIP);
    } else if (name.includes('phi-3') || name.includes('phi3')) {
      for (const id of specials) this.setAttr(id, this.attr(id) | ATTR_RSTRIP);
      const set = (text: string, on: boolean) => {
        const id = this.tokenId(text);
        if (id !== undefined) this.setAttr(id, on ? this.attr(id) | ATTR_RSTRIP : this.attr(id) & ~ATTR_RSTRIP);
      };
      set('</s>', true);
      for (const t of ['<unk>', '<s>', '<|endoftext|>']) set(t, false);
    } else if (name.includes('modern-bert')) {
      const id = this.tokenId('[MASK]');
      if (id !== undefined) this.setAttr(id, this.attr(id) | ATTR_LSTRIP);
    }
  }

  /** llama_token_attr bits of a token. */
  attr(id: number): number {
    if (this.adjusted.size > 0) {
      const a = this.adjusted.get(id);
      if (a !== undefined) return a;
    }
    return this.types === undefined ? ATTR_NORMAL : (TYPE_TO_ATTR[this.types[id]!] ?? 0);
  }

  /**
   * The ids whose attributes have any of `bits`, in order: one pass over the types, no call per
   * token (Unigram's first encode takes its tokens from 250 K).
   */
  idsWithAttr(bits: number): Int32Array {
    const ids = new Int32Array(this.size);
    let n = 0;
    const types = this.types;
    if (types === undefined) {
      if ((ATTR_NORMAL & bits) !== 0) for (; n < this.size; n++) ids[n] = n;
    } else {
      const hit = Uint8Array.from(TYPE_TO_ATTR, (a) => ((a & bits) !== 0 ? 1 : 0));
      for (let id = 0; id < this.size; id++) if (hit[types[id]!] === 1) ids[n++] = id;
    }
    let list = ids.subarray(0, n);
    // The few attributes llama.cpp's adjustments changed.
    const changed = [...this.adjusted.keys()].filter((id) => ((this.attr(id) & bits) !== 0) !== ((this.typeAttr(id) & bits) !== 0));
    if (changed.length > 0) {
      const set = new Set(list);
      for (const id of changed) {
        if ((this.attr(id) & bits) !== 0) set.add(id);
        else set.delete(id);
      }
      list = Int32Array.from(set).sort();
    }
    return list;
  }

  /** Attributes from the token's type alone. */
  private typeAttr(id: number): number {
    return this.types === undefined ? ATTR_NORMAL : (TYPE_TO_ATTR[this.types[id]!] ?? 0);
  }

  private setAttr(id: number, bits: number): void {
    this.adjusted.set(id, bits);
  }

  /** The longest token text in bytes (for WordPiece, Unigram and RWKV lookups). */
  get maxTokenLength(): number {
    if (this.longest < 0) {
      let longest = 0;
      for (let i = 0; i < this.size; i++) longest = Math.max(longest, this.ends[i]! - this.starts[i]!);
      this.longest = longest;
    }
    return this.longest;
  }

  private contains(id: number, needle: Uint8Array): boolean {
    const a = this.starts[id]!;
    const b = this.ends[id]!;
    outer: for (let i = a; i + needle.length <= b; i++) {
      for (let k = 0; k < needle.length; k++) if (this.bytes[i + k] !== needle[k]) continue outer;
      return true;
    }
    return false;
  }

  private textIs(id: number, text: string): boolean {
    const t = encoder.encode(text);
    const a = this.starts[id]!;
    if (this.ends[id]! - a !== t.length) return false;
    for (let k = 0; k < t.length; k++) if (this.bytes[a + k] !== t[k]) return false;
    return true;
  }

  /** The id of the token whose text is bytes [start, end) of `source`, or -1. */
  find(source: Uint8Array, start: number, end: number): number {
    return this.index.find(source, start, end);
  }

  tokenId(text: string): number | undefined {
    const b = encoder.encode(text);
    const id = this.find(b, 0, b.length);
    return id < 0 ? undefined : id;
  }

  private buildMerges(): ByteIndex | undefined {
    const strings = this.mergeStrings;
    if (strings === undefined) return undefined;
    this.mergeStrings = undefined;
    return (this.merges = ByteIndex.ofStrings(strings.raw, strings.count, false));
  }

  /** The rank of merging the two byte ranges (bytes "left right" at [start, end) of `source`), or -1. */
  mergeRank(source: Uint8Array, start: number, end: number): number {
    const merges = this.merges ?? this.buildMerges();
    return merges === undefined ? -1 : merges.find(source, start, end);
  }

  private byteTokens: Int32Array | undefined;

  /** The token of one byte for SPM/UGM byte fallback ("<0xXX>", else the byte itself), or -1. */
  byteToken(byte: number): number {
    this.byteTokens ??= new Int32Array(256).fill(-2);
    let id = this.byteTokens[byte]!;
    if (id === -2) {
      const hex = `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`;
      id = this.tokenId(hex) ?? this.find(Uint8Array.of(byte), 0, 1);
      this.byteTokens[byte] = id;
    }
    return id;
  }

  score(id: number): number {
    return this.scores === undefined ? 0 : this.scores[id]!;
  }

  tokenBytes(id: number): Uint8Array {
    return this.bytes.subarray(this.starts[id]!, this.ends[id]!);
  }
}
