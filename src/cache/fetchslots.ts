/**
 * Bounds the store GETs the cache has in flight, with foreground fetches (a reader is waiting) ahead of
 * background ones (prefetch). At most `limit` fetches run; background work may take at most `backgroundLimit`
 * of those slots and only when no foreground fetch is queued, so a reader never waits behind a full
 * readahead window for longer than one fetch.
 */
export type Release = () => void;

export class FetchSlots {
  private running = 0;
  private runningBackground = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(
    readonly limit: number,
    readonly backgroundLimit: number,
    /** Called whenever a slot frees up and no foreground fetch is waiting (the prefetcher pumps its queue). */
    private readonly onIdle: () => void = () => undefined,
  ) {
    if (!(limit >= 1) || !(backgroundLimit >= 1) || backgroundLimit > limit) throw new Error(`bad fetch slot limits ${limit}/${backgroundLimit}`);
  }

  /** A foreground slot: resolves as soon as one is free, ahead of any background work. */
  async acquire(): Promise<Release> {
    if (this.running < this.limit) {
      this.running++;
      return this.releaser(false);
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.releaser(false);
  }

  /** A background slot if one is free right now, else undefined (the caller retries on `onIdle`). */
  tryAcquireBackground(): Release | undefined {
    if (this.waiters.length > 0 || this.running >= this.limit || this.runningBackground >= this.backgroundLimit) return undefined;
    this.running++;
    this.runningBackground++;
    return this.releaser(true);
  }

  /** Foreground fetches waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  get inFlight(): number {
    return this.running;
  }

  private releaser(background: boolean): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (background) this.runningBackground--;
      const next = this.waiters.shift();
      if (next) {
        next(); // the slot passes straight to a waiting foreground fetch; `running` is unchanged
      } else {
        this.running--;
        this.onIdle();
      }
    };
  }
}
