import type { TensorIndex } from './tensor-index.js';

/** A tensor's place on the map. */
export interface LayerCell {
  block: number;
  /** Index into LayerMap.kinds. */
  kind: number;
  /** Index into the file's tensors. */
  index: number;
  name: string;
  type: string;
  nbytes: number;
}

export interface LayerMap {
  /** Highest block number + 1 (blocks named blk.N.*). */
  blocks: number;
  /** Tensor kinds in the order first met (`attn_q.weight`, `ffn_down.weight`, ...), with the largest tensor of each. */
  kinds: { name: string; maxBytes: number }[];
  cells: LayerCell[];
  /** Tensors outside the blocks (token_embd, output, ...), up to MAX_OTHERS. */
  others: Omit<LayerCell, 'block' | 'kind'>[];
  otherCount: number;
  /** True when the map holds only the first blocks (more than MAX_CELLS cells). */
  truncated: boolean;
}

const BLOCK_NAME = /^blk\.(\d+)\.(.+)$/;
// A map larger than this is no longer a picture (and thousands of cells take the page seconds to
// lay out): the first blocks are drawn, and the page says so.
const MAX_CELLS = 4096;
const MAX_OTHERS = 200;

/** Blocks × tensor kinds from names of the form `blk.N.KIND`, as llama.cpp names a model's layers. */
export function layerMap(tensors: TensorIndex): LayerMap {
  const kinds = new Map<string, number>();
  const kindList: { name: string; maxBytes: number }[] = [];
  const cells: LayerCell[] = [];
  const others: LayerMap['others'] = [];
  let otherCount = 0;
  let blocks = 0;
  let truncated = false;
  for (let index = 0; index < tensors.size; index++) {
    const t = { name: tensors.names[index]!, type: tensors.types[index]!, nbytes: tensors.sizes[index]! };
    const m = BLOCK_NAME.exec(t.name);
    if (m === null || m[1]!.length > 6) {
      otherCount++;
      if (others.length < MAX_OTHERS) others.push({ index, name: t.name, type: t.type, nbytes: t.nbytes });
      continue;
    }
    const block = Number(m[1]);
    if (cells.length >= MAX_CELLS) {
      truncated = true;
      continue;
    }
    let kind = kinds.get(m[2]!);
    if (kind === undefined) {
      kind = kindList.length;
      kinds.set(m[2]!, kind);
      kindList.push({ name: m[2]!, maxBytes: 0 });
    }
    kindList[kind]!.maxBytes = Math.max(kindList[kind]!.maxBytes, t.nbytes);
    blocks = Math.max(blocks, block + 1);
    cells.push({ block, kind, index, name: t.name, type: t.type, nbytes: t.nbytes });
  }
  return { blocks, kinds: kindList, cells, others, otherCount, truncated };
}
