/**
 * Group commit for seals: at most one seal runs at a time; every request that arrives while one runs is
 * served by the single next seal, which starts when the running one ends. So concurrent fsyncs share one
 * seal, and a request is only answered by a seal that started after it (and so contains its data).
 */
export class Sealer<R> {
  private running: Promise<R> | null = null;
  private next: Promise<R> | null = null;
  private nextReasons: string[] = [];

  constructor(private readonly run: (reason: string) => Promise<R>) {}

  request(reason: string): Promise<R> {
    // A seal asked for while only fsyncs are queued runs after them: they keep their one-round-trip segment.
    if (this.next && reason !== 'fsync' && !this.nextReasons.some((r) => r !== 'fsync')) {
      const again = (): Promise<R> => this.request(reason);
      return this.next.then(again, again);
    }
    if (this.next) {
      this.nextReasons.push(reason);
      return this.next;
    }
    if (!this.running) return this.start(reason);
    this.nextReasons.push(reason);
    {
      const after = this.running.then(() => undefined, () => undefined);
      this.next = after.then(() => {
        const reasons = this.nextReasons;
        this.nextReasons = [];
        // A group that holds anything but fsyncs is run for that reason (a log segment serves fsyncs only).
        const p = this.start(reasons.find((r) => r !== 'fsync') ?? reasons[0] ?? reason);
        this.next = null;
        return p;
      });
    }
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

  /** Resolves when no seal is running or queued. */
  async idle(): Promise<void> {
    while (this.running || this.next) {
      await (this.next ?? this.running)?.catch(() => undefined);
    }
  }

  /** A run for another reason than fsync is queued behind the running one. */
  get sealQueued(): boolean {
    return this.next !== null && this.nextReasons.some((r) => r !== 'fsync');
  }

  /** Resolves once the running run (if any) has ended and the queued one (if any) has started. */
  async runningSettled(): Promise<void> {
    await this.running?.catch(() => undefined);
    await new Promise<void>((r) => setImmediate(r));
  }

  get busy(): boolean {
    return this.running !== null;
  }
}
