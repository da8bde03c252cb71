export { availableParallelism } from 'node:os';
