export { basename, dirname, join } from 'node:path';
export { toFilePath } from '../../file/path.js';
