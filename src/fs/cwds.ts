/**
 * Which directories of the mount processes stand in: their working and root directories, and every
 * directory above those. The records' trim (inodes/trim.ts) must not ask the kernel to drop such a
 * directory's name: the kernel unhashes a dentry it is asked to drop even while it is in use, and a process
 * whose working directory is an unhashed dentry gets ENOENT from getcwd (git: "Unable to read current
 * working directory") until someone looks the name up again; one below it reaches it through `..`.
 *
 * The answer comes from /proc: each process's `cwd` and `root` link, read (readlink prints the path the
 * kernel holds; it asks no filesystem anything, so neither this mount nor a hung one can stall it) and
 * walked from the mount's root through the daemon's own records (`resolve`). It is kept for `maxAgeMs`;
 * until a scan has finished, `current` answers undefined and the trim asks the kernel for nothing. Processes
 * whose links cannot be read (another user's, for a daemon that is not root) are not seen.
 */
import { readdir, readlink } from 'node:fs/promises';

/** Links read at once, at most. */
const PARALLEL = 32;

export class ProcessDirs {
  private scanned: { at: number; inos: Set<number> } | undefined;
  private scanning: Promise<void> | undefined;

  /**
   * `mountpoint`: the mount's directory, as /proc prints paths; `resolve`: the inode numbers of the
   * directories along a path below the mount's root (its names, in order), as far as the records know them.
   */
  constructor(
    private readonly mountpoint: string,
    private readonly resolve: (names: string[]) => number[],
    private readonly maxAgeMs = 1000,
    private readonly procDir = '/proc',
  ) {}

  /** The inode numbers to leave alone, from a scan at most `maxAgeMs` old; undefined (and a scan starts) otherwise. */
  current(now = Date.now()): Set<number> | undefined {
    const s = this.scanned;
    if (s && now - s.at <= this.maxAgeMs) return s.inos;
    this.scanning ??= this.scan().finally(() => {
      this.scanning = undefined;
    });
    return undefined;
  }

  /** One scan (tests await it). */
  async scan(): Promise<void> {
    const pids = (await readdir(this.procDir).catch(() => [] as string[])).filter((n) => /^\d+$/.test(n));
    const links = pids.flatMap((p) => [`${this.procDir}/${p}/cwd`, `${this.procDir}/${p}/root`]);
    const inos = new Set<number>();
    const base = this.mountpoint.replace(/\/+$/, '');
    for (let i = 0; i < links.length; i += PARALLEL) {
      const paths = await Promise.all(links.slice(i, i + PARALLEL).map((l) => readlink(l).catch(() => undefined)));
      for (const p of paths) {
        if (p === undefined || (p !== base && !p.startsWith(`${base}/`))) continue;
        // A working directory the kernel no longer reaches reads "<path> (deleted)": its name is gone anyway.
        for (const ino of this.resolve(p.slice(base.length).split('/').filter((n) => n !== ''))) inos.add(ino);
      }
    }
    this.scanned = { at: Date.now(), inos };
  }
}
