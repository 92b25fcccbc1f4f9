/**
 * A token bucket that bounds a byte rate: `take(n)` resolves once n bytes fit the rate. The bucket holds
 * at most one second of tokens, so an idle spell allows a burst of one second's worth; a request larger
 * than that waits until the bucket is full and then runs, leaving it in debt.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;
  private tail: Promise<void> = Promise.resolve();

  constructor(
    readonly bytesPerSecond: number,
    private readonly now: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {
    if (!(bytesPerSecond > 0)) throw new Error(`token bucket: rate must be positive, not ${bytesPerSecond}`);
    this.tokens = bytesPerSecond;
    this.at = now();
  }

  /** Waits (behind earlier takes: first come, first served) until `n` bytes may go. */
  take(n: number): Promise<void> {
    const p = this.tail.then(() => this.wait(n));
    this.tail = p;
    return p;
  }

  private async wait(n: number): Promise<void> {
    for (;;) {
      this.refill();
      const need = Math.min(n, this.bytesPerSecond);
      if (this.tokens >= need) {
        this.tokens -= n;
        return;
      }
      await this.sleep(Math.ceil(((need - this.tokens) / this.bytesPerSecond) * 1000));
    }
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.bytesPerSecond, this.tokens + ((t - this.at) / 1000) * this.bytesPerSecond);
    this.at = t;
  }
}
