/** Whether this machine stores numbers little-endian (typed arrays use the host's order). */
export const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

type ElementArray = ArrayBufferView & { readonly buffer: ArrayBufferLike };
type ElementConstructor<T extends ElementArray> = {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): T;
  new (length: number): T;
  readonly BYTES_PER_ELEMENT: number;
};

/**
 * `length` elements starting at `byteOffset` of `buffer`, stored in the file's byte order: a view
 * of the same memory when byte order and alignment allow, else an aligned, host-order copy.
 */
export function elementsAt<T extends ElementArray>(
  View: ElementConstructor<T>,
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
  littleEndian: boolean,
): T {
  const width = View.BYTES_PER_ELEMENT;
  if (canView(width, byteOffset, littleEndian)) return new View(buffer, byteOffset, length);
  const out = new View(length);
  const bytes = new Uint8Array(out.buffer);
  bytes.set(new Uint8Array(buffer, byteOffset, length * width));
  if (littleEndian !== HOST_LITTLE_ENDIAN) swapBytes(bytes, width);
  return out;
}

/** Whether elements of `width` bytes at `byteOffset` can be viewed in place. */
export function canView(width: number, byteOffset: number, littleEndian: boolean): boolean {
  return width === 1 || (littleEndian === HOST_LITTLE_ENDIAN && byteOffset % width === 0);
}

function swapBytes(bytes: Uint8Array, width: number): void {
  for (let i = 0; i < bytes.length; i += width) {
    for (let lo = i, hi = i + width - 1; lo < hi; lo++, hi--) {
      const t = bytes[lo]!;
      bytes[lo] = bytes[hi]!;
      bytes[hi] = t;
    }
  }
}
