/**
 * Continuous protection: a bounded loss window (RPO). While a home is active, every change reaches the
 * store within `intervalMs`, whether or not anyone fsync'd it: a run writes a log segment of everything
 * changed since the last seal (as an fsync does; write-behind has usually stored the blocks already, so
 * the segment carries trees and the tail), and seals instead when a segment cannot hold it. A run starts
 * once the oldest change no segment or seal holds is a third of an interval old, so it lands within the
 * interval; none starts while nothing changed, so a parked home costs no requests. Foreground first: while
 * the foreground is busy (`busy`: FUSE requests flowing, home/foreground.ts) a run waits until that change
 * is two thirds of an interval old, since a run reads and inlines what write-behind has not stored (held
 * back meanwhile) on the thread that serves the requests; a burst shorter than that pays nothing for it.
 *
 * Changes are counted by the journal (`Journal.mutations`); every segment and seal that lands tells
 * `covered` the count it captured from. Under the kernel's writeback cache, written bytes may still sit
 * in the kernel, invisible here: while the mount is active, each run first asks the kernel to write them
 * back (`flushKernel`: only if a file was opened for writing since the last flush, or still is; a mount that
 * is only read spawns no process for it). A backlog older than the interval is logged as a warning, once a minute.
 */
import type { Logger } from 'pino';

export interface ProtectionDeps {
  /** The journal's change count. */
  mutations(): number;
  /** Writes back what the kernel's writeback cache holds (a child process, never this one). */
  flushKernel(): Promise<void>;
  /** Everything changed, into a log segment; false when it needs a seal. */
  segment(): Promise<boolean>;
  seal(): Promise<unknown>;
  /** The foreground is busy (home/foreground.ts): runs wait longer (see the module comment). */
  busy?(): boolean;
  log: Logger;
  now?: () => number;
}

/** What `homefs status` (`protection`) and the metrics report of write-behind and protection. */
export interface ProtectionReport {
  intervalMs: number;
  oldestUnprotectedMs: number;
  backlogFiles: number;
  backlogBytes: number;
  backlogOldestMs: number;
  filesStored: number;
  blocksUploaded: number;
  bytesUploaded: number;
  blocksFound: number;
  runs: number;
  /** `sync -f` runs of the mountpoint (a seal's, or a run's while requests come): only while a file was opened for writing since the last. */
  kernelFlushes: number;
}

/** The warning about an old backlog at most this often. */
const WARN_EVERY_MS = 60_000;

export class Protection {
  private readonly now: () => number;
  /** The change count the last landed segment or seal captured from. */
  private coveredMark: number;
  /** When the oldest change not covered was first seen; null: nothing uncovered. */
  private uncoveredSince: number | null = null;
  private lastSeen: number;
  private lastFlush: number;
  private running: Promise<void> | null = null;
  private lastWarn = 0;
  runs = 0;

  constructor(private readonly deps: ProtectionDeps, readonly intervalMs: number) {
    this.now = deps.now ?? Date.now;
    this.coveredMark = deps.mutations();
    this.lastSeen = this.coveredMark;
    this.lastFlush = this.now();
  }

  /** The change count now: a segment or seal takes it before it captures, and hands it to `covered` once landed. */
  mark(): number {
    return this.deps.mutations();
  }

  /** A segment or seal that captured from change count `mark` (taken at `startedAt`) landed. */
  covered(mark: number, startedAt: number): void {
    if (mark < this.coveredMark) return;
    this.coveredMark = mark;
    // What changed after the mark changed after `startedAt` (the mark was taken then): at most that old.
    this.uncoveredSince = this.deps.mutations() === mark ? null : startedAt;
  }

  /** Age in ms of the oldest change no segment or seal holds (0: none). */
  oldestMs(): number {
    this.observe();
    return this.uncoveredSince === null ? 0 : this.now() - this.uncoveredSince;
  }

  private observe(): void {
    const m = this.deps.mutations();
    if (m !== this.lastSeen) {
      this.lastSeen = m;
      if (this.uncoveredSince === null && m !== this.coveredMark) this.uncoveredSince = this.now();
    }
  }

  /** Called about once a second (so a run starts up to a second late); `active`: FUSE requests came recently (the kernel may hold written bytes). */
  tick(active: boolean): void {
    if (this.intervalMs <= 0) return;
    this.observe();
    const t = this.now();
    const age = this.uncoveredSince === null ? 0 : t - this.uncoveredSince;
    if (age > this.intervalMs && t - this.lastWarn >= WARN_EVERY_MS) {
      this.lastWarn = t;
      this.deps.log.warn({ op: 'protect', oldestMs: age, intervalMs: this.intervalMs }, 'changes older than the protection interval are not in the store yet');
    }
    if (this.running) return;
    // A third of the interval to see what the kernel holds, a third until the run, a third for the run;
    // while the foreground is busy, both wait until two thirds (the tick's second and the run fit in the last).
    const wait = this.deps.busy?.() ? (2 * this.intervalMs) / 3 : this.intervalMs / 3;
    const due = age >= wait;
    const flush = active && t - this.lastFlush >= wait;
    if (!due && !flush) return;
    this.running = this.run(flush).finally(() => {
      this.running = null;
    });
  }

  private async run(flush: boolean): Promise<void> {
    try {
      if (flush) {
        this.lastFlush = this.now();
        await this.deps.flushKernel();
        this.observe();
      }
      if (this.deps.mutations() === this.coveredMark || this.oldestMs() < this.intervalMs / 3) return;
      this.runs++;
      if (!(await this.deps.segment())) await this.deps.seal();
    } catch (e) {
      this.deps.log.debug({ op: 'protect', err: e instanceof Error ? e.message : String(e) }, 'protection run failed; the next tick tries again');
    }
  }

  /** Resolves once the run in flight (if any) has ended. */
  async idle(): Promise<void> {
    await this.running;
  }
}
