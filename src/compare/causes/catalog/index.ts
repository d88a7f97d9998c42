// The cause library: every candidate explanation, by family. A new cause is a descriptor in its family's file
// (op kinds, words, the variant, how a parameter is estimated) and a row in catalog.test.ts's plants.
import type { Cause } from '../types';
import { CONSTANTS } from './constants';
import { FUNCTIONS } from './functions';
import { LAYOUT } from './layout';
import { NARROWER } from './narrower';
import { OPERANDS } from './operands';
import { RANDOMNESS } from './randomness';

export const CAUSES: readonly Cause[] = [
  ...NARROWER,
  ...OPERANDS,
  ...CONSTANTS,
  ...LAYOUT,
  ...FUNCTIONS,
  ...RANDOMNESS,
];
