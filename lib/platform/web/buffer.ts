/**
 * The most bytes one ArrayBuffer may hold and the longest string, as Node's buffer.constants
 * says them: V8's limits in Chromium (2^53 - 1 bytes on 64-bit since V8 11; the page's memory is
 * the real bound) and 2^29 - 24 UTF-16 units.
 */
export const bufferConstants = { MAX_LENGTH: Number.MAX_SAFE_INTEGER, MAX_STRING_LENGTH: (1 << 29) - 24 } as const;
