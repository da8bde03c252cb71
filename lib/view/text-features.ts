import type { GgufFile } from '../file/gguf-file.js';

// The tokenizer (GgufFile.tokenizer()) and chat templates (GgufFile.applyChatTemplate()) are
// looked for at run time: the viewer offers them when this build of the library has them, and
// answers 501 NOT_AVAILABLE otherwise. Only the shapes used here are assumed.
interface TokenizerLike {
  encode(text: string, options?: { addSpecial?: boolean; parseSpecial?: boolean }): ArrayLike<number>;
  tokenToPiece?(id: number, options?: { special?: boolean }): string;
}
interface TextCapable {
  tokenizer?: () => TokenizerLike;
  applyChatTemplate?: (messages: { role: string; content: string }[], options?: { addGenerationPrompt?: boolean }) => string;
}

/** The conversation the page renders the chat template with. */
export const SAMPLE_CONVERSATION = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'Hello! What is a GGUF file?' },
  { role: 'assistant', content: 'A single file holding a model: its metadata and its tensors.' },
  { role: 'user', content: 'Thanks.' },
];

export function hasTokenizer(file: GgufFile): boolean {
  return typeof (file as unknown as TextCapable).tokenizer === 'function';
}

export function hasChatTemplates(file: GgufFile): boolean {
  return typeof (file as unknown as TextCapable).applyChatTemplate === 'function' && file.metadata.type('tokenizer.chat_template') === 'STRING';
}

/** `text` as token ids and each token's text. */
export function tokenize(file: GgufFile, text: string, parseSpecial: boolean): { ids: number[]; pieces: string[] } {
  const tokenizer = (file as unknown as Required<TextCapable>).tokenizer();
  const ids = Array.from(tokenizer.encode(text, { addSpecial: true, parseSpecial }));
  const tokens = file.metadata.array('tokenizer.ggml.tokens');
  const pieces = ids.map((id) => (tokenizer.tokenToPiece !== undefined ? tokenizer.tokenToPiece(id, { special: true }) : String(tokens?.at(id) ?? '')));
  return { ids, pieces };
}

/** The file's chat template applied to SAMPLE_CONVERSATION, with the generation prompt. */
export function renderSampleChat(file: GgufFile): { messages: typeof SAMPLE_CONVERSATION; text: string } {
  const text = (file as unknown as Required<TextCapable>).applyChatTemplate(SAMPLE_CONVERSATION, { addGenerationPrompt: true });
  return { messages: SAMPLE_CONVERSATION, text };
}
