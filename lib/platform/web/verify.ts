import { GgufError } from '../../errors.js';

/** verify() checks a mapped file against the disk: there is neither in a web page. */
export function verifySource(): never {
  throw new GgufError('NOT_MAPPED', 'verify() checks a mapped file; a web page maps none', 0);
}
