/**
 * Tensor names built to collide in an unkeyed hash table: their 32-bit FNV-1a hashes agree in the
 * low `bits` bits, so a table of up to 2^bits slots indexed that way puts them all in one run of
 * slots (what the name index did before it was keyed). For the hash-flooding test and benchmark.
 */
export function fnvCollidingNames(count: number, bits = 16): string[] {
  const mask = (1 << bits) - 1;
  const prime = 0x01000193;
  // The state's low bits evolve on their own: s' = ((s ^ byte) * prime) mod 2^bits.
  let inverse = prime; // Newton's iteration for prime^-1 mod 2^32 (five steps double the bits to 32)
  for (let i = 0; i < 5; i++) inverse = Math.imul(inverse, 2 - Math.imul(prime, inverse));
  const target = 0;
  const beforeLast = Math.imul(target, inverse) & mask; // the state the last byte must meet
  const names = new Set<string>();
  let seed = 0x2545f491;
  const letter = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return 97 + ((seed >>> 16) % 26);
  };
  while (names.size < count) {
    const prefix = Array.from({ length: 10 }, letter);
    let state = 0x811c9dc5;
    for (const b of prefix) state = Math.imul(state ^ b, prime);
    // A next-to-last letter whose state leaves the last byte printable: then the last byte fixes the low bits.
    for (let a = 97; a < 123; a++) {
      const s1 = Math.imul(state ^ a, prime) & mask;
      const last = (s1 ^ beforeLast) & mask;
      if (last >= 0x30 && last < 0x7b) {
        names.add(String.fromCharCode(...prefix, a, last));
        break;
      }
    }
  }
  return [...names];
}
