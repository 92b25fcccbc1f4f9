/**
 * Time slices for background work on the daemon's event loop: the namespace walk, the hot-set warm-up and
 * the namespace pack each handle thousands of objects at wake. Objects that are already in memory come back
 * as resolved promises, so such work runs as one long chain of microtasks, during which the loop never polls:
 * no FUSE request and no socket read is served until it ends (a profiled move at +20 ms had the agent's `cat`
 * wait ~3 s of walk and warm-up; docs/benchmarks.md, "3. Wake and move over a real store").
 *
 * Background work calls `pause()` between items. Within a slice it resolves at once; once the slice is used
 * up, it resolves after the loop's next turn (setImmediate: after the poll phase, where FUSE requests and
 * socket data are read), and a new slice begins. The slice is shared by every caller of one slicer: the
 * callers waiting for a turn are released together by one callback that starts one slice for all of them,
 * so all background work together gets about one slice per turn of the loop. (A callback per caller gave
 * each its own slice, one after the other in the same turn: sixteen ranges of a pack cut at once held the
 * loop for 30-45 ms at a time.)
 */
export class TimeSlicer {
  private sliceStart: number;
  private waiting: Array<() => void> = [];
  private turnQueued = false;
  /** Turns of the loop given up so far (diagnostics). */
  yields = 0;

  /** `now`: the clock in ms (tests). */
  constructor(private readonly sliceMs: number, private readonly now: () => number = () => performance.now()) {
    this.sliceStart = now();
  }

  /** Resolves at once while the current slice lasts, after the next turn of the event loop otherwise. */
  pause(): Promise<void> {
    if (this.now() - this.sliceStart < this.sliceMs) return Promise.resolve();
    this.yields++;
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (this.turnQueued) return;
      this.turnQueued = true;
      setImmediate(() => {
        this.turnQueued = false;
        this.sliceStart = this.now();
        const released = this.waiting;
        this.waiting = [];
        for (const r of released) r();
      });
    });
  }
}

/** The slicer of the daemon's background work at wake (walk, warm-up, namespace pack): 4 ms per turn. */
export const backgroundSlicer = new TimeSlicer(4);
