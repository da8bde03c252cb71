export { createHash, randomFillSync } from 'node:crypto';
