import { ASSETS } from './assets-data.js';

/** In the browser build the shipped files are inside the bundle (see assets-data.ts): their package-relative names. */
export function assetPath(name: string): string {
  return `gguf-mmap/${name}`;
}

/** The bytes of a file the package ships, decoded from the bundle's copy (base64) when first asked for. */
export function readAsset(name: string): Uint8Array | undefined {
  const text = ASSETS[name];
  if (text === undefined) return undefined;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
