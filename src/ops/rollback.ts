/**
 * Rollback: makes an old snapshot current again by writing a NEW generation whose snapshot has the old
 * root tree (parent = the current HEAD, reason "rollback"). History is never rewritten: the generations in
 * between stay listed by `homefs log` and can themselves be rolled back to.
 *
 * A mounted home keeps sealing from the HEAD it started from; its next seal then loses the HEAD race and
 * is kept as a conflict snapshot. Put the home to sleep before rolling it back.
 */
import { commitSnapshot } from '../format/commit.js';
import { GcFence } from '../format/gcfence.js';
import { readHead } from '../format/heads.js';
import { ObjectStore } from '../format/objects.js';
import type { FenceOption } from './fork.js';
import { assertSnapshotComplete } from './refs.js';
import type { Store } from '../store/store.js';
import { UserError } from '../util/errors.js';

export interface RollbackResult {
  home: string;
  /** The old snapshot whose content is restored. */
  to: string;
  /** HEAD before the rollback. */
  previous: string;
  snapshot: string;
  gen: number;
}

export async function rollbackHome(store: Store, org: string, home: string, snapPrefix: string, opts: FenceOption = {}): Promise<RollbackResult> {
  const objects = new ObjectStore(store, org);
  const gc = new GcFence(store, org, opts.fence);
  const since = await gc.observe(); // before relying on the old snapshot (gcfence.ts)
  const head = await readHead(store, org, home);
  if (!head) throw new UserError(`home ${org}/${home} has no snapshots in ${store.url}`);
  const to = await objects.resolveSnapshot(snapPrefix);
  const old = await objects.getSnapshot(to);
  const { snapshot, gen } = await commitSnapshot(objects, home, head.gen, { root: old.root, parent: head.snapshot, stats: old.stats, reason: 'rollback' }, {
    fence: { gc, since, reverify: () => assertSnapshotComplete(objects, to, `rollback of ${org}/${home}`) },
  });
  return { home: `${org}/${home}`, to, previous: head.snapshot, snapshot, gen };
}
