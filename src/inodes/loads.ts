/**
 * Directory loads the journal keeps in memory only (journal.ts `inMemoryLoad`): the records, dirents and
 * hard-link ids a lazy load of a snapshot directory creates, until a change depends on them.
 *
 * A load only repeats what the base snapshot already says, so losing it (a kill -9, a restart) costs a
 * reload from the tree and nothing else: on disk the directory is still `loaded: false` with its tree
 * hash. Writing every load to the journal made a first `find` over a fresh home pay a journal batch per
 * directory. What must never happen is a change on disk that refers to a load that is not: a changed
 * record of a loaded file whose dirent was never written, or a new entry in a directory that still reads
 * as unloaded. So before the journal queues a write of an inode's record, it flushes the loads that
 * created or changed that record into the same batch; before a write of a directory's dirents, also that
 * directory's own load; each time with the loads above first (a load's directory may itself come from
 * its parent's load), so one batch holds the change and everything it stands on. A directory whose own
 * load is still held is written as unloaded (`loaded: false`, its tree hash): after a restart it is loaded
 * from its tree again, with the attributes the change gave it.
 *
 * This class is only the bookkeeping: which loads are held, which inodes each one wrote or changed, and
 * in what order loads must be flushed. The journal does the writing.
 */

/** One directory's load held in memory. */
export interface HeldLoad {
  /** The directory loaded. */
  readonly dir: number;
  /** Hard-link ids the load registered (link id → ino). */
  readonly links: Map<number, number>;
  /** When the load was made or its directory last listed (Date.now()), for dropping the oldest first. */
  usedAt: number;
}

/**
 * Which inodes a held load wrote is not recorded per inode (a full-size home holds 200,000 of them after a
 * first `find`): it follows from the records themselves. While the load of directory D is held, nothing has
 * changed D's entries (a change of one would have taken the load first), so the load wrote D's own record
 * and the record of every entry D lists, and an inode's record was written or changed by exactly the held
 * loads of the directories it is in (its `parents`: a hard link's other names included) and, for a
 * directory, its own.
 */
export class MemoryLoads {
  private readonly held = new Map<number, HeldLoad>();
  /** Link id → ino, for every link a held load registered. */
  private readonly heldLinks = new Map<number, number>();
  /** The load being recorded (inside `Journal.inMemoryLoad`). */
  private current: HeldLoad | undefined;

  /** `parentsOf`: the directories an inode's in-memory record lists (none when it has no record). */
  constructor(private readonly parentsOf: (ino: number) => readonly number[]) {}

  /** Whether a load is being recorded: the journal's writes go to it instead of the queue. */
  get recording(): boolean {
    return this.current !== undefined;
  }

  /** Runs fn while recording the load of `dir`; loads do not nest. */
  record<T>(dir: number, fn: () => T): T {
    if (this.current) throw new Error('directory loads do not nest');
    const load = this.held.get(dir) ?? { dir, links: new Map<number, number>(), usedAt: Date.now() };
    this.held.set(dir, load);
    this.current = load;
    try {
      return fn();
    } finally {
      this.current = undefined;
    }
  }

  /** While recording: the load registered hard-link id `link` for `ino`. */
  linked(link: number, ino: number): void {
    if (!this.current) return;
    this.current.links.set(link, ino);
    this.heldLinks.set(link, ino);
  }

  /** The inode a held load registered for hard-link id `link`. */
  linkIno(link: number): number | undefined {
    return this.heldLinks.get(link);
  }

  /** How many directory loads are held (for tests and metrics). */
  get size(): number {
    return this.held.size;
  }

  /** The held load of `dir`, if any. */
  get(dir: number): HeldLoad | undefined {
    return this.held.get(dir);
  }

  /** Moves the load of `dir` to the end of the order `oldest` walks; `used`: it was used now. */
  touch(dir: number, used = true): void {
    const load = this.held.get(dir);
    if (!load) return;
    if (used) load.usedAt = Date.now();
    this.held.delete(dir);
    this.held.set(dir, load);
  }

  /** Up to `max` held loads, least recently used first. */
  oldest(max: number): HeldLoad[] {
    const out: HeldLoad[] = [];
    for (const load of this.held.values()) {
      if (out.length >= max) break;
      out.push(load);
    }
    return out;
  }

  /** Forgets a held load that registered no hard-link ids (its directory is then unloaded again: Journal.dropHeldLoad). */
  drop(dir: number): void {
    const load = this.held.get(dir);
    if (!load) return;
    if (load.links.size > 0) throw new Error(`the load of ${dir} registered hard-link ids: it cannot be dropped`);
    this.held.delete(dir);
  }

  /** Whether the load of directory `dir` is held (on disk the directory still reads as unloaded). */
  holds(dir: number): boolean {
    return this.held.has(dir);
  }

  /**
   * The held loads a write about `ino` stands on, in the order they must be written (every load above
   * one before it), and removes them from what is held, so the caller writes each exactly once. A write
   * of its record or change mark stands on the loads of the directories it is in; a write of one of its
   * dirents (`own`) also on the directory's own load.
   */
  takeFor(ino: number, own: boolean): HeldLoad[] {
    if (this.held.size === 0) return [];
    const out: HeldLoad[] = [];
    const above = (i: number): void => {
      for (const dir of this.parentsOf(i)) if (dir !== i) take(dir);
    };
    const take = (dir: number): void => {
      const load = this.held.get(dir);
      if (!load) return;
      this.held.delete(dir);
      for (const link of load.links.keys()) this.heldLinks.delete(link);
      above(dir); // the directory's own record came from the loads above it
      out.push(load);
    };
    above(ino);
    if (own) take(ino);
    return out;
  }
}
