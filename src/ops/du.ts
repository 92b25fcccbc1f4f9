/**
 * Disk usage of an org's homes, on active data (each home's HEAD with what was fsync'd since: its live log
 * segment, fsynclog/homelog.ts `liveHead`): logical bytes (file sizes as the agent
 * sees them), unique bytes (blocks no other home's HEAD uses: what deleting this home would free once its
 * history expires) and shared bytes (blocks at least one other home's HEAD also uses, e.g. after a fork).
 * The org line adds the deduplicated size of all HEADs and what the store holds under `<org>/` in total
 * (history, conflicts and not yet collected garbage included).
 */
import { objectsPrefix } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { liveHead } from '../fsynclog/homelog.js';
import type { ObjectStore } from '../format/objects.js';
import { UserError } from '../util/errors.js';
import { emptyReachable, listHomes, markSnapshot } from './refs.js';

export interface HomeUsage {
  home: string;
  snapshot: string;
  files: number;
  logicalBytes: number;
  uniqueBytes: number;
  sharedBytes: number;
}

export interface OrgUsage {
  org: string;
  homes: HomeUsage[];
  logicalBytes: number;
  /** Bytes of the distinct blocks of all HEADs. */
  dedupedBytes: number;
  /** Everything under `<org>/blocks` and `<org>/meta` in the store. */
  storeBytes: number;
  storeObjects: number;
}

/** Usage of every home of the org (needed for unique/shared), reported for `only` when given. */
export async function orgUsage(store: Store, objects: ObjectStore, only?: string): Promise<OrgUsage> {
  const org = objects.org;
  const homes = await listHomes(store, org);
  if (homes.length === 0) throw new UserError(`org ${org} has no homes in ${store.url}`);
  if (only !== undefined && !homes.includes(only)) throw new UserError(`home ${org}/${only} has no snapshots in ${store.url}`);
  const perHome = new Map<string, { snapshot: string; files: number; logical: number; blocks: Map<string, number> }>();
  const users = new Map<string, number>();
  for (const h of homes) {
    const live = await liveHead(objects, h);
    if (!live.snapshot) continue;
    const snap = await live.objects.getSnapshot(live.snapshot);
    const reach = emptyReachable();
    await markSnapshot(live.objects, live.snapshot, reach);
    perHome.set(h, { snapshot: live.snapshot, files: snap.stats.files, logical: snap.stats.bytes, blocks: reach.blocks });
    for (const b of reach.blocks.keys()) users.set(b, (users.get(b) ?? 0) + 1);
  }
  const all = new Map<string, number>();
  const rows: HomeUsage[] = [];
  let logicalBytes = 0;
  for (const [h, u] of perHome) {
    let unique = 0;
    let shared = 0;
    for (const [b, size] of u.blocks) {
      all.set(b, size);
      if ((users.get(b) ?? 0) > 1) shared += size;
      else unique += size;
    }
    logicalBytes += u.logical;
    if (only === undefined || only === h) {
      rows.push({ home: `${org}/${h}`, snapshot: u.snapshot, files: u.files, logicalBytes: u.logical, uniqueBytes: unique, sharedBytes: shared });
    }
  }
  let storeBytes = 0;
  let storeObjects = 0;
  for (const kind of ['blocks', 'meta'] as const) {
    for await (const o of store.list(objectsPrefix(org, kind))) {
      storeBytes += o.size;
      storeObjects++;
    }
  }
  const dedupedBytes = [...all.values()].reduce((s, n) => s + n, 0);
  return { org, homes: rows, logicalBytes, dedupedBytes, storeBytes, storeObjects };
}
