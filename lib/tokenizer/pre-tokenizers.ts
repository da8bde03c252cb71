/**
 * BPE pre-tokenizers: for each `tokenizer.ggml.pre` name llama.cpp (v0.5.0) knows, the regexes
 * that split a text into words, applied one after the other to each piece the previous left (the
 * text between matches stays a piece too), and the flags the name sets.
 *
 * llama.cpp runs a regex that names Unicode categories (\p{L}, \p{N}, \p{P}, \p{S}, \p{M}) on a
 * "collapsed" text: each codepoint past ASCII replaced by one byte for its category (0xD1 number,
 * 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 other, 0x0B whitespace), and the
 * class as that byte plus its ASCII members. That is what it computes (so, e.g., any non-ASCII
 * letter is both upper- and lowercase to tekken's regex), so it is what is done here, with JS
 * regexes over the same collapsed text. Regexes without categories run on the codepoints, with
 * whitespace past ASCII as 0x0B and \s meaning ASCII whitespace only (C's isspace).
 */
import { latin1String } from '#platform/bytes';
import { afmoeDigits, kimiK2, type CustomSplit } from './custom-splits.js';
import { digitGroupsFromEnd, trailingWhitespace } from './linear-splits.js';
import { cptFlags, CATEGORIES, LETTER, MARK, NUMBER, PUNCTUATION, SYMBOL, WHITESPACE } from './unicode.js';

export interface PreFlags {
  ignoreMerges?: boolean;
  addBos?: boolean;
  cleanSpaces?: boolean;
  escapeWhitespaces?: boolean;
  addSep?: boolean;
  noBos?: boolean;
}

