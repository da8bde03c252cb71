/** `codes` (each < 256) as a string of those code units. */
export function latin1String(codes: Uint8Array): string {
  return Buffer.from(codes.buffer, codes.byteOffset, codes.length).toString('latin1');
}

/** Bytes searched for byte strings (Buffer.indexOf: memmem). */
export function byteSearcher(bytes: Uint8Array): { indexOf(needle: Uint8Array, from?: number): number } {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
