/**
 * Diff of two snapshots of a home: the paths added, removed and modified, with sizes — "what the agent
 * changed". Walks both root trees together and skips every subtree whose hash is equal on both sides, so
 * the cost is proportional to the change, not to the home. A path whose kind changed (file → dir) is one
 * removal plus one addition; a file is modified when its content, mode, owner, xattrs or target changed.
 */
import type { ObjectStore } from '../format/objects.js';
import type { TreeEntry } from '../model/tree.js';

export type ChangeKind = 'added' | 'removed' | 'modified';

export interface Change {
  change: ChangeKind;
  path: string;
  kind: TreeEntry['kind'];
  /** Size before (removed, modified). */
  oldSize?: number;
  /** Size after (added, modified). */
  size?: number;
}

export interface DiffSummary {
  added: number;
  removed: number;
  modified: number;
  bytesAdded: number;
  bytesRemoved: number;
}

function sameEntry(a: TreeEntry, b: TreeEntry): boolean {
  if (a.kind !== b.kind || a.mode !== b.mode || a.uid !== b.uid || a.gid !== b.gid || a.size !== b.size) return false;
  if (a.target !== b.target || a.rdev !== b.rdev) return false;
  if ((a.blocks ?? []).join() !== (b.blocks ?? []).join()) return false;
  const xa = a.xattrs ?? [];
  const xb = b.xattrs ?? [];
  return xa.length === xb.length && xa.every(([n, v], i) => xb[i]?.[0] === n && v.equals(xb[i]?.[1] ?? Buffer.alloc(0)));
}

async function* whole(objects: ObjectStore, change: 'added' | 'removed', e: TreeEntry, path: string): AsyncGenerator<Change> {
  yield change === 'added' ? { change, path, kind: e.kind, size: e.size } : { change, path, kind: e.kind, oldSize: e.size };
  if (e.kind === 'dir' && e.tree) {
    for (const c of (await objects.getTree(e.tree)).entries) yield* whole(objects, change, c, `${path}/${c.name}`);
  }
}

/** Changes from tree `a` to tree `b` (either may be null: an empty home), parents before children. */
export async function* diffTrees(objects: ObjectStore, a: string | null, b: string | null, prefix = ''): AsyncGenerator<Change> {
  if (a === b) return;
  const left = a ? (await objects.getTree(a)).entries : [];
  const right = b ? (await objects.getTree(b)).entries : [];
  const byName = new Map(left.map((e) => [e.name, e]));
  const names = [...new Set([...left.map((e) => e.name), ...right.map((e) => e.name)])].sort();
  const rightByName = new Map(right.map((e) => [e.name, e]));
  for (const name of names) {
    const path = prefix ? `${prefix}/${name}` : name;
    const x = byName.get(name);
    const y = rightByName.get(name);
    if (x && !y) yield* whole(objects, 'removed', x, path);
    else if (!x && y) yield* whole(objects, 'added', y, path);
    else if (x && y) {
      if (x.kind !== y.kind) {
        yield* whole(objects, 'removed', x, path);
        yield* whole(objects, 'added', y, path);
      } else if (x.kind === 'dir') {
        if (x.mode !== y.mode || x.uid !== y.uid || x.gid !== y.gid) yield { change: 'modified', path, kind: 'dir', oldSize: 0, size: 0 };
        yield* diffTrees(objects, x.tree ?? null, y.tree ?? null, path);
      } else if (!sameEntry(x, y)) {
        yield { change: 'modified', path, kind: y.kind, oldSize: x.size, size: y.size };
      }
    }
  }
}

export function summarize(changes: readonly Change[]): DiffSummary {
  const s: DiffSummary = { added: 0, removed: 0, modified: 0, bytesAdded: 0, bytesRemoved: 0 };
  for (const c of changes) {
    s[c.change]++;
    if (c.kind !== 'file') continue;
    const delta = (c.size ?? 0) - (c.oldSize ?? 0);
    if (delta > 0) s.bytesAdded += delta;
    else s.bytesRemoved -= delta;
  }
  return s;
}
