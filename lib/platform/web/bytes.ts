/** `codes` (each < 256) as a string of those code units (TextDecoder's 'latin1' is windows-1252, not this). */
export function latin1String(codes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < codes.length; i += 8192) text += String.fromCharCode.apply(null, codes.subarray(i, i + 8192) as unknown as number[]);
  return text;
}

/** Bytes searched for byte strings, as Buffer.indexOf finds them (the first byte found by indexOf, the rest compared). */
export function byteSearcher(bytes: Uint8Array): { indexOf(needle: Uint8Array, from?: number): number } {
  return {
    indexOf(needle, from = 0) {
      const n = needle.length;
      if (n === 0) return from <= bytes.length ? from : bytes.length;
      const first = needle[0]!;
      for (let at = bytes.indexOf(first, from); at >= 0 && at + n <= bytes.length; at = bytes.indexOf(first, at + 1)) {
        let k = 1;
        while (k < n && bytes[at + k] === needle[k]) k++;
        if (k === n) return at;
      }
      return -1;
    },
  };
}
