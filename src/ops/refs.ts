/**
 * What a home references: its retained HEAD generations, its conflict records, and, below each snapshot,
 * the trees and blocks reachable from the root tree. Shared by gc (mark), verify, du, locality and fork.
 *
 * Walking is memoized by tree hash, so subtrees shared between snapshots, generations and forks are read
 * once however many roots point at them. Block sizes come from the file entry (blockRanges), so nothing
 * here has to fetch a block to know how big it is.
 */
import { blockRanges } from '../hash/blake3.js';
import { conflictsPrefix, headsPrefix, homesPrefix, keyHome, keyOrg } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { listHistory, type HeadRecord } from '../format/heads.js';
import { ObjectStore } from '../format/objects.js';
import { liveHead } from '../fsynclog/homelog.js';
import type { TreeEntry } from '../model/tree.js';
import { NotFoundError, UserError } from '../util/errors.js';
import { validateName } from '../util/names.js';

/** The homes of `org` that have at least one key under `<org>/homes/<home>/` (heads, conflicts, LEASE). */
export async function listHomes(store: Store, org: string): Promise<string[]> {
  validateName('org', org);
  const homes = new Set<string>();
  for await (const o of store.list(homesPrefix(org))) {
    const name = keyHome(org, o.key);
    if (name) homes.add(name);
  }
  return [...homes].sort();
}

/** The orgs present in the store (first key component). Lists every key: use for whole-store gc only. */
export async function listOrgs(store: Store): Promise<string[]> {
  const orgs = new Set<string>();
  for await (const o of store.list('')) {
    const name = keyOrg(o.key);
    if (name && /^[a-z0-9][a-z0-9._-]{0,62}$/.test(name)) orgs.add(name);
  }
  return [...orgs].sort();
}

/** Throws a one-line UserError when the home has no generation at all. */
export async function requireHome(store: Store, org: string, home: string): Promise<void> {
  for await (const _ of store.list(headsPrefix(org, home), 1)) return;
  throw new UserError(`home ${org}/${home} has no snapshots in ${store.url}`);
}

export interface ConflictRecord {
  key: string;
  snapshot: string;
}

/** Snapshots that lost a HEAD race (kept under `conflicts/`, never applied). */
export async function listConflicts(store: Store, org: string, home: string): Promise<ConflictRecord[]> {
  const out: ConflictRecord[] = [];
  for await (const o of store.list(conflictsPrefix(org, home))) {
    const id = (await store.get(o.key)).toString('latin1');
    if (/^[0-9a-f]{64}$/.test(id)) out.push({ key: o.key, snapshot: id });
  }
  return out;
}

/** A root to mark or check from: one snapshot id and where it came from (for reports). */
export interface Root {
  home: string;
  snapshot: string;
  /** `gen 12`, `conflict <key>` or `log gen 12 seq 3`. */
  source: string;
  /** How to read it when that differs from the org's objects (a log segment's snapshot: homelog.ts). */
  objects?: ObjectStore;
}

/**
 * The retained roots of one home: the newest `keep` generations (all when keep is Infinity) and conflicts,
 * and with `log`, the live log segment (what was fsync'd since HEAD; it references store objects too).
 */
export async function homeRoots(store: Store, org: string, home: string, keep = Infinity, log = false): Promise<Root[]> {
  const history: HeadRecord[] = await listHistory(store, org, home, keep);
  const roots: Root[] = history.map((h) => ({ home, snapshot: h.snapshot, source: `gen ${h.gen}` }));
  for (const c of await listConflicts(store, org, home)) roots.push({ home, snapshot: c.snapshot, source: `conflict ${c.key}` });
  if (log) {
    const live = await liveHead(new ObjectStore(store, org), home);
    if (live.segment) roots.push({ home, snapshot: live.segment.snapshot, source: `log gen ${live.segment.gen} seq ${live.segment.seq}`, objects: live.objects });
  }
  return roots;
}

/** Sizes of the blocks of a file entry, in order. */
export function entryBlockSizes(entry: TreeEntry): Array<[string, number]> {
  const blocks = entry.blocks ?? [];
  const ranges = blockRanges(entry.size);
  return blocks.map((h, i) => [h, ranges[i]?.[1] ?? 0]);
}

export interface Reachable {
  /** Snapshot ids and tree hashes (both live under meta/). */
  meta: Set<string>;
  /** Block hash → size in bytes. */
  blocks: Map<string, number>;
  /** Block hash → one path that uses it (for reports). */
  blockPaths: Map<string, string>;
}

export function emptyReachable(): Reachable {
  return { meta: new Set(), blocks: new Map(), blockPaths: new Map() };
}

/**
 * Adds everything reachable from `snapshot` to `into`. Trees already in `into.meta` are not read again.
 * Store errors propagate (a missing or corrupt object stops the walk: gc must not sweep on partial marks).
 */
export async function markSnapshot(objects: ObjectStore, snapshot: string, into: Reachable): Promise<void> {
  if (into.meta.has(snapshot)) return;
  const snap = await objects.getSnapshot(snapshot);
  into.meta.add(snapshot);
  await markTree(objects, snap.root, '', into);
}

export async function markTree(objects: ObjectStore, tree: string, prefix: string, into: Reachable): Promise<void> {
  if (into.meta.has(tree)) return;
  const t = await objects.getTree(tree);
  into.meta.add(tree);
  const subdirs: Array<Promise<void>> = [];
  for (const e of t.entries) {
    const path = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.kind === 'file') {
      for (const [h, size] of entryBlockSizes(e)) {
        if (!into.blocks.has(h)) {
          into.blocks.set(h, size);
          into.blockPaths.set(h, path);
        }
      }
    } else if (e.kind === 'dir' && e.tree) {
      subdirs.push(markTree(objects, e.tree, path, into));
    }
  }
  await Promise.all(subdirs);
}

/**
 * Throws a one-line UserError unless every object reachable from `snapshot` is present (trees read and
 * verified, blocks asked about). Used by commits that reference an existing snapshot wholesale (fork,
 * rollback) after a gc may have overlapped them (format/gcfence.ts).
 */
export async function assertSnapshotComplete(objects: ObjectStore, snapshot: string, what: string): Promise<void> {
  const r = emptyReachable();
  let missing = 0;
  try {
    await markSnapshot(objects, snapshot, r);
    missing = (await objects.missingBlocks([...r.blocks.keys()])).size;
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
    missing = 1;
  }
  if (missing > 0) throw new UserError(`${what}: snapshot ${snapshot.slice(0, 12)} lost objects to a gc that ran meanwhile (it was no longer in any retained history); nothing was changed`);
}
