// One command's part of the CLI's usage text: its synopsis line(s) and its paragraph, found in the
// one text that `gguf-mmap --help` prints (so a command's help never drifts from the whole).

export interface CommandHelp {
  /** The command's line(s) of the synopsis, each starting `gguf-mmap COMMAND`. */
  readonly synopsis: string[];
  /** Its paragraph of the description (with its options), as printed in the whole text. */
  readonly paragraph: string[];
}

/** The commands the usage text describes: every `gguf-mmap WORD` of its synopsis. */
export function commandNames(usage: string): string[] {
  const names = new Set<string>();
  for (const m of usage.matchAll(/^(?:usage: |\s+)gguf-mmap ([a-z][a-z-]*)/gm)) names.add(m[1]!);
  return [...names];
}

/** `command`'s synopsis and paragraph in `usage`; undefined for a command it does not describe. */
export function commandHelp(usage: string, command: string): CommandHelp | undefined {
  const lines = usage.split('\n');
  const synopsis = lines
    .map((line) => line.replace(/^usage: /, '').trim())
    .filter((line) => line === `gguf-mmap ${command}` || line.startsWith(`gguf-mmap ${command} `));
  if (synopsis.length === 0) return undefined;
  // A paragraph starts with the command's name indented by two, and ends at a blank line or at the
  // next paragraph's first line (indented by two, lower case).
  const start = lines.findIndex((line) => line === `  ${command}` || line.startsWith(`  ${command} `));
  const paragraph: string[] = [];
  if (start >= 0) {
    paragraph.push(lines[start]!);
    for (let i = start + 1; i < lines.length; i++) {
      const line = lines[i]!;
      if (line.trim() === '' || /^ {2}[a-z]/.test(line)) break;
      paragraph.push(line);
    }
  }
  return { synopsis, paragraph };
}

/** What `gguf-mmap COMMAND --help` prints. */
export function commandHelpText(usage: string, command: string): string | undefined {
  const help = commandHelp(usage, command);
  if (help === undefined) return undefined;
  const [first, ...more] = help.synopsis;
  return [`usage: ${first}`, ...more.map((line) => `       ${line}`), '', ...help.paragraph].join('\n') + '\n';
}

/** The closest of `names` to a misspelt `word` (at most two edits, or a prefix of one), if any. */
export function closestName(word: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of names) {
    const d = name.startsWith(word) && word.length >= 2 ? 1 : editDistance(word, name);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance, with a swap of two neighbours counted as one edit. */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return 99;
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
