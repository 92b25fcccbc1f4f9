/**
 * Time slices for background work on the daemon's event loop: the namespace walk, the hot-set warm-up and
 * the namespace pack each handle thousands of objects at wake. Objects that are already in memory come back
 * as resolved promises, so such work runs as one long chain of microtasks, during which the loop never polls:
 * no FUSE request and no socket read is served until it ends (a profiled move at +20 ms had the agent's `cat`
 * wait ~3 s of walk and warm-up; docs/benchmarks.md, "3. Wake and move over a real store").
 *
 * Background work calls `pause()` between items. Within a slice it resolves at once; once the slice is used
 * up, it resolves after the loop's next turn (setImmediate: after the poll phase, where FUSE requests and
 * socket data are read), and a new slice begins. Each caller that waited resumes in its own callback of that
 * turn and starts a slice there, so N chains of work waiting on one slicer (a pack's ranges cut at once) take
 * up to N slices in one turn. One slice per turn shared by all of them was tried: the agent's first `cat`
 * after a move answered sooner, its `git status` and `grep -r` no sooner (docs/benchmarks.md, "3. Wake and
 * move over a real store"), so the warm-up keeps its pace.
 */
export class TimeSlicer {
  private sliceStart = performance.now();
  /** Turns of the loop given up so far (diagnostics). */
  yields = 0;

  constructor(private readonly sliceMs: number) {}

  /** Resolves at once while the current slice lasts, after the next turn of the event loop otherwise. */
  pause(): Promise<void> {
    if (performance.now() - this.sliceStart < this.sliceMs) return Promise.resolve();
    this.yields++;
    return new Promise((resolve) => {
      setImmediate(() => {
        this.sliceStart = performance.now();
        resolve();
      });
    });
  }
}

/** The slicer of the daemon's background work at wake (walk, warm-up, namespace pack): 4 ms per turn. */
export const backgroundSlicer = new TimeSlicer(4);
