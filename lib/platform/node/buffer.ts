export { constants as bufferConstants } from 'node:buffer';
