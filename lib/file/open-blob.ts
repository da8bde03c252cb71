import { headerLengthGuess, parseLayout, type ParseLimits } from '../format/parse.js';
import { BlobSource, readSlice } from './blob-source.js';
import { GgufFile } from './gguf-file.js';

export interface OpenBlobOptions {
  /** Bounds on what the header may claim, as for openGguf. */
  limits?: ParseLimits;
  /** A part of a split model alone (default: SPLIT_PART_MISSING, as openGguf); a list opens every part. */
  split?: false;
}

/** The first read: a typical header (1-4 MB) at once; a longer one takes one more read, sized by what the parser saw. */
const FIRST_READ_BYTES = 4 << 20;
/** The other parts' headers (split keys and tensor infos). */
const PART_READ_BYTES = 256 << 10;

/**
 * Opens a GGUF file given as a Blob: a `File` a person dropped on a page or picked, or in Node
 * `await fs.openAsBlob(path)`. Only the header is read (from blob.slice()s), never the whole
 * file; metadata, tensors, summary(), tokenizer() and the templates are there at once, tensor bytes
 * are read on demand with `await tensor.fetchBytes()`, `dequantizeAsync()`, `gatherRowsAsync()`
 * (mode 'blob'). A list of Blobs is the parts of a split model, in order.
 */
export async function openGgufBlob(blob: Blob | readonly Blob[], options: OpenBlobOptions = {}): Promise<GgufFile> {
  const blobs = Array.isArray(blob) ? (blob as readonly Blob[]) : [blob as Blob];
  if (blobs.length === 0) throw new TypeError('openGgufBlob: an empty list of parts');
  for (const b of blobs) {
    if (b === null || typeof b !== 'object' || typeof (b as Blob).slice !== 'function' || typeof (b as Blob).size !== 'number') {
      throw new TypeError('openGgufBlob: give a Blob or File (or a list of them)');
    }
  }
  const sources = await Promise.all(blobs.map((b, i) => readHeader(b, i === 0 ? FIRST_READ_BYTES : PART_READ_BYTES, options.limits)));
  const whole = options.split === false ? undefined : Array.isArray(blob) ? 'listed' : 'named';
  return new GgufFile(sources.map((source) => ({ source, path: source.name })), options.limits, whole);
}

function nameOf(blob: Blob): string {
  const name = (blob as Partial<File>).name;
  return typeof name === 'string' && name !== '' ? name : '(blob)';
}

/** The header of `blob`: `firstBytes`, then (when it runs past them) as much more as the parser guesses the rest needs. */
async function readHeader(blob: Blob, firstBytes: number, limits: ParseLimits | undefined): Promise<BlobSource> {
  const name = nameOf(blob);
  const size = blob.size;
  let bytes = await readSlice(blob, 0, Math.min(firstBytes, size), name);
  for (;;) {
    try {
      parseLayout(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), size, limits);
      return new BlobSource(blob, bytes, name);
    } catch (error) {
      const guess = headerLengthGuess(error);
      if (guess === undefined || bytes.byteLength >= size) throw error;
      // An eighth more than guessed, so that a guess a little short does not cost a third read.
      const want = Math.min(size, Math.max(guess + (guess >> 3) + 65536, bytes.byteLength * 2));
      const grown = new Uint8Array(want);
      grown.set(bytes);
      grown.set(await readSlice(blob, bytes.byteLength, want - bytes.byteLength, name), bytes.byteLength);
      bytes = grown;
    }
  }
}
