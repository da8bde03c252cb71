/**
 * Syntax nodes as the interpreter handles them, and VALUE nodes: a value already evaluated, handed
 * back to the engine's methods (Python evaluates each operand once) and returned as it is by our
 * `evaluate`.
 */
import { type Value } from './values.js';

export const VALUE = '__ValueNode';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Node = any;
export const valueNode = (value: Value): Node => ({ type: VALUE, value });

