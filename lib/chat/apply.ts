/**
 * A GGUF file's own chat template (`tokenizer.chat_template`, or `tokenizer.chat_template.<name>`)
 * rendered with its vocabulary's BOS and EOS text: what GgufFile.applyChatTemplate does. Metadata
 * only, so it works on remote files as on local ones.
 */
import { GgufError } from '../errors.js';
import type { GgufMetadata } from '../file/metadata.js';
import { renderChatTemplate, type ChatMessage, type ChatTemplateLimits } from './render.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

export interface ApplyChatTemplateOptions extends ChatTemplateLimits {
  /** Tool (function) schemas; absent: `tools` is undefined in the template. */
  tools?: readonly object[];
  /** End with the opening of the assistant's turn (default false, as transformers' apply_chat_template). */
  addGenerationPrompt?: boolean;
  /** More variables for the template (`date_string`, `enable_thinking`, ...). */
  variables?: Record<string, unknown>;
  /** A named template: `tokenizer.chat_template.<name>` (e.g. 'tool_use', 'rag'). */
  name?: string;
  /** The date `strftime_now` formats (default: now). */
  now?: Date;
  /**
   * Token ids (an Int32Array) instead of the text: the ids llama.cpp's server feeds the model for
   * this chat (see chatTemplateTokens). Default false.
   */
  tokenize?: boolean;
}

const TEMPLATE_KEY = 'tokenizer.chat_template';

/** The template's key, text and the file offset of its key, or CHAT_TEMPLATE_ERROR when absent. */
export function chatTemplateOf(metadata: GgufMetadata, name?: string): { key: string; template: string; offset: number } {
  const key = name === undefined ? TEMPLATE_KEY : `${TEMPLATE_KEY}.${name}`;
  const info = metadata.info(key);
  if (info === undefined) {
    const named = [...metadata.keys()].filter((k) => k.startsWith(`${TEMPLATE_KEY}.`)).map((k) => k.slice(TEMPLATE_KEY.length + 1));
    const has = [...(metadata.info(TEMPLATE_KEY) === undefined ? [] : [`the default template (${TEMPLATE_KEY})`]), ...(named.length > 0 ? [`named templates: ${named.join(', ')}`] : [])];
    throw new GgufError('CHAT_TEMPLATE_ERROR', `the file has no ${key}${has.length > 0 ? `; it has ${has.join(' and ')}` : '; it has no chat template'}`, 0);
  }
  if (info.type !== 'STRING') throw new GgufError('CHAT_TEMPLATE_ERROR', `${key} is ${info.type}, not a string`, info.offset);
  return { key, template: metadata.getString(key)!, offset: info.offset };
}

/**
 * The text of a special token, read from the vocabulary in the metadata
 * (`tokenizer.ggml.tokens` at `tokenizer.ggml.<which>_token_id`); undefined when the file names
 * none or the id is outside the vocabulary.
 */
export function specialTokenText(metadata: GgufMetadata, which: 'bos' | 'eos'): string | undefined {
  const idKey = `tokenizer.ggml.${which}_token_id`;
  const type = metadata.type(idKey);
  if (type === undefined || type === 'STRING' || type === 'ARRAY' || type === 'BOOL') return undefined;
  const id = metadata.getNumber(idKey)!;
  const tokens = metadata.array('tokenizer.ggml.tokens');
  if (tokens === undefined || tokens.elementType !== 'STRING' || !Number.isInteger(id) || id < 0 || id >= tokens.length) return undefined;
  return tokens.at(id) as string;
}

export function applyChatTemplate(metadata: GgufMetadata, messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): string {
  return render(metadata, messages, options, specialTokenText(metadata, 'bos') ?? '', specialTokenText(metadata, 'eos') ?? '');
}

/**
 * The ids llama.cpp (v0.5.0) feeds the model for a chat completion: common/chat.cpp renders the
 * template with the BOS/EOS pieces (common_token_to_piece, special on; '' for none) and, when the
 * vocabulary adds BOS (EOS), takes a leading BOS (trailing EOS) text off the render; the server
 * (tools/server) then tokenizes it with add_special and parse_special on. So there is exactly one
 * BOS whether or not the template writes it, and none from the template's text doubled.
 */
export function chatTemplateTokens(metadata: GgufMetadata, tokenizerOf: () => Tokenizer, messages: readonly ChatMessage[], options: ApplyChatTemplateOptions = {}): Int32Array {
  chatTemplateOf(metadata, options.name); // no template: the render's error, before the tokenizer's
  const tokenizer = tokenizerOf();
  const piece = (id: number | undefined) => (id === undefined ? '' : tokenizer.tokenToPiece(id, { special: true }));
  const bos = piece(tokenizer.bos);
  const eos = piece(tokenizer.eos);
  let prompt = render(metadata, messages, options, bos, eos);
  if (tokenizer.addsBos && prompt.startsWith(bos)) prompt = prompt.slice(bos.length);
  if (tokenizer.addsEos && prompt.endsWith(eos)) prompt = prompt.slice(0, prompt.length - eos.length);
  return tokenizer.encode(prompt, { addSpecial: true, parseSpecial: true });
}

function render(metadata: GgufMetadata, messages: readonly ChatMessage[], options: ApplyChatTemplateOptions, bosToken: string, eosToken: string): string {
  const { template, offset } = chatTemplateOf(metadata, options.name);
  return renderChatTemplate(
    template,
    {
      messages,
      tools: options.tools,
      addGenerationPrompt: options.addGenerationPrompt ?? false,
      bosToken,
      eosToken,
      variables: options.variables,
      now: options.now,
      timeoutMs: options.timeoutMs,
      maxChars: options.maxChars,
    },
    offset,
  );
}
