// Everything a service might do with an opened file, for the hostile-input tests (truncation
// sweep, fuzzer): read every metadata value and array, and every tensor's bytes, view, blocks and
// values. Whatever a damaged file does, the only error allowed out is a GgufError.
import { GgufError, type GgufFile } from '../lib/index.js';
import { canDequantize } from '../lib/dequant/dequantize.js';

/** Largest tensor (in values) the exercise dequantizes whole; bigger ones get one row. */
const DEQUANT_LIMIT = 1 << 20;

export function exercise(g: GgufFile): void {
  for (const key of g.metadata.keys()) {
    g.metadata.info(key);
    const array = g.metadata.array(key);
    if (array === undefined) {
      g.metadata.get(key);
    } else if (array.length > 0) {
      array.at(0);
      array.at(array.length - 1);
      array.toArray();
    }
  }
  for (const t of g.tensors) {
    attempt(() => t.bytes);
    attempt(() => t.view());
    if ((t.type === 'Q4_K' || t.type === 'Q6_K') && t.nblocks > 0) attempt(() => t.block(t.nblocks - 1));
    if (!canDequantize(t.type)) continue;
    if (t.nelements <= DEQUANT_LIMIT) attempt(() => t.dequantize());
    if (t.rows > 0 && t.rowLength <= DEQUANT_LIMIT) attempt(() => t.dequantizeRows(t.rows - 1, 1));
  }
}

/** Runs `fn`; a GgufError (TENSOR_TOO_LARGE, say) is a valid answer for one tensor. */
function attempt(fn: () => unknown): void {
  try {
    fn();
  } catch (error) {
    if (!(error instanceof GgufError)) throw error;
  }
}
