// The web twins (lib/platform/web) give what Node's give, where both can: the browser build's
// answers are the Node build's (issue 37).
import { describe, expect, it } from 'vitest';
import * as nodeBytes from '../../lib/platform/node/bytes.js';
import * as webBytes from '../../lib/platform/web/bytes.js';
import * as webPath from '../../lib/platform/web/path.js';
import { readAsset as nodeAsset } from '../../lib/platform/node/assets.js';
import { readAsset as webAsset } from '../../lib/platform/web/assets.js';
import { webAssetNames } from '../../scripts/embed-web-assets.js';
import { randomBytes } from '../helpers/random.js';

describe('web twins', () => {
  it('the bundled WebAssembly kernels and tables are the shipped files (else: node dist/scripts/embed-web-assets.js)', () => {
    const names = webAssetNames();
    expect(names).toContain('wasm/dequant.wasm');
    for (const name of names) expect(Buffer.from(webAsset(name)!).equals(Buffer.from(nodeAsset(name)!)), name).toBe(true);
    expect(webAsset('wasm/none.wasm')).toBeUndefined();
  });

  it('latin1String and byteSearcher answer as Buffer does', () => {
    const codes = randomBytes(50_000, 3);
    expect(webBytes.latin1String(codes)).toBe(nodeBytes.latin1String(codes));
    const hay = randomBytes(20_000, 4).map((b) => b & 7);
    const node = nodeBytes.byteSearcher(hay);
    const web = webBytes.byteSearcher(hay);
    for (let n = 1; n < 6; n++) {
      for (let k = 0; k < 40; k++) {
        const needle = randomBytes(n, 100 * n + k).map((b) => b & 7);
        for (const from of [0, 17, 9000, 19_999, 20_000]) expect(web.indexOf(needle, from), `${needle} from ${from}`).toBe(node.indexOf(needle, from));
      }
    }
    expect(web.indexOf(hay.subarray(19_990), 0)).toBe(19_990);
  });

  it("path: a part's name beside the first, as in a URL's path", () => {
    expect(webPath.basename('/a/b/m-00001-of-00002.gguf')).toBe('m-00001-of-00002.gguf');
    expect(webPath.dirname('/a/b/m.gguf')).toBe('/a/b');
    expect(webPath.join('/a/b', 'm-00002-of-00002.gguf')).toBe('/a/b/m-00002-of-00002.gguf');
    expect(() => webPath.toFilePath('x', 'openGguf')).toThrow(TypeError);
  });
});
