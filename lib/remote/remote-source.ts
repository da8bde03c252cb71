import { AsyncSource } from '../file/async-source.js';
import { redactUrl, type RangeClient } from './range-client.js';

/**
 * A file over HTTP: its header, fetched when it was opened, and byte ranges fetched on demand in
 * ranges of 16 MiB.
 */
export class RemoteSource extends AsyncSource {
  constructor(
    readonly client: RangeClient,
    headBytes: Uint8Array,
  ) {
    super(headBytes, 16 << 20);
  }

  get size(): number {
    return this.client.size ?? this.headBytes.byteLength;
  }

  protected describe(): { name: string; kind: string } {
    return { name: redactUrl(this.client.url), kind: 'a remote file' };
  }

  protected readPiece(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    return this.client.read(offset, length, signal);
  }
}
