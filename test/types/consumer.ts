// The README's examples as a consumer writes them: compiled under `strict` with no casts by
// scripts/package-test.sh against the installed package (and by `npm test` against lib/).
import { openGguf, type GgmlTypeName } from 'gguf-mmap';

export function example(path: string): number {
  using model = openGguf(path);
  const blocks: number = model.metadata.getNumber('llama.block_count') ?? 0;
  const arch: string | undefined = model.metadata.getString('general.architecture');
  const token: string | undefined = model.metadata.array('tokenizer.ggml.tokens')?.at(1)?.toString();

  const norm = model.tensor('output_norm.weight');
  const doubled = norm ? norm.f32()[0]! * 2 : 0;
  const embd = model.tensor('token_embd.weight');
  const type: GgmlTypeName | undefined = embd?.type;
  const dmin = embd && type === 'Q4_K' ? embd.blockQ4K(0).dmin : 0;
  const row: Float32Array | undefined = embd?.dequantizeRows(1, 1);
  return blocks + doubled + dmin + (row?.[0] ?? 0) + (arch?.length ?? 0) + (token?.length ?? 0);
}
