/**
 * The `wake.phases` line of the daemon log: how long each phase of a mount took, in ms, so that the cost of
 * a wake is visible per mount. The phases follow one another on the wake's critical path; each is the time
 * from the end of the previous one (work overlapped with an earlier phase costs the later one nothing):
 *   startup  Node's own start and the CLI's imports, up to the daemon's first line of work
 *   imports  the rest of homefs (home, FUSE adapter, metrics), while the store opens
 *   services the metrics registry and the daemon's services (metrics endpoint, systemd notifier)
 *   store    what is left of opening the store once the imports are done
 *   lease    the lease claimed (read, write) while the block cache opens; HEAD is read alongside the write
 *   base     HEAD, the log claims and the base snapshot (chooseBase)
 *   fuse     the FUSE session mounted: the home serves from here
 */
export class WakePhases {
  private readonly ms: Record<string, number> = {};
  private last: number;

  /** `marks`: performance.now() at the daemon's start of work and after its imports (mount.ts). */
  constructor(marks?: { startup: number; imports: number }) {
    if (marks) {
      this.ms.startup = Math.round(marks.startup);
      this.ms.imports = Math.round(marks.imports - marks.startup);
      this.last = marks.imports;
    } else {
      this.last = performance.now();
    }
  }

  /** Phase `name` ends now. */
  mark(name: string): void {
    const now = performance.now();
    this.ms[name] = Math.round(now - this.last);
    this.last = now;
  }

  /** The phases so far, and `total`: ms since the process started. */
  report(): Record<string, number> {
    return { ...this.ms, total: Math.round(performance.now()) };
  }
}
