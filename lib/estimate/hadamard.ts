import { GgufError } from '../errors.js';

/**
 * The side of the Hadamard matrix llama.cpp rotates heads of n elements with (build_input_k_rot):
 * the largest power of two from 64 up that divides n, 64 when none does. Heads of no elements
 * have no rotation: a header saying so is refused rather than looped on.
 */
export function hadamardSide(n: number): number {
  if (!Number.isSafeInteger(n) || n <= 0) throw new GgufError('BAD_HYPERPARAMETER', `a rotated head of ${n} elements`, 0);
  let side = 64;
  while (n % (side * 2) === 0) side *= 2;
  return side;
}
