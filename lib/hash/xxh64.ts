// XXH64 with seed 0, streaming, digests as 16 hex digits (most significant byte first, as
// llama-gguf-hash prints them): the addon's (native/xxh64.cc) where it loads, else this
// TypeScript one with BigInt arithmetic, about 100x slower, for read mode without the addon.
import { optionalAddon } from '../native.js';

export interface Xxh64 {
  update(bytes: Uint8Array): this;
  digest(): string;
}

const MASK = (1n << 64n) - 1n;
const P1 = 0x9e3779b185ebca87n;
const P2 = 0xc2b2ae3d27d4eb4fn;
const P3 = 0x165667b19e3779f9n;
const P4 = 0x85ebca77c2b2ae63n;
const P5 = 0x27d4eb2f165667c5n;

const rotl = (x: bigint, r: bigint) => ((x << r) | (x >> (64n - r))) & MASK;
const round = (acc: bigint, input: bigint) => (rotl((acc + input * P2) & MASK, 31n) * P1) & MASK;
const merge = (hash: bigint, acc: bigint) => (((hash ^ round(0n, acc)) * P1) + P4) & MASK;

/** The TypeScript XXH64 (exported for the tests that compare it with the addon's). */
export class ScriptXxh64 implements Xxh64 {
  private readonly acc = [(P1 + P2) & MASK, P2, 0n, (-P1) & MASK];
  private total = 0;
  private readonly buffer = new Uint8Array(32);
  private buffered = 0;

  update(bytes: Uint8Array): this {
    this.total += bytes.length;
    let at = 0;
    if (this.buffered > 0) {
      const take = Math.min(bytes.length, 32 - this.buffered);
      this.buffer.set(bytes.subarray(0, take), this.buffered);
      this.buffered += take;
      at = take;
      if (this.buffered < 32) return this;
      this.stripe(new DataView(this.buffer.buffer), 0);
      this.buffered = 0;
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (; bytes.length - at >= 32; at += 32) this.stripe(view, at);
    this.buffer.set(bytes.subarray(at));
    this.buffered = bytes.length - at;
    return this;
  }

  digest(): string {
    const [a, b, c, d] = this.acc as [bigint, bigint, bigint, bigint];
    let hash = this.total >= 32 ? (rotl(a, 1n) + rotl(b, 7n) + rotl(c, 12n) + rotl(d, 18n)) & MASK : P5;
    if (this.total >= 32) for (const lane of this.acc) hash = merge(hash, lane);
    hash = (hash + BigInt(this.total)) & MASK;
    const view = new DataView(this.buffer.buffer);
    let p = 0;
    for (; this.buffered - p >= 8; p += 8) hash = ((rotl(hash ^ round(0n, view.getBigUint64(p, true)), 27n) * P1) + P4) & MASK;
    if (this.buffered - p >= 4) {
      hash = ((rotl(hash ^ ((BigInt(view.getUint32(p, true)) * P1) & MASK), 23n) * P2) + P3) & MASK;
      p += 4;
    }
    for (; p < this.buffered; p++) hash = (rotl(hash ^ ((BigInt(this.buffer[p]!) * P5) & MASK), 11n) * P1) & MASK;
    hash ^= hash >> 33n;
    hash = (hash * P2) & MASK;
    hash ^= hash >> 29n;
    hash = (hash * P3) & MASK;
    hash ^= hash >> 32n;
    return hash.toString(16).padStart(16, '0');
  }

  private stripe(view: DataView, at: number): void {
    for (let lane = 0; lane < 4; lane++) this.acc[lane] = round(this.acc[lane]!, view.getBigUint64(at + lane * 8, true));
  }
}

/** A new XXH64 state: the addon's where it loads. */
export function createXxh64(): Xxh64 {
  const Native = optionalAddon()?.Xxh64;
  if (Native === undefined) return new ScriptXxh64();
  const state = new Native();
  return {
    update(bytes) {
      state.update(bytes);
      return this;
    },
    digest: () => state.digest(),
  };
}
