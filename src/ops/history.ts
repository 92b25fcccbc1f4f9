/**
 * Retention of a home's history: the newest `keep` HEAD generations are kept (default 20, config.ts
 * `defaults.historyKeep`), older generation records are deleted. Only the records go; the snapshots, trees
 * and blocks they pointed at become unreferenced and are collected by `gc` after its grace period.
 *
 * Safe against concurrent writers: a writer only ever creates a generation newer than the one it read, and
 * the newest `keep` (≥ 1) are never touched, so HEAD is never deleted.
 */
import { headsPrefix } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { UserError } from '../util/errors.js';
import { validateName } from '../util/names.js';

export interface PruneResult {
  kept: number;
  /** Store keys of the deleted generation records (or the ones that would be, in a dry run). */
  pruned: string[];
}

/** Deletes the generation records of `org/home` older than the newest `keep`. */
export async function pruneHistory(store: Store, org: string, home: string, keep: number, dryRun = false): Promise<PruneResult> {
  validateName('org', org);
  validateName('home', home);
  if (!Number.isInteger(keep) || keep < 1) throw new UserError(`invalid history length ${keep}: keep at least 1 snapshot`);
  const keys: string[] = [];
  for await (const o of store.list(headsPrefix(org, home))) keys.push(o.key);
  const pruned = keys.slice(keep);
  if (!dryRun) for (const k of pruned) await store.delete(k);
  return { kept: Math.min(keep, keys.length), pruned };
}
