/**
 * Samples and their summaries. Every measurement is repeated over rounds that alternate the systems under
 * test (A B A B …), so drift in the machine (page cache, CPU frequency, a neighbour) spreads over all of
 * them; a cell reports the median with the min–max range of its samples.
 */

export interface Summary {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function summarize(xs: number[]): Summary {
  if (xs.length === 0) return { median: NaN, min: NaN, max: NaN, n: 0 };
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return { median, min: s[0] as number, max: s[s.length - 1] as number, n: s.length };
}

/** The smallest finite value (NaN if none): the best peer that ran. */
export function minFinite(...xs: number[]): number {
  const f = xs.filter(Number.isFinite);
  return f.length ? Math.min(...f) : NaN;
}

/** Samples keyed by system ("peer") and metric. */
export class Samples {
  private readonly data = new Map<string, Map<string, number[]>>();
  /** Why a peer could not run, shown in its cells instead of numbers. */
  readonly failed = new Map<string, string>();

  add(peer: string, metric: string, value: number): void {
    let m = this.data.get(peer);
    if (!m) this.data.set(peer, (m = new Map()));
    let xs = m.get(metric);
    if (!xs) m.set(metric, (xs = []));
    xs.push(value);
  }

  get(peer: string, metric: string): Summary {
    return summarize(this.data.get(peer)?.get(metric) ?? []);
  }

  median(peer: string, metric: string): number {
    return this.get(peer, metric).median;
  }

  fail(peer: string, why: string): void {
    if (!this.failed.has(peer)) this.failed.set(peer, why.replaceAll('\n', ' ').replaceAll('|', '/').slice(0, 90));
  }
}

/**
 * Runs `rounds` rounds; in each, every peer's body runs once, in the same order each round (A B A B).
 * A peer whose body throws is marked failed with the reason and skipped in later rounds.
 */
export async function alternate(
  rounds: number,
  peers: string[],
  samples: Samples,
  body: (peer: string, round: number) => Promise<void>,
  log: (msg: string) => void,
): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    for (const peer of peers) {
      if (samples.failed.has(peer)) continue;
      log(`  round ${r + 1}/${rounds} ${peer}`);
      try {
        await body(peer, r);
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        log(`  ${peer} failed: ${why}`);
        samples.fail(peer, why);
      }
    }
  }
}