const R0: readonly string[] = ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R1: readonly string[] = ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"];
const R2: readonly string[] = ["[\r\n]", "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+", "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"];
const R3: readonly string[] = ["\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"];
const R4: readonly string[] = ["\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+", "\\p{N}"];
const R5: readonly string[] = ["[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+", "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R6: readonly string[] = ["[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"];
const R7: readonly string[] = ["[\\p{P}\\$\\+<=>\\^~\\|`]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", "[0-9][0-9][0-9]"];
const R8: readonly string[] = ["\\p{N}", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"];
const R9: readonly string[] = ["'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"];
const R10: readonly string[] = ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R11: readonly string[] = ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R12: readonly string[] = [" ?[^(\\s|.,!?…。，、।۔،)]+"];
const R13: readonly string[] = [" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"];
const R14: readonly string[] = ["[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R15: readonly string[] = ["<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"];
const R16: readonly string[] = ["[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R17: readonly string[] = ["[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R18: readonly string[] = ["\\d{1,3}(?=(?:\\d{3})*\\b)", "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R19: readonly string[] = ["\\p{Han}+"];
const R20: readonly string[] = ["\\p{N}+", "(?=(\\d{3})+(?!\\d))"];
const R21: readonly string[] = ["'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"];
const R22: readonly string[] = ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R23: readonly string[] = ["[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R24: readonly string[] = ["\\p{AFMoE_digits}", "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R25: readonly string[] = ["[^\\n]+|[\\n]+", "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R26: readonly string[] = ["(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"];
const R27: readonly string[] = ["[^\\n]+|[\\n]+"];
const R28: readonly string[] = ["\\p{N}{1,3}", "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"];
const R29: readonly string[] = ["\\S+"];
const R30: readonly string[] = ["[\\p{P}\\$\\+<=>\\^~\\|]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", "\\p{N}+", "[0-9][0-9][0-9]"];

const TABLE: ReadonlyArray<readonly [readonly string[], string, readonly string[], boolean, PreFlags]> = [
  [['default'], 'DEFAULT', R30, true, {}],
  [['minicpm5'], 'MINICPM5', R28, true, { ignoreMerges: true }],
  [['llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral', 'midm-2.0', 'lfm2', 'jina-v5-nano'], 'LLAMA3', R0, true, { ignoreMerges: true, addBos: true }],
  [['deepseek-llm'], 'DEEPSEEK_LLM', R2, true, { cleanSpaces: false }],
  [['deepseek-coder'], 'DEEPSEEK_CODER', R6, true, { cleanSpaces: false }],
  [['deepseek-v3'], 'DEEPSEEK3_LLM', R3, true, { cleanSpaces: false }],
  [['spark2_5'], 'SPARK2_5', R4, true, { cleanSpaces: false }],
  [['youtu'], 'YOUTU', R5, true, { cleanSpaces: false, ignoreMerges: true }],
  [['falcon'], 'FALCON', R7, true, {}],
  [['mpt'], 'MPT', R9, true, {}],
  [['starcoder'], 'STARCODER', R8, true, {}],
  [['gpt-2', 'phi-2', 'jina-es', 'jina-de', 'gigachat', 'jina-v2-es', 'jina-v2-de', 'a.x-4.0', 'mellum', 'modern-bert'], 'GPT2', R9, true, {}],
  [['jais-2'], 'JAIS2', R1, true, {}],
  [['gemma4', 'granite-embed-multi-311m'], 'GEMMA4', R27, false, { escapeWhitespaces: true }],
  [['sarvam-moe'], 'SARVAM_MOE', R27, false, { escapeWhitespaces: true, cleanSpaces: false }],
  [['jina-v1-en', 'jina-v2-code', 'roberta-bpe'], 'GPT2', R9, true, { addSep: true }],
  [['refact'], 'REFACT', R8, true, {}],
  [['command-r'], 'COMMAND_R', R8, true, { cleanSpaces: false }],
  [['qwen2', 'deepseek-r1-qwen', 'kormo', 'f2llmv2'], 'QWEN2', R10, true, { cleanSpaces: false }],
  [['qwen35'], 'QWEN35', R11, true, { cleanSpaces: false }],
  [['stablelm2'], 'STABLELM2', R10, true, {}],
  [['olmo'], 'OLMO', R9, true, {}],
  [['dbrx'], 'DBRX', R0, true, {}],
  [['smaug-bpe'], 'SMAUG', R0, true, {}],
  [['poro-chat'], 'PORO', R12, true, { cleanSpaces: false }],
  [['glm4', 'chatglm-bpe'], 'CHATGLM4', R0, true, { noBos: true }],
  [['viking'], 'VIKING', R13, true, { cleanSpaces: false }],
  [['jais'], 'JAIS', R9, true, {}],
  [['tekken'], 'TEKKEN', R14, true, { cleanSpaces: false, ignoreMerges: true, addBos: true }],
  [['smollm'], 'SMOLLM', R8, true, { cleanSpaces: false }],
  [['codeshell'], 'CODESHELL', R8, true, {}],
  [['bloom'], 'BLOOM', R12, true, {}],
  [['gpt3-finnish'], 'GPT3_FINNISH', R12, true, {}],
  [['exaone'], 'EXAONE', R8, true, {}],
  [['exaone4'], 'GPT2', R9, true, {}],
  [['exaone-moe'], 'EXAONE_MOE', R26, true, {}],
  [['chameleon'], 'CHAMELEON', R15, true, { addBos: true, cleanSpaces: false }],
  [['minerva-7b'], 'MINERVA', R8, true, {}],
  [['megrez'], 'QWEN2', R10, true, {}],
  [['gpt-4o', 'llama4', 'kanana2', 'talkie'], 'GPT4O', R16, true, { cleanSpaces: false }],
  [['granite-embed-multi-97m'], 'GRANITE_EMB_MULTI', R17, true, { cleanSpaces: false, ignoreMerges: true }],
  [['tiny_aya', 'cohere2moe'], 'TINY_AYA', R18, true, { cleanSpaces: false }],
  [['superbpe'], 'SUPERBPE', R20, true, { cleanSpaces: false }],
  [['trillion'], 'TRILLION', R9, true, { cleanSpaces: false }],
  [['granite-docling'], 'GRANITE_DOCLING', R9, true, { cleanSpaces: false }],
  [['bailingmoe', 'bailingmoe2', 'llada-moe'], 'BAILINGMOE', R21, true, { cleanSpaces: false }],
  [['seed-coder'], 'SEED_CODER', R22, true, { cleanSpaces: false }],
  [['hunyuan'], 'HUNYUAN', R10, true, { cleanSpaces: false }],
  [['hunyuan-dense'], 'HUNYUAN_DENSE', R3, true, { cleanSpaces: false }],
  [['hy_v4'], 'HY_V4', R3, true, { cleanSpaces: false }],
  [['joyai-llm'], 'JOYAI_LLM', R3, true, { cleanSpaces: false }],
  [['kimi-k2'], 'KIMI_K2', R19, true, { cleanSpaces: false }],
  [['ufakzeka'], 'UFAKZEKA', R23, true, { cleanSpaces: false }],
  [['grok-2'], 'GROK_2', R10, true, { cleanSpaces: false }],
  [['afmoe'], 'AFMOE', R24, true, { cleanSpaces: false }],
  [['laguna'], 'LAGUNA', R25, true, { cleanSpaces: false }],
  [['minimax-m2'], 'MINIMAX_M2', R16, true, { cleanSpaces: false }],
  [['solar-open'], 'SOLAR_OPEN', R10, true, { cleanSpaces: false }],
  [['mellum2'], 'MELLUM2', R8, true, {}],
];

export interface CompiledRegex {
  /** The regex as llama.cpp writes it. */
  readonly source: string;
  readonly re: RegExp;
  /** A split llama.cpp does in code for this regex (then `re` is unused). */
  readonly custom?: CustomSplit;
  /** Runs on the collapsed text (one char per codepoint) rather than on the codepoints. */
  readonly collapsed: boolean;
}

export interface PreTokenizer {
  readonly name: string;
  /** llama.cpp's pre-tokenizer type (LLAMA3, QWEN2, GEMMA4, ...). */
  readonly kind: string;
  readonly regexes: readonly CompiledRegex[];
  /** Words are mapped to GPT-2's byte-level alphabet before the merges (false: raw UTF-8, SPM-like). */
  readonly byteEncode: boolean;
  readonly flags: Omit<PreFlags, 'noBos'>;
  readonly noBos: boolean;
}

const CATEGORY_CODES: Record<string, [number, string]> = {
  N: [0xd1, '0-9'],
  L: [0xd2, 'A-Za-z'],
  P: [0xd3, '!-#%-*,-/:-;?-@\\[-\\]_\\{\\}'],
  M: [0xd4, ''],
  S: [0xd5, '\\$\\+<->\\^`\\|~'],
};
const CATEGORY_NAMES: Record<string, string> = { N: 'N', L: 'L', P: 'P', M: 'M', S: 'S', Lu: 'L', Ll: 'L', Lt: 'L', Lm: 'L', Lo: 'L' };

const usesCategories = (source: string) => /\\p\{(N|L|P|M|S|Lu|Ll|Lt|Lm|Lo)\}/.test(source);

/** The regex over collapsed text, made as llama.cpp makes it (classes get the category's byte and ASCII members). */
function collapseRegex(source: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '[' && (i === 0 || source[i - 1] !== '\\')) {
      out += '[';
      inside = true;
      continue;
    }
    if (inside && c === ']' && source[i - 1] !== '\\') {
      out += ']';
      inside = false;
      continue;
    }
    if (c === '\\' && i + 3 < source.length && source[i + 1] === 'p' && source[i + 2] === '{') {
      const close = source.indexOf('}', i + 3);
      if (close >= 0 && close <= i + 10) {
        const name = CATEGORY_NAMES[source.slice(i + 3, close)];
        if (name !== undefined) {
          const [code, members] = CATEGORY_CODES[name]!;
          out += (inside ? '' : '[') + String.fromCharCode(code) + members + (inside ? '' : ']');
          i = close;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

/** \s and \S as C's isspace (ASCII only), for regexes run with the `u` flag. */
function asciiWhitespace(source: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      const next = source[i + 1];
      if (next === 's') out += inside ? '\\t\\n\\v\\f\\r ' : '[\\t\\n\\v\\f\\r ]';
      else if (next === 'S' && !inside) out += '[^\\t\\n\\v\\f\\r ]';
      else out += c + (next ?? '');
      i++;
      continue;
    }
    if (c === '[') inside = true;
    else if (c === ']') inside = false;
    out += c;
  }
  return out;
}

// Regexes llama.cpp recognizes and splits by code instead.
const CUSTOM: Record<string, CustomSplit> = {
  '\\p{Han}+': kimiK2,
  '\\p{AFMoE_digits}': afmoeDigits,
  '\\d{1,3}(?=(?:\\d{3})*\\b)': afmoeDigits,
};

// Regexes V8 backtracks on quadratically, done in code with the same matches (linear-splits.ts).
const LINEAR: Record<string, CustomSplit> = {
  '\\s+$': trailingWhitespace,
  '(?=(\\d{3})+(?!\\d))': digitGroupsFromEnd,
};

/** A pre-tokenizer regex as it runs; `linear: false` keeps a regex of LINEAR as a regex (tests compare the two). */
export function compileRegex(source: string, { linear = true }: { linear?: boolean } = {}): CompiledRegex {
  const custom = CUSTOM[source] ?? (linear ? LINEAR[source] : undefined);
  if (custom !== undefined) return { source, re: /$^/, collapsed: true, custom };
  if (usesCategories(source)) return { source, re: new RegExp(collapseRegex(source), 'g'), collapsed: true };
  return { source, re: new RegExp(asciiWhitespace(source), 'gu'), collapsed: false };
}

const NOT_YET = new Set<string>();

const made = new Map<string, PreTokenizer | undefined>();

/** The pre-tokenizer of a `tokenizer.ggml.pre` name ('' when absent: llama.cpp's default), or undefined if unknown. */
export function preTokenizerOf(name: string): PreTokenizer | undefined {
  if (made.has(name)) return made.get(name);
  const row = TABLE.find(([names]) => names.includes(name === '' ? 'default' : name));
  let pre: PreTokenizer | undefined;
  if (row !== undefined && !NOT_YET.has(row[1])) {
    const [, kind, sources, byteEncode, flags] = row;
    const { noBos, ...rest } = flags;
    pre = { name, kind, regexes: sources.map((source) => compileRegex(source)), byteEncode, flags: rest, noBos: noBos === true };
  }
  made.set(name, pre);
  return pre;
}

function collapsedChar(cpt: number): number {
  if (cpt < 128) return cpt;
  const flags = cptFlags(cpt);
  if ((flags & WHITESPACE) !== 0) return 0x0b;
  switch (flags & CATEGORIES) {
    case NUMBER: return 0xd1;
    case LETTER: return 0xd2;
    case PUNCTUATION: return 0xd3;
    case MARK: return 0xd4;
    case SYMBOL: return 0xd5;
    default: return 0xd0;
  }
}

function fromCodes(codes: Uint32Array, wide: boolean): string {
  let s = '';
  const CHUNK = 8192;
  for (let i = 0; i < codes.length; i += CHUNK) {
    const part = codes.subarray(i, Math.min(codes.length, i + CHUNK));
    s += wide ? String.fromCodePoint(...part) : String.fromCharCode(...part);
  }
  return s;
}

/**
 * Splits codepoints into words: returns each word's length in codepoints, in order (empty words
 * dropped).
 */
export function splitWords(cpts: Uint32Array, pre: PreTokenizer): number[] {
  let offsets: number[] = [cpts.length];
  let collapsed: string | undefined;
  let wide: string | undefined;
  let wideStarts: Uint32Array | undefined; // UTF-16 index of each codepoint
  for (const { re, collapsed: useCollapsed, custom } of pre.regexes) {
    if (custom !== undefined) {
      const next: number[] = [];
      let start = 0;
      for (const length of offsets) {
        custom(cpts, start, start + length, next);
        start += length;
      }
      offsets = next;
      continue;
    }
    let text: string;
    if (useCollapsed) {
      if (collapsed === undefined) {
        const codes = new Uint8Array(cpts.length);
        for (let i = 0; i < cpts.length; i++) codes[i] = collapsedChar(cpts[i]!);
        collapsed = latin1String(codes);
      }
      text = collapsed;
    } else {
      if (wide === undefined) {
        const codes = new Uint32Array(cpts.length);
        wideStarts = new Uint32Array(cpts.length + 1);
        let u = 0;
        for (let i = 0; i < cpts.length; i++) {
          const c = cpts[i]!;
          codes[i] = c > 0x7f && (cptFlags(c) & WHITESPACE) !== 0 ? 0x0b : c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;
          wideStarts[i] = u;
          u += c > 0xffff ? 2 : 1;
        }
        wideStarts[cpts.length] = u;
        wide = fromCodes(codes, true);
      }
      text = wide;
    }
    const next: number[] = [];
    let start = 0;
    for (const length of offsets) {
      const end = start + length;
      const a = useCollapsed ? start : wideStarts![start]!;
      const b = useCollapsed ? end : wideStarts![end]!;
      const piece = text.slice(a, b);
      // Positions in the piece, in codepoints.
      const count = useCollapsed || b - a === length ? (from: number, to: number) => to - from : (from: number, to: number) => countCodepoints(piece, from, to);
      re.lastIndex = 0;
      let last = 0;
      for (;;) {
        const m = re.exec(piece);
        if (m === null) break;
        const at = m.index;
        const matchEnd = at + m[0].length;
        if (at > last) next.push(count(last, at));
        if (matchEnd > at) next.push(count(at, matchEnd));
        last = matchEnd;
        if (matchEnd === at) re.lastIndex = at + (piece.charCodeAt(at) >= 0xd800 && piece.charCodeAt(at) <= 0xdbff ? 2 : 1);
      }
      if (last < piece.length) next.push(count(last, piece.length));
      start = end;
    }
    offsets = next;
  }
  return offsets;
}

function countCodepoints(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < to) i++;
    n++;
  }
  return n;
}
