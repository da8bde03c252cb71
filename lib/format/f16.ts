/** IEEE half-precision bits to a number, exactly (subnormals, signed zero and infinities kept). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >>> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mantissa) * 2 ** (exponent - 25);
}

let f16Bits: Uint32Array | undefined;

/**
 * float32 bit patterns of all 65,536 halves, as ggml converts them: exact for numbers; a NaN keeps
 * its sign and payload (shifted left 13) and comes out quiet. Built once, 256 KiB.
 */
export function f16Table(): Uint32Array {
  if (f16Bits !== undefined) return f16Bits;
  const bits = new Uint32Array(65536);
  const values = new Float32Array(bits.buffer);
  for (let h = 0; h < 65536; h++) {
    if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) {
      // Written as bits: a NaN passed through a JS number may lose its payload.
      bits[h] = ((h & 0x8000) << 16) | 0x7fc00000 | ((h & 0x3ff) << 13);
    } else {
      values[h] = f16ToF32(h);
    }
  }
  return (f16Bits = bits);
}

let f16Values: Float32Array | undefined;

/** The same table as float32 values, for scale fields. */
export function f16ValueTable(): Float32Array {
  return (f16Values ??= new Float32Array(f16Table().buffer));
}
