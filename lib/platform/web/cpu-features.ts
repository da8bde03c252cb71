/** A page cannot tell the CPU's features: none (as where /proc/cpuinfo cannot be read); estimates take `cpuFeatures`. */
export function hostCpuFeatures(): readonly string[] {
  return [];
}
