// Build step: writes the embedded sample (lib/cli/sample.ts) next to the compiled library.
import { sampleSpec, samplePath } from '../lib/cli/sample.js';
import { writeGgufFile } from '../lib/format/writer.js';

const path = process.argv[2] ?? samplePath();
const layout = writeGgufFile(path, sampleSpec());
console.log(`wrote ${path} (${layout.fileSize} bytes)`);
