/**
 * What an fsync's log segment may leave out, so that its cost follows what was fsync'd and not the unpack
 * that came just before it (docs/decisions/0067-fresh-names-left-out.md).
 *
 * A segment holds the whole home, but for names that were never durable: a file, directory or symlink
 * created by this process that no landed segment or seal holds yet (`fresh`), under a name its directory
 * did not have in the previous durable state, may be left out when its bytes are neither stored by
 * write-behind nor within the segment's budget for such names. What the fsync asked for is never left out:
 * an fsync'd inode, every entry of an fsync'd directory, and (since they are not empty) their directories.
 * A fresh directory is left out only when everything under it was. Hard-linked files are always held.
 *
 * A fresh directory that receives an inode that is not fresh (a rename) or a further link is pinned, with
 * its fresh ancestors (`named`): something below must be held. So once the budget is spent, a fresh
 * directory that is neither pinned nor an fsync'd inode's ancestor is left out without a walk.
 *
 * So the snapshot a fresh host replays is one a POSIX crash allows: every fsync'd file and name is there,
 * every file held is at a state it had, and a name whose creation nobody fsync'd may be missing, as on a
 * local disk after a power cut. Never a durable name: a fresh directory had none, and of a directory a
 * landed segment walked, the durable names are those it held (`held`). In any other directory (one the
 * last seal wrote, or that no segment walked since) every name is treated as durable, which is always safe.
 *
 * Continuous protection counts only whole segments as covering the home (home/protect.ts); a partial one
 * is followed by a seal. All of this is in memory: after a restart nothing is fresh, and nothing is left out.
 */
import type { Inode } from '../inodes/types.js';
import { storedOf } from '../inodes/filestate.js';

export class Omissions {
  constructor(private readonly parentsOf: (ino: number) => readonly number[]) {}

  /** Inodes created by this process that no landed segment or seal holds yet. */
  private readonly fresh = new Set<number>();
  /** Fresh directories with something below them that must be held (a non-fresh inode, a hard link). */
  private readonly pinned = new Set<number>();
  /** Directories landed segments walked since the last seal: the names the newest of them held. */
  private readonly held = new Map<number, ReadonlySet<string>>();
  /** Seals committed: a segment walked before one of them landed after it says nothing of today's names. */
  private seals = 0;

  /** A file, directory, symlink or special file was created. */
  created(ino: number): void {
    this.fresh.add(ino);
  }

  /** Inode `ino` got a name in `dirs` (moved there, or a further link): they and their fresh ancestors are pinned. */
  named(ino: number, dirs: readonly number[], link: boolean): void {
    if (!link && this.fresh.has(ino) && !this.pinned.has(ino)) return; // fresh and unpinned: all below it may go
    for (const dir of dirs) {
      let d: number | undefined = dir;
      for (let depth = 0; d !== undefined && this.fresh.has(d) && !this.pinned.has(d) && depth < 10_000; depth++) {
        this.pinned.add(d);
        d = this.parentsOf(d)[0];
      }
    }
  }

  /** The walk of one segment; `fsynced`: the inodes it must hold whatever the budget (null: nothing may be left out). */
  begin(fsynced: ReadonlySet<number> | null, budget: number): OmissionWalk {
    if (fsynced === null) return new OmissionWalk(null, budget, this.seals);
    // The directories above an fsync'd inode are walked, whatever the budget.
    const above = new Set<number>();
    const up = (ino: number, depth: number): void => {
      for (const p of this.parentsOf(ino)) if (!above.has(p) && depth < 10_000) (above.add(p), up(p, depth + 1));
    };
    for (const ino of fsynced) up(ino, 0);
    return new OmissionWalk({ fresh: this.fresh, held: this.held, pinned: this.pinned, fsynced, above }, budget, this.seals);
  }

  /** A segment walked with `w` landed: what it held is durable now, and so are the names of the directories it walked. */
  landed(w: OmissionWalk): void {
    for (const ino of w.held) {
      this.fresh.delete(ino);
      this.pinned.delete(ino);
    }
    // (A seal that committed since this walk began holds names this walk did not see: they count as durable.)
    if (w.seals === this.seals) for (const [dir, names] of w.dirs) this.held.set(dir, names);
  }

  /** A seal walked with `w` committed. `exists` prunes inodes that are gone (a fresh file unlinked again). */
  sealed(w: OmissionWalk, exists: (ino: number) => boolean): void {
    for (const ino of w.held) this.fresh.delete(ino);
    this.held.clear(); // HEAD holds every name the seal saw: all are treated as durable
    this.seals++;
    for (const ino of this.fresh) if (!exists(ino)) this.fresh.delete(ino);
    for (const ino of this.pinned) if (!this.fresh.has(ino)) this.pinned.delete(ino);
  }
}

interface OmissionRules {
  fresh: ReadonlySet<number>;
  held: ReadonlyMap<number, ReadonlySet<string>>;
  fsynced: ReadonlySet<number>;
  /** Ancestors of the fsync'd inodes. */
  above: ReadonlySet<number>;
  pinned: ReadonlySet<number>;
}

/** One walk's decisions and what it held (a seal's walk, or a segment's that may leave nothing out, has no rules). */
export class OmissionWalk {
  /** Entries left out. */
  omitted = 0;
  /** Inodes whose entries went into the walk's trees. */
  readonly held: number[] = [];
  /** Directories walked: the names held. */
  readonly dirs = new Map<number, ReadonlySet<string>>();
  /** Directories walked of which every entry was left out (at least one). */
  private readonly emptied = new Set<number>();
  /** A file did not fit: the budget is spent. */
  private spent = false;

  constructor(private readonly rules: OmissionRules | null, private budget: number, readonly seals: number) {}

  /** Whether the entry `name` of directory `dir` may be left out (`leavesOut` and `isEmptied` then decide). */
  mayOmit(dir: number, name: string, node: Inode): boolean {
    const r = this.rules;
    if (!r || !r.fresh.has(node.ino) || r.fsynced.has(node.ino) || r.fsynced.has(dir)) return false;
    if (node.kind === 'file' && node.nlink > 1) return false;
    if (r.fresh.has(dir)) return true; // a fresh directory had no durable names
    const names = r.held.get(dir);
    return names !== undefined && !names.has(name);
  }

  /**
   * Whether an omittable entry is left out before its walk: a file whose bytes not stored by write-behind
   * do not fit the budget (else they are taken from it), or a directory once the budget is spent, when
   * nothing below it must be held.
   */
  leavesOut(node: Inode): boolean {
    if (node.kind === 'dir') {
      const r = this.rules;
      return this.spent && r !== null && !r.above.has(node.ino) && !r.fsynced.has(node.ino) && !r.pinned.has(node.ino);
    }
    if (node.kind !== 'file') return false;
    const stored = storedOf(node.content);
    const bytes = stored && stored.size === node.size ? 0 : node.size;
    if (bytes > this.budget) {
      this.spent = true;
      return true;
    }
    this.budget -= bytes;
    return false;
  }

  /** Whether directory `ino`, walked, held nothing because everything in it was left out. */
  isEmptied(ino: number): boolean {
    return this.emptied.has(ino);
  }

  /** Directory `dir` was walked: `held` are its entries' names and inodes kept, `left` how many were left out. */
  walked(dir: number, held: Array<{ name: string; ino: number }>, left: number): void {
    for (const h of held) this.held.push(h.ino);
    this.omitted += left;
    if (this.rules) this.dirs.set(dir, new Set(held.map((h) => h.name)));
    if (left > 0 && held.length === 0) this.emptied.add(dir);
  }
}
