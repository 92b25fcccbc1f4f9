/**
 * The namespace walk of a waking home: every tree under a root, fetched breadth-first
 * in the background, so that `find`, `git status` or a first `ls` over a store one network hop away cost
 * O(depth) round trips instead of one per directory.
 *
 * Each tree is fetched through `fetch` (the block cache's prefetch-priority get, which bounds the requests
 * in flight and lets a reader's lookup jump ahead of the queue or join the fetch in flight). As soon as a
 * tree arrives its subtrees are queued (format/subtrees.ts reads only their hashes), so a level's requests all go
 * out together. A tree that fails to fetch or read is skipped with its subtrees (the mount fetches it
 * again on demand, and reports the error there); the walk itself never throws. `stop()` ends it early (the cache is closing).
 *
 * Trees already in memory (a namespace pack brought them all) come back as resolved promises: without a
 * pause the whole walk would run in one chain of microtasks, during which no FUSE request is served. So
 * every tree is read after `pause` (util/slicer.ts: a few ms of walk per turn of the event loop).
 */
import { backgroundSlicer } from '../util/slicer.js';
import { subtreesOf } from '../format/subtrees.js';

export interface TreeWalkResult {
  /** Trees fetched and read, trees skipped (fetch or read failed), and the deepest level reached. */
  trees: number;
  failed: number;
  depth: number;
}

export class TreeWalk {
  private stopped = false;
  private readonly seen = new Set<string>();
  private readonly result: TreeWalkResult = { trees: 0, failed: 0, depth: 0 };

  constructor(
    private readonly fetch: (hash: string) => Promise<Buffer>,
    private readonly pause: () => Promise<void> = () => backgroundSlicer.pause(),
  ) {}

  /** Walks everything under `root`; resolves when every reachable tree was visited (or the walk stopped). */
  run(root: string): Promise<TreeWalkResult> {
    return new Promise((resolve) => {
      let pending = 0;
      const visit = (hash: string, depth: number): void => {
        if (this.stopped || this.seen.has(hash)) return;
        this.seen.add(hash);
        pending++;
        this.fetch(hash).then(async (buf) => {
          await this.pause();
          if (this.stopped) return;
          const subtrees = subtreesOf(buf, hash);
          this.result.trees++;
          this.result.depth = Math.max(this.result.depth, depth);
          for (const t of subtrees) visit(t, depth + 1);
        }).catch(() => {
          this.result.failed++;
        }).finally(() => {
          if (--pending === 0) resolve(this.result);
        });
      };
      visit(root, 0);
      if (pending === 0) resolve(this.result);
    });
  }

  stop(): void {
    this.stopped = true;
  }
}
