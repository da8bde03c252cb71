// A page loads no native addon: the library's answers where the addon is absent (files read, not
// mapped; TypeScript and WebAssembly kernels), as under GGUF_MMAP_ADDON=off in Node.
import { GgufError } from '../../errors.js';
import { walkStringsJs } from '../../format/walk-strings.js';
import type { NativeMapping, TensorInfoWalk } from '../../native.js';

const REASON = 'a web page loads no native addon';

export function optionalAddon(): undefined {
  return undefined;
}

export function addonUnavailableReason(): string {
  return REASON;
}

export function addonFix(_error: string): string {
  return 'open the file with openGgufBlob (a File or Blob) or openGgufRemote (a URL)';
}

export function addon(): never {
  throw new GgufError('ADDON_UNAVAILABLE', `the native addon is not loaded (${REASON})`, 0);
}

export function canMap(): boolean {
  return false;
}

export function mapFile(): NativeMapping {
  return addon();
}

export function nativeTensorInfoWalk(): TensorInfoWalk | undefined {
  return undefined;
}

export function adviseHugePages(_buffer: ArrayBuffer): void {}

export const walkStrings = walkStringsJs;

export function indexStringsNative(): undefined {
  return undefined;
}
