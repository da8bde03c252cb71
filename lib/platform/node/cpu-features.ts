export { hostCpuFeatures } from '../../estimate/cpu-features.js';
