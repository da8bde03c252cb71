export { verifySource } from '../../file/verify.js';
