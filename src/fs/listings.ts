/**
 * Directory listings for readdir without directory handles. The binding makes opendir zero-message (see
 * fuse/types.ts), so every readdir arrives with fh 0 and the offset (the cookie of the last entry the caller
 * saw) is all that says where a listing continues. A listing is therefore taken once, when a reader starts at
 * offset 0, and kept under an id carried in the cookies' high bits: cookie = id · 2^32 + position, where
 * position k + 1 follows the k-th of [".", "..", ...entries]. A reader continuing a listing sees the same
 * entries in the same order whatever changes meanwhile, so an entry that stays in the directory is listed once,
 * exactly (POSIX leaves entries added or removed during the walk to either answer).
 *
 * A listing goes once a reader reached its end, or when more than `max` are kept (the oldest first). A
 * cookie whose listing has gone (or that names another directory) continues a fresh listing at the same
 * position: the best that can be done, and what a kernel without the listing cache would see anyway.
 */
/** Cookie positions live in the low 32 bits; listing ids stay below 2^20 so a cookie is exact in a double. */
const POS_SPAN = 2 ** 32;
const ID_SPAN = 2 ** 20;

/** Names and inode numbers, in listing order; attributes are read when an entry is sent, not when listed. */
export type Listed = Array<[string, number]>;

interface Listing {
  ino: number;
  entries: Listed;
}

export class Listings {
  private readonly kept = new Map<number, Listing>();
  /** Listings kept per directory. */
  private readonly perDir = new Map<number, number>();
  private nextId = 1;

  constructor(private readonly max = 1024) {}

  /**
   * The listing a readdir of `ino` at `offset` continues (`list` makes a fresh one), the position it starts
   * at, the cookie of each position in it, and `done` to drop it once a reader has reached its end.
   */
  at(ino: number, offset: number, list: () => Listed): { entries: Listed; pos: number; cookie: (pos: number) => number; done: () => void } {
    let id = Math.floor(offset / POS_SPAN);
    const pos = offset % POS_SPAN;
    let l = offset === 0 ? undefined : this.kept.get(id);
    if (!l || l.ino !== ino) {
      id = this.nextId;
      this.nextId = (this.nextId % (ID_SPAN - 1)) + 1;
      l = { ino, entries: list() };
      this.drop(id);
      this.kept.set(id, l);
      this.perDir.set(ino, (this.perDir.get(ino) ?? 0) + 1);
      if (this.kept.size > this.max) this.drop(this.kept.keys().next().value as number);
    }
    const base = id * POS_SPAN;
    return { entries: l.entries, pos, cookie: (p) => base + p, done: () => this.drop(id) };
  }

  private drop(id: number): void {
    const l = this.kept.get(id);
    if (!l) return;
    this.kept.delete(id);
    const n = (this.perDir.get(l.ino) ?? 1) - 1;
    if (n > 0) this.perDir.set(l.ino, n);
    else this.perDir.delete(l.ino);
  }

  /** Whether a listing of directory `ino` is kept (a reader may continue it). */
  listing(ino: number): boolean {
    return this.perDir.has(ino);
  }

  /** Listings kept now (tests). */
  get size(): number {
    return this.kept.size;
  }
}
