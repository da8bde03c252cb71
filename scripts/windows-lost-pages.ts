// The Windows fault handler at work, under wine (scripts/windows-smoke.sh): a mapped file cut
// short from outside (the Linux side; Windows itself refuses to shrink a mapped file) reads as
// zeros past its new end, then every access throws FILE_CHANGED. Run as
// `node windows-lost-pages.js FILE READY GO`: maps FILE, creates READY, waits for GO (made once
// the file is truncated), reads, prints one JSON line.
import { existsSync, writeFileSync } from 'node:fs';
import { GgufError, openGguf, writeGgufFile } from '../lib/index.js';

const [path, ready, go] = process.argv.slice(2) as [string, string, string];
const count = 1 << 20; // 4 MiB of F32 ones
writeGgufFile(path, { tensors: [{ name: 'w', type: 'F32', shape: [count], data: new Uint8Array(new Float32Array(count).fill(1).buffer) }] });
const g = openGguf(path);
const view = g.tensor('w')!.view() as Float32Array;
const before = view[count - 1];
writeFileSync(ready, '');
const pause = new Int32Array(new SharedArrayBuffer(4));
for (let waited = 0; !existsSync(go); waited += 20) {
  if (waited > 60_000) throw new Error('no GO after 60 s');
  Atomics.wait(pause, 0, 0, 20);
}
const after = view[count - 1]; // past the new end: a lost page
let code = 'no error';
try {
  g.tensor('w')!.view();
} catch (e) {
  code = e instanceof GgufError ? e.code : String(e);
}
g.close();
console.log(JSON.stringify({ mode: g.mode, before, after, code }));
