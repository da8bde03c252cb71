import { readFileSync } from 'node:fs';
import { arch, platform } from 'node:os';

/**
 * The CPU features that decide llama.cpp's weight repacking (ggml-cpu's repack.cpp). Names as
 * Linux's /proc/cpuinfo spells them: 'avx2', 'avx512f' on x86; 'asimd' (NEON), 'asimddp'
 * (dot product), 'i8mm' (int8 matrix multiply), 'sve' on Arm.
 */
export type CpuFeature = 'avx2' | 'avx512f' | 'asimd' | 'asimddp' | 'i8mm' | 'sve' | (string & {});

let cached: readonly string[] | undefined;

/** This machine's repack-relevant CPU features (read once; [] when they cannot be told). */
export function hostCpuFeatures(): readonly string[] {
  if (cached !== undefined) return cached;
  cached = detect();
  return cached;
}

function detect(): readonly string[] {
  if (platform() === 'linux') {
    try {
      const text = readFileSync('/proc/cpuinfo', 'utf8');
      const line = /^(?:flags|Features)\s*:(.*)$/m.exec(text);
      if (line !== null) return line[1]!.trim().split(/\s+/);
    } catch {
      // fall through to the guesses below
    }
  }
  // Apple silicon: NEON and dot product on every model (i8mm only from M2: left out, as llama.cpp's
  // build for the lowest common target would).
  if (platform() === 'darwin' && arch() === 'arm64') return ['asimd', 'asimddp'];
  return [];
}
