/**
 * What is wrong with a template the engine's parser refused, said as jinja2 says it, with the line:
 * its blocks checked as jinja2's parser checks them (`Unexpected end of template. Jinja was looking
 * for the following tags: 'endfor' or 'else'. ...`), or else the first tag that does not parse on
 * its own, with the parser's words. The engine's own error may be a JS TypeError ("Cannot read
 * properties of undefined") when the template ends inside a block. Run only after a parse failed.
 */

interface Tag {
  /** `{%` statement or `{{` expression. */
  kind: 'statement' | 'expression';
  /** The tag's text, delimiters included. */
  text: string;
  /** Its content without delimiters and whitespace-control signs. */
  body: string;
  line: number;
}

/** The template's tags in order, comments skipped; strings inside a tag may hold its closing delimiter. */
function tagsOf(source: string): { tags: Tag[]; lastLine: number; unclosed?: Tag } {
  const tags: Tag[] = [];
  let line = 1;
  let at = 0;
  const lineAt = (to: number) => {
    for (; at < to; at++) if (source.charCodeAt(at) === 10) line++;
    return line;
  };
  let i = 0;
  while (i < source.length) {
    const open = source.indexOf('{', i);
    if (open < 0 || open + 1 >= source.length) break;
    const second = source[open + 1];
    if (second === '#') {
      const end = source.indexOf('#}', open + 2);
      i = end < 0 ? source.length : end + 2;
      continue;
    }
    if (second !== '%' && second !== '{') {
      i = open + 1;
      continue;
    }
    const close = second === '%' ? '%}' : '}}';
    let k = open + 2;
    let quote = '';
    for (; k < source.length; k++) {
      const c = source[k]!;
      if (quote !== '') {
        if (c === '\\') k++;
        else if (c === quote) quote = '';
      } else if (c === '"' || c === "'") quote = c;
      else if (source.startsWith(close, k)) break;
    }
    const tag: Tag = {
      kind: second === '%' ? 'statement' : 'expression',
      text: source.slice(open, Math.min(k + 2, source.length)),
      body: source.slice(open + 2, k).replace(/^[-+]/, '').replace(/-$/, '').trim(),
      line: lineAt(open),
    };
    if (k >= source.length) return { tags, lastLine: lineAt(source.length), unclosed: tag };
    tags.push(tag);
    i = k + 2;
  }
  // jinja2's end of template is on the last tag's line when trim_blocks took the newline after it.
  return { tags, lastLine: lineAt(source.length) - (/%\}\n$/.test(source) ? 1 : 0) };
}

/** The tags that end (or continue) each block, as jinja2's parser looks for them, in its order. */
const BLOCKS: Record<string, string[]> = {
  for: ['endfor', 'else'],
  if: ['elif', 'else', 'endif'],
  macro: ['endmacro'],
  call: ['endcall'],
  filter: ['endfilter'],
  generation: ['endgeneration'],
  block: ['endblock'],
  with: ['endwith'],
  autoescape: ['endautoescape'],
};
const SIMPLE = new Set(['break', 'continue', 'extends', 'include', 'import', 'from', 'print', 'do']);

/** jinja2's _fail_ut_eof: the message for an unknown tag (`name`) or the end of the template (undefined). */
function unknownTag(name: string | undefined, stack: Array<{ tag: string; looking: string[] }>): string {
  const message = [name === undefined ? 'Unexpected end of template.' : `Encountered unknown tag '${name}'.`];
  if (stack.length > 0) {
    const looking = stack.at(-1)!.looking.map((t) => `'${t}'`).join(' or ');
    const expected = new Set(stack.flatMap((b) => b.looking));
    if (name !== undefined && expected.has(name)) message.push(`You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for ${looking}.`);
    else message.push(`Jinja was looking for the following tags: ${looking}.`);
    message.push(`The innermost block that needs to be closed is '${stack.at(-1)!.tag}'.`);
  }
  return message.join(' ');
}

/**
 * The message for a template that did not parse: `... (line N)`. `parses` tells whether a piece
 * of template parses (the engine's parser), throwing its error when it does not.
 */
export function describeSyntaxError(source: string, parses: (piece: string) => void, fallback: string): string {
  const { tags, lastLine, unclosed } = tagsOf(source);
  const stack: Array<{ tag: string; looking: string[] }> = [];
  // In the template's order, as jinja2's parser meets them: the blocks, and each tag on its own.
  for (const tag of tags) {
    const name = tag.kind === 'statement' ? (/^[A-Za-z_][A-Za-z0-9_]*/.exec(tag.body)?.[0] ?? '') : '';
    const top = stack.at(-1);
    const continues = tag.kind === 'statement' && top?.looking.includes(name) === true;
    if (continues) {
      if (name === 'else') top!.looking = [`end${top!.tag}`];
      else if (name !== 'elif') stack.pop();
      if (name !== 'elif') continue;
    }
    // A `{% set x %}...{% endset %}` block has no `=`.
    const setBlock = name === 'set' && !/^set\s+[^=]*=/.test(tag.body.replace(/(['"]).*?\1/g, ''));
    const opens = BLOCKS[name] !== undefined || setBlock;
    if (name === 'raw') return `the tag 'raw' is not supported here (line ${tag.line})`;
    if (tag.kind === 'statement' && !opens && name !== 'set' && !continues && !SIMPLE.has(name)) return `${unknownTag(name, stack)} (line ${tag.line})`;
    let piece = tag.text;
    if (opens) piece = `${tag.text}{% end${name} %}`;
    else if (name === 'elif') piece = `{% if x %}${tag.text}{% endif %}`;
    else if (name === 'break' || name === 'continue') piece = `{% for x in y %}${tag.text}{% endfor %}`;
    try {
      parses(piece);
    } catch (error) {
      return `${error instanceof SyntaxError ? jinjaWords(error.message) : fallback} (line ${tag.line})`;
    }
    if (opens) stack.push({ tag: name, looking: BLOCKS[name] ?? ['endset'] });
  }
  if (unclosed !== undefined) return `unexpected end of template, expected 'end of ${unclosed.kind === 'statement' ? 'statement block' : 'print statement'}'. (line ${lastLine})`;
  if (stack.length > 0) return `${unknownTag(undefined, stack)} (line ${lastLine})`;
  return fallback;
}

/** The engine's names of the tags' ends, as jinja2 describes them. */
function jinjaWords(message: string): string {
  const m = /^Unexpected token: (CloseExpression|CloseStatement)$/.exec(message);
  return m === null ? message : `unexpected '${m[1] === 'CloseExpression' ? 'end of print statement' : 'end of statement block'}'`;
}
