/**
 * Group commit: at most one run at a time; every request that arrives while one runs is served by the
 * single next run, which starts when the running one ends. So concurrent requests share one run, and a
 * request is only answered by a run that started after it (and so contains its data). MountedHome keeps
 * two (commits.ts): one for seals, one for the fsync log's segments.
 */
export class Sealer<R> {
  private running: Promise<R> | null = null;
  private next: Promise<R> | null = null;
  private nextReasons: string[] = [];

  constructor(private readonly run: (reason: string) => Promise<R>) {}

  request(reason: string): Promise<R> {
    if (this.next) {
      this.nextReasons.push(reason);
      return this.next;
    }
    if (!this.running) return this.start(reason);
    this.nextReasons.push(reason);
    const after = this.running.then(() => undefined, () => undefined);
    this.next = after.then(() => {
      const reasons = this.nextReasons;
      this.nextReasons = [];
      // A group that holds anything but fsyncs (and background protection) is run for that reason (a seal for
      // an fsync, or for protection, is the fallback).
      const p = this.start(reasons.find((r) => r !== 'fsync' && r !== 'protect') ?? reasons.find((r) => r !== 'fsync') ?? reasons[0] ?? reason);
      this.next = null;
      return p;
    });
    return this.next;
  }

  private start(reason: string): Promise<R> {
    const p = this.run(reason);
    this.running = p;
    const clear = (): void => {
      if (this.running === p) this.running = null;
    };
    p.then(clear, clear);
    return p;
  }

  /** Resolves when no run is running or queued. */
  async idle(): Promise<void> {
    while (this.running || this.next) {
      await (this.next ?? this.running)?.catch(() => undefined);
    }
  }

  /** A request waits for the run after the one running. */
  get queued(): boolean {
    return this.next !== null;
  }

  get busy(): boolean {
    return this.running !== null;
  }
}
