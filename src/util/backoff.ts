/**
 * Exponential backoff with full jitter, and a retry loop built on it. The store's retrying wrapper
 * (store/retry.ts) and a home's final seal (home/running.ts) both wait this way, so there is one rule for
 * how long homefs waits before trying again.
 */

export interface Backoff {
  baseMs: number;
  maxMs: number;
  /** Injectable for tests; Math.random by default. */
  random?: () => number;
}

/** The wait before retry number `attempt` (0-based): uniformly random in [0, min(maxMs, baseMs * 2^attempt)). */
export function backoffDelay(attempt: number, b: Backoff): number {
  const cap = Math.min(b.maxMs, b.baseMs * 2 ** attempt);
  return Math.floor((b.random ?? Math.random)() * cap);
}

export interface RetryPolicy extends Backoff {
  /** Extra attempts after the first. */
  retries: number;
  /** Whether a failure is worth another attempt; the error is thrown at once otherwise. */
  retryable: (e: unknown) => boolean;
  sleep?: (ms: number) => Promise<void>;
}

/** Runs `fn` until it succeeds, fails with an error `retryable` rejects, or has used its retries. */
export async function retrying<T>(fn: () => Promise<T>, p: RetryPolicy): Promise<T> {
  const sleep = p.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= p.retries || !p.retryable(e)) throw e;
      await sleep(backoffDelay(attempt, p));
    }
  }
}
