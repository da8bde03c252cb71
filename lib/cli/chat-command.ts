/**
 * `gguf-mmap chat MODEL --messages FILE.json [--tools FILE.json] [--no-generation-prompt] [--tokens]
 * [--template NAME] [--var KEY=JSON]... [--no-split]`: the prompt the model's chat template makes
 * of the messages; with --tokens, that prompt's token ids as JSON.
 */
import { readFileSync } from 'node:fs';
import type { GgufFile } from '../file/gguf-file.js';
import type { ChatMessage } from '../chat/render.js';

export class ChatUsageError extends Error {}

export interface ChatArgs {
  model: string;
  messages: ChatMessage[];
  tools?: object[];
  generationPrompt: boolean;
  tokens: boolean;
  name?: string;
  variables: Record<string, unknown>;
  split: boolean;
}

/** `-` reads stdin. */
function readJson(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (error) {
    throw new ChatUsageError(`cannot read ${what} ${path}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ChatUsageError(`${what} ${path} is not JSON: ${(error as Error).message}`);
  }
}

export function parseChatArgs(args: string[]): ChatArgs {
  const positional: string[] = [];
  let messagesPath: string | undefined;
  let toolsPath: string | undefined;
  const parsed: Omit<ChatArgs, 'model' | 'messages'> = { generationPrompt: true, tokens: false, variables: {}, split: true };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new ChatUsageError(`${arg} needs a value`);
      return v;
    };
    if (arg === '--messages') messagesPath = value();
    else if (arg === '--tools') toolsPath = value();
    else if (arg === '--template') parsed.name = value();
    else if (arg === '--var') {
      const v = value();
      const eq = v.indexOf('=');
      if (eq <= 0) throw new ChatUsageError(`--var takes KEY=JSON, not '${v}'`);
      const text = v.slice(eq + 1);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = text; // a bare word is a string: --var date_string=26 Jul 2024
      }
      parsed.variables[v.slice(0, eq)] = json;
    } else if (arg === '--no-generation-prompt') parsed.generationPrompt = false;
    else if (arg === '--tokens') parsed.tokens = true;
    else if (arg === '--no-split') parsed.split = false;
    else if (arg.startsWith('--')) throw new ChatUsageError(`unknown option '${arg}'`);
    else positional.push(arg);
  }
  if (positional.length !== 1) throw new ChatUsageError('chat takes one MODEL (a file, URL or hf: URI)');
  if (messagesPath === undefined) throw new ChatUsageError('chat needs --messages FILE.json (a JSON list of {role, content}; - reads stdin)');
  const messages = readJson(messagesPath, 'messages');
  if (!Array.isArray(messages) || !messages.every((m) => typeof m === 'object' && m !== null && !Array.isArray(m))) {
    throw new ChatUsageError(`messages ${messagesPath} is not a JSON list of objects`);
  }
  const tools = toolsPath === undefined ? undefined : readJson(toolsPath, 'tools');
  if (tools !== undefined && !Array.isArray(tools)) throw new ChatUsageError(`tools ${toolsPath} is not a JSON list`);
  return { model: positional[0]!, messages: messages as ChatMessage[], tools: tools as object[] | undefined, ...parsed };
}

/**
 * The command's output: the prompt (control characters escaped on a terminal, as a template is
 * the file's text), or with --tokens `{"prompt", "tokens", "count"}` as JSON, the tokens being
 * what file.applyChatTemplate(..., { tokenize: true }) gives (llama.cpp's server's ids: one BOS
 * whether or not the template writes it).
 */
export function runChat(file: GgufFile, args: ChatArgs, options: { terminal: boolean }): string {
  // One date for both renders, so that a strftime_now at a minute's end cannot tell them apart.
  const asked = { tools: args.tools, addGenerationPrompt: args.generationPrompt, variables: args.variables, name: args.name, now: new Date() };
  const prompt = file.applyChatTemplate(args.messages, asked);
  if (args.tokens) {
    const ids = Array.from(file.applyChatTemplate(args.messages, { ...asked, tokenize: true }));
    return `${JSON.stringify({ prompt, tokens: ids, count: ids.length })}\n`;
  }
  return options.terminal ? `${terminalText(prompt)}\n` : prompt;
}

/**
 * The prompt as a terminal shows it: newlines and tabs as they are; other control characters (and
 * bidi controls) as `\uXXXX`, so that they cannot drive the terminal; and a backslash doubled, so
 * that six characters `\u000a` in a message read `\\u000a`, never as an escaped character.
 */
export function terminalText(prompt: string): string {
  return prompt.replace(/[\\\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) =>
    c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
