/**
 * Verify: every object referenced by a home's retained generations, conflict records and live log segment
 * (what was fsync'd since HEAD, its objects read from the segment) is present, and
 * trees and snapshots decode and match their hashes; with `full`, every block is fetched and re-hashed.
 * Unlike gc's mark, the walk goes on past damage so that one run reports every damaged path. Store errors
 * that are not about one object (unreachable store, permissions) stop the run.
 */
import { blockKey, metaKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import type { ObjectStore } from '../format/objects.js';
import { CorruptObjectError, FormatError, NotFoundError } from '../util/errors.js';
import { mapLimit } from '../util/concurrency.js';
import { entryBlockSizes, homeRoots, type Root } from './refs.js';

export interface Problem {
  problem: 'missing' | 'corrupt';
  object: 'snapshot' | 'tree' | 'block';
  key: string;
  home: string;
  /** Path inside the snapshot ('' for the root, or the snapshot itself). */
  path: string;
  /** Which generation or conflict record led here. */
  source: string;
}

export interface VerifyResult {
  org: string;
  homes: string[];
  full: boolean;
  snapshots: number;
  trees: number;
  blocks: number;
  blockBytes: number;
  /** Bytes re-hashed (full only). */
  bytesHashed: number;
  problems: Problem[];
  seconds: number;
}

export interface VerifyOptions {
  full: boolean;
  onProgress?: (phase: string, done: number, total: number) => void;
}

function classify(e: unknown): 'missing' | 'corrupt' | null {
  if (e instanceof NotFoundError) return 'missing';
  if (e instanceof CorruptObjectError || e instanceof FormatError) return 'corrupt';
  return null;
}

interface BlockUse {
  size: number;
  path: string;
  home: string;
  source: string;
  /** How the root that uses it reads (a log segment's blocks are inline in the segment). */
  objects?: ObjectStore;
}

export async function verifyHomes(store: Store, objects: ObjectStore, homes: readonly string[], opts: VerifyOptions): Promise<VerifyResult> {
  const t0 = performance.now();
  const org = objects.org;
  const progress = opts.onProgress ?? (() => undefined);
  const problems: Problem[] = [];
  const seenMeta = new Set<string>();
  const blocks = new Map<string, BlockUse>();
  let snapshots = 0;

  const report = (e: unknown, object: Problem['object'], key: string, r: Root, path: string): void => {
    const kind = classify(e);
    if (!kind) throw e;
    problems.push({ problem: kind, object, key, home: `${org}/${r.home}`, path, source: r.source });
  };

  const walk = async (tree: string, prefix: string, r: Root): Promise<void> => {
    if (seenMeta.has(tree)) return;
    seenMeta.add(tree);
    let entries;
    try {
      entries = (await (r.objects ?? objects).getTree(tree)).entries;
    } catch (e) {
      report(e, 'tree', metaKey(org, tree), r, prefix || '/');
      return;
    }
    const subdirs: Array<Promise<void>> = [];
    for (const e of entries) {
      const path = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.kind === 'file') {
        for (const [h, size] of entryBlockSizes(e)) if (!blocks.has(h)) blocks.set(h, { size, path, home: r.home, source: r.source, ...(r.objects ? { objects: r.objects } : {}) });
      } else if (e.kind === 'dir' && e.tree) {
        subdirs.push(walk(e.tree, path, r));
      }
    }
    await Promise.all(subdirs);
  };

  for (const home of homes) {
    for (const r of await homeRoots(store, org, home, Infinity, true)) {
      if (seenMeta.has(r.snapshot)) continue;
      seenMeta.add(r.snapshot);
      snapshots++;
      try {
        const snap = await (r.objects ?? objects).getSnapshot(r.snapshot);
        await walk(snap.root, '', r);
      } catch (e) {
        report(e, 'snapshot', metaKey(org, r.snapshot), r, '(snapshot)');
      }
    }
  }

  const all = [...blocks.entries()];
  const present = new Set<string>();
  for (let i = 0; i < all.length; i += 1000) {
    const batch = all.slice(i, i + 1000).map(([h]) => blockKey(org, h));
    for (const k of await store.has(batch)) present.add(k);
    progress('check', Math.min(i + 1000, all.length), all.length);
  }
  const blockProblem = (problem: Problem['problem'], h: string, u: BlockUse): Problem => ({
    problem, object: 'block', key: blockKey(org, h), home: `${org}/${u.home}`, path: u.path, source: u.source,
  });
  // A block missing from the store may be inline in the log segment whose root uses it.
  for (const [h, u] of all) if (!present.has(blockKey(org, h)) && u.objects && (await u.objects.store.has([blockKey(org, h)])).size > 0) present.add(blockKey(org, h));
  for (const [h, u] of all) if (!present.has(blockKey(org, h))) problems.push(blockProblem('missing', h, u));

  let bytesHashed = 0;
  const blockBytes = all.reduce((s, [, u]) => s + u.size, 0);
  if (opts.full) {
    const toHash = all.filter(([h]) => present.has(blockKey(org, h)));
    await mapLimit(toHash, 8, async ([h, u]) => {
      try {
        const data = await (u.objects ?? objects).getBlock(h);
        bytesHashed += data.length;
      } catch (e) {
        const kind = classify(e);
        if (!kind) throw e;
        problems.push(blockProblem(kind, h, u));
      }
      progress('hash', bytesHashed, blockBytes);
    });
  }
  return {
    org, homes: [...homes], full: opts.full, snapshots, trees: seenMeta.size - snapshots, blocks: all.length, blockBytes, bytesHashed,
    problems, seconds: (performance.now() - t0) / 1000,
  };
}
