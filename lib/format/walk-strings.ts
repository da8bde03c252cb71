/**
 * Steps over `count` GGUF strings (length fields of `width` bytes) at `pos` in `view`: returns the
 * offset past the last, or -1 - the offset of the first length field that does not fit the view.
 * The TypeScript walk, where the addon's (native.ts walkStrings) is absent.
 */
export function walkStringsJs(view: DataView, pos: number, count: number, width: number, littleEndian: boolean): number {
  const limit = view.byteLength;
  for (let i = 0; i < count; i++) {
    if (pos + width > limit) return -1 - pos;
    let length: number;
    if (width === 4) {
      length = view.getUint32(pos, littleEndian);
    } else {
      const high = view.getUint32(littleEndian ? pos + 4 : pos, littleEndian);
      if (high >= 0x200000) return -1 - pos;
      length = high * 0x100000000 + view.getUint32(littleEndian ? pos : pos + 4, littleEndian);
    }
    if (length > limit - pos - width) return -1 - pos;
    pos += width + length;
  }
  return pos;
}
