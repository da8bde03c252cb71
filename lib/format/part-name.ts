/** The file name of part `number` (from 1) of `count`: llama.cpp's PREFIX-%05d-of-%05d.gguf. */
export function splitPartName(prefix: string, number: number, count: number): string {
  return `${prefix}-${String(number).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.gguf`;
}
