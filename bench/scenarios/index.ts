/**
 * The scenarios in the order bench/run runs them: firstsync first, because its last round's store,
 * restic repository and tar archive are the inputs of wake and move.
 */
import type { Scenario } from '../lib/report.js';
import { dedup } from './dedup.js';
import { firstsync } from './firstsync.js';
import { move } from './move.js';
import { seal } from './seal.js';
import { tools } from './tools.js';
import { wake } from './wake.js';

export const SCENARIOS: Scenario[] = [firstsync, wake, move, seal, dedup, tools];
