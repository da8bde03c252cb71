import { GgufError } from '../errors.js';
import type { GgufFile } from '../file/gguf-file.js';
import { pieceDisplay } from '../tokenizer/piece-display.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

/** The conversation the page renders the chat template with. */
export const SAMPLE_CONVERSATION = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Hello! What is a GGUF file?' },
  { role: 'assistant', content: 'A single file holding a model: its metadata and its tensors.' },
  { role: 'user', content: 'Thanks.' },
];

// llama.cpp's names for a model without a vocabulary (LLAMA_VOCAB_TYPE_NONE).
const NO_VOCAB_MODELS = new Set(['none', 'no_vocab']);

/**
 * The file's tokenizer, or why there is none: no vocabulary at all (an mmproj, a LoRA adapter),
 * or one the library does not support (UNSUPPORTED_TOKENIZER's message).
 */
export function tokenizerOf(file: GgufFile): { tokenizer: Tokenizer } | { why: string } {
  const model = file.metadata.type('tokenizer.ggml.model') === 'STRING' ? file.metadata.getString('tokenizer.ggml.model')! : undefined;
  if (model === undefined || NO_VOCAB_MODELS.has(model)) return { why: 'This file has no vocabulary (no tokenizer.ggml.model): no tokenizer.' };
  try {
    return { tokenizer: file.tokenizer() };
  } catch (error) {
    if (error instanceof GgufError && error.code === 'UNSUPPORTED_TOKENIZER') return { why: `No tokenizer: ${error.message}` };
    throw error;
  }
}

export function hasChatTemplates(file: GgufFile): boolean {
  return file.metadata.type('tokenizer.chat_template') === 'STRING';
}

/** `text` as token ids and each token's piece as pieceDisplay shows it (as `gguf-mmap tokenize` does). */
export function tokenize(tokenizer: Tokenizer, text: string, parseSpecial: boolean): { ids: number[]; pieces: { text: string; bytes: boolean }[] } {
  const ids = Array.from(tokenizer.encode(text, { addSpecial: true, parseSpecial }));
  return { ids, pieces: ids.map((id) => pieceDisplay(tokenizer.pieceBytes(id, { special: true }))) };
}

/** The file's chat template applied to SAMPLE_CONVERSATION, with the generation prompt. */
export function renderSampleChat(file: GgufFile): { messages: typeof SAMPLE_CONVERSATION; text: string } {
  return { messages: SAMPLE_CONVERSATION, text: file.applyChatTemplate(SAMPLE_CONVERSATION, { addGenerationPrompt: true }) };
}
