// The shared chat-template cases (../shared/chat-templates/cases.json), as the tests and the
// benchmark read them: the inputs of chat-template-ref.py.
export interface ChatTemplateCase {
  id: string;
  template: string;
  bos_token: string;
  eos_token: string;
  messages: Array<{ role: string }>;
  tools?: object[];
  add_generation_prompt: boolean;
  extra?: Record<string, unknown>;
}
