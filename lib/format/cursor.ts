import { bufferConstants } from '#platform/buffer';
import { GgufError, type GgufErrorCode } from '../errors.js';

const MAX_STRING_LENGTH = bufferConstants.MAX_STRING_LENGTH;

/** Keys and strings longer than this are rejected before anything looks at their bytes. */
export const MAX_STRING_BYTES = 1 << 30;

// ignoreBOM: a leading U+FEFF is part of the string (a vocabulary token can be exactly that).
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A bounds-checked reader over the file's bytes. Positions are absolute file offsets. Every read
 * checks the bytes left first, so a field that lies past the end is a TRUNCATED error at the
 * field's offset, never a RangeError or a read outside the file.
 */
export class Cursor {
  pos = 0;
  /** GGUF v1 stores counts and lengths as uint32; v2 and later as uint64. */
  wideCounts = true;
  /** For guessing a header's length when it runs past the view (see headerLengthGuess). */
  tensorsLeft = 0;
  keysLeft = 0;
  /** Where a string array cut short by the view may end (a count of its strings so far: called only when asked). */
  arrayEndGuess: () => number = () => 0;

  constructor(
    readonly view: DataView,
    /** Size of the whole file; `view` may cover only a prefix of it (a window). */
    readonly fileSize: number,
    public littleEndian = true,
  ) {}

  get bytesLeft(): number {
    return this.fileSize - this.pos;
  }

  /** Checks that `n` bytes can be read at the cursor and returns their offset. */
  take(n: number, what: string): number {
    const at = this.pos;
    if (n > this.fileSize - at) {
      throw new GgufError('TRUNCATED', `file ends inside ${what}`, at);
    }
    if (at + n > this.view.byteLength) {
      throw new GgufError('HEADER_TOO_LARGE', `header does not fit in one window while reading ${what}`, at);
    }
    this.pos = at + n;
    return at;
  }

  u8(what: string): number {
    return this.view.getUint8(this.take(1, what));
  }
  i8(what: string): number {
    return this.view.getInt8(this.take(1, what));
  }
  u16(what: string): number {
    return this.view.getUint16(this.take(2, what), this.littleEndian);
  }
  i16(what: string): number {
    return this.view.getInt16(this.take(2, what), this.littleEndian);
  }
  u32(what: string): number {
    return this.view.getUint32(this.take(4, what), this.littleEndian);
  }
  i32(what: string): number {
    return this.view.getInt32(this.take(4, what), this.littleEndian);
  }
  f32(what: string): number {
    return this.view.getFloat32(this.take(4, what), this.littleEndian);
  }
  f64(what: string): number {
    return this.view.getFloat64(this.take(8, what), this.littleEndian);
  }

  /** uint64 as a number when it is at most 2^53 - 1, as a bigint above. */
  u64(what: string): number | bigint {
    const at = this.take(8, what);
    const hi = this.high(at);
    const lo = this.low(at);
    if (hi < 0x200000) return hi * 0x100000000 + lo;
    return (BigInt(hi) << 32n) | BigInt(lo);
  }

  /** int64 as a number when it is within +-(2^53 - 1), as a bigint beyond. */
  i64(what: string): number | bigint {
    const at = this.take(8, what);
    const hi = this.high(at);
    const lo = this.low(at);
    // Safe integers without a BigInt (a tensor info holds up to four of these).
    if (hi < 0x200000) return hi * 0x100000000 + lo;
    if (hi >= 0xffe00000 && (hi !== 0xffe00000 || lo !== 0)) return (hi - 0x100000000) * 0x100000000 + lo;
    return this.view.getBigInt64(at, this.littleEndian);
  }

  /** A uint64 that must be a safe integer (a size or offset); larger values fail with `code`. */
  u64Safe(what: string, code: GgufErrorCode): number {
    const at = this.pos;
    const value = this.u64(what);
    if (typeof value === 'bigint') throw new GgufError(code, `${what} ${value} is too large`, at);
    return value;
  }

  /** A count or length: uint32 in GGUF v1, uint64 after. */
  count(what: string, code: GgufErrorCode = 'BAD_COUNT'): number {
    return this.wideCounts ? this.u64Safe(what, code) : this.u32(what);
  }

  /** Width in bytes of a count field in this file's version. */
  get countSize(): number {
    return this.wideCounts ? 8 : 4;
  }

  /**
   * A GGUF string: its length, then that many UTF-8 bytes. A length over `maxBytes` fails with
   * `tooLong` before anything is read; `strict` rejects invalid UTF-8 (keys and names).
   */
  string(what: string, strict = false, maxBytes = MAX_STRING_BYTES, tooLong: GgufErrorCode = 'STRING_TOO_LONG'): string {
    const lengthAt = this.pos;
    const length = this.count(`${what} length`, tooLong);
    if (length > maxBytes) throw new GgufError(tooLong, `${what} of ${length} bytes (at most ${maxBytes})`, lengthAt);
    if (length > this.bytesLeft) {
      throw new GgufError('TRUNCATED', `${what} length ${length} runs past the end of the file`, lengthAt);
    }
    const at = this.take(length, what);
    return decodeUtf8(this.view, at, length, strict, what);
  }

  skip(n: number, what: string): void {
    this.take(n, what);
  }

  /** The high and low 32 bits of the 64-bit field at `at`, unsigned (no array: this is a hot path). */
  private high(at: number): number {
    return this.view.getUint32(this.littleEndian ? at + 4 : at, this.littleEndian);
  }
  private low(at: number): number {
    return this.view.getUint32(this.littleEndian ? at : at + 4, this.littleEndian);
  }
}

/**
 * Decodes UTF-8 bytes. Keys are decoded strictly (invalid UTF-8 is BAD_UTF8); values replace
 * invalid sequences with U+FFFD, as TextDecoder does, so one odd token does not reject a model.
 */
export function decodeUtf8(view: DataView, at: number, length: number, strict = false, what = 'string'): string {
  const bytes = new Uint8Array(view.buffer, view.byteOffset + at, length);
  if (length < 32) {
    // Short ASCII strings (most keys and tokens) are faster by hand than through TextDecoder.
    let ascii = '';
    let i = 0;
    for (; i < length; i++) {
      const b = bytes[i]!;
      if (b >= 0x80) break;
      ascii += String.fromCharCode(b);
    }
    if (i === length) return ascii;
  }
  try {
    return (strict ? utf8Strict : utf8).decode(bytes);
  } catch (error) {
    // Each byte decodes to at most one UTF-16 unit: only a string longer than the runtime's
    // longest (2^29 - 24 units in V8) can fail to be made.
    if (length > MAX_STRING_LENGTH) {
      throw new GgufError('STRING_TOO_LONG', `${what} of ${length} bytes is longer than a JavaScript string can be here (${MAX_STRING_LENGTH} characters)`, at);
    }
    if (strict) throw new GgufError('BAD_UTF8', `${what} is not valid UTF-8`, at);
    throw error;
  }
}
