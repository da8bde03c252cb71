// Build step: writes the embedded sample (lib/sample.ts) next to the compiled library.
import { sampleSpec, samplePath } from '../lib/sample.js';
import { writeGgufFile } from '../lib/writer.js';

const path = process.argv[2] ?? samplePath();
const layout = writeGgufFile(path, sampleSpec());
console.log(`wrote ${path} (${layout.fileSize} bytes)`);
