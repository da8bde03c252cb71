// URL-style paths (a split model's parts beside the first): '/' separates, as in a URL's path.

export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

export function dirname(path: string): string {
  const at = path.lastIndexOf('/');
  return at < 0 ? '.' : at === 0 ? '/' : path.slice(0, at);
}

export function join(...parts: string[]): string {
  return parts.filter((p) => p !== '').join('/').replace(/\/{2,}/g, '/');
}

/** A web page opens no file by its path: openGgufBlob (a File) and openGgufRemote (a URL) instead. */
export function toFilePath(_path: unknown, caller: string): never {
  throw new TypeError(`${caller}: a web page has no file system; open a File or Blob with openGgufBlob, a URL with openGgufRemote`);
}
