export { decodeOffThread, encodeOffThread, registerVocabularySource } from '../../tokenizer/async-tokenizer.js';
