export { ReadSource } from '../../file/read-source.js';
