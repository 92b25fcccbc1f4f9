/**
 * Whether a commit (a seal or a log segment) may rely on blocks that write-behind stored before it, and
 * the record of those it did rely on.
 *
 * Write-behind tags what it stores with the gc epoch that a look at the fence saw settled before it
 * uploaded or found the block (seal/writebehind.ts). A later look that sees the same epoch settled proves
 * that no gc was announced in between, so nothing was deleted in between: the block is still there. The
 * commit then treats it like a block it found in the store itself, after that look:
 *  - a seal takes the look as its own first one (C1) and records the blocks as dedupe hits (`ReuseLog`),
 *    so its fence (gcfence.ts) re-verifies them, and uploads them again, if a gc overlaps it;
 *  - a log segment, which deduplicates nothing else, asks the fence once more right before its PUT
 *    (`confirm`: one existence check): an unchanged epoch means no gc was announced since the tag, and a
 *    gc announced after that look marks only after its wait, when the segment has landed and is a root.
 *    A changed one makes the fsync seal instead, with the full fence.
 */
import type { EpochState, GcFence } from '../format/gcfence.js';
import type { ReuseLog } from '../format/objects.js';

export class TagCheck {
  /** Whether any block was relied on through its tag (or a reused segment tree relies on some). */
  used = false;
  /** Blocks relied on so far (a walk compares it before and after a subtree). */
  count = 0;

  constructor(private readonly gc: GcFence, private readonly look: EpochState | null, private readonly reuse: ReuseLog) {}

  private settled(s: EpochState): boolean {
    return s.done || this.gc.isStale(s);
  }

  /** The epoch whose blocks are accepted (undefined: none are). */
  get epoch(): number | null | undefined {
    return this.look !== null && this.settled(this.look) ? this.look.epoch : undefined;
  }

  /** Whether blocks stored under `epoch` may be relied on. */
  accepts(epoch: number | null): boolean {
    return this.look !== null && this.settled(this.look) && this.look.epoch === epoch;
  }

  /** Block `hash` is relied on through its tag. */
  rely(hash: string): void {
    this.used = true;
    this.count++;
    this.reuse.blocks.add(hash);
    this.reuse.tagged.add(hash);
  }

  /** Relies on `hash` if `storedUnder` says it was stored under an accepted epoch; true when it did. */
  take(hash: string, storedUnder: (epoch: number | null) => boolean): boolean {
    if (!this.look || !this.accepts(this.look.epoch) || !storedUnder(this.look.epoch)) return false;
    this.rely(hash);
    return true;
  }

  /** A look now that saw no gc announced since the tag's look (the new look), or null when one was. */
  async confirm(): Promise<EpochState | null> {
    if (!this.look || !this.settled(this.look)) return null;
    const now = await this.gc.recheck(this.look);
    return now.epoch === this.look.epoch && this.settled(now) ? now : null;
  }
}
