// How a token's piece is shown to a person, by `gguf-mmap tokenize` and by the viewer alike.

const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const HEX = '0123456789ABCDEF';

/**
 * A piece (Tokenizer.pieceBytes) for display: its text when its bytes are whole UTF-8; else (a
 * character split across tokens, as byte-fallback tokens split an emoji) each byte as `<0xXX>`,
 * with `bytes` true. Decoding such a piece alone gives U+FFFD, the same for every byte.
 */
export function pieceDisplay(bytes: Uint8Array): { text: string; bytes: boolean } {
  try {
    return { text: strict.decode(bytes), bytes: false };
  } catch {
    return { text: Array.from(bytes, (b) => `<0x${HEX[b >> 4]}${HEX[b & 15]}>`).join(''), bytes: true };
  }
}
