/**
 * Per-request FUSE counters and latency histogram, kept in plain arrays on the request path and turned
 * into Prometheus series only at scrape time. prom-client's labelled `inc` and `observe` hash their label
 * object on every call (0.3–0.5 and 0.75–0.83 µs here, `node dist/bench/metrics.js`), which a cold `find`
 * over a full-size home paid hundreds of thousands of times on the daemon's only thread.
 *
 * `OpMeter` is registered on a home's prom-client registry as two metrics of its own: a counter
 * (`homefs_fuse_ops_total`) and a histogram (`homefs_fuse_op_seconds`), in the same text format as
 * prom-client's own.
 */
import type * as Prom from 'prom-client';

interface OpSeries {
  count: number;
  /** Latency observations per bucket (not cumulative); the last is +Inf. */
  buckets: Float64Array;
  observed: number;
  sum: number;
}

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** The shape prom-client's Registry reads from a registered metric. */
interface RegistryMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: 'sum' }>;
}

export class OpMeter {
  private readonly series = new Map<string, OpSeries>();

  constructor(private readonly bounds: readonly number[]) {}

  private of(op: string): OpSeries {
    let s = this.series.get(op);
    if (!s) this.series.set(op, (s = { count: 0, buckets: new Float64Array(this.bounds.length + 1), observed: 0, sum: 0 }));
    return s;
  }

  /** One request of `op` arrived (`n` for several). */
  inc(op: string, n = 1): void {
    this.of(op).count += n;
  }

  /** A request of `op` took `seconds`. */
  observe(op: string, seconds: number): void {
    const s = this.of(op);
    let i = 0;
    while (i < this.bounds.length && seconds > (this.bounds[i] as number)) i++;
    s.buckets[i] = (s.buckets[i] ?? 0) + 1;
    s.observed++;
    s.sum += seconds;
  }

  /** Requests of `op` counted so far. */
  count(op: string): number {
    return this.series.get(op)?.count ?? 0;
  }

  /** Registers the counter and the histogram on `registry` under these names. */
  register(registry: Prom.Registry, counter: { name: string; help: string }, histogram: { name: string; help: string }): void {
    const counterValues = (): MetricValue[] => [...this.series].filter(([, s]) => s.count > 0).map(([op, s]) => ({ value: s.count, labels: { op } }));
    const histogramValues = (): MetricValue[] => {
      const out: MetricValue[] = [];
      for (const [op, s] of this.series) {
        if (s.observed === 0) continue;
        let acc = 0;
        this.bounds.forEach((le, i) => {
          acc += s.buckets[i] as number;
          out.push({ value: acc, labels: { le, op }, metricName: `${histogram.name}_bucket` });
        });
        out.push({ value: s.observed, labels: { le: '+Inf', op }, metricName: `${histogram.name}_bucket` });
        out.push({ value: s.sum, labels: { op }, metricName: `${histogram.name}_sum` });
        out.push({ value: s.observed, labels: { op }, metricName: `${histogram.name}_count` });
      }
      return out;
    };
    const metric = (m: { name: string; help: string }, type: RegistryMetric['type'], values: () => MetricValue[]): RegistryMetric => ({
      ...m, type, aggregator: 'sum',
      get: async () => ({ ...m, type, values: values(), aggregator: 'sum' }),
    });
    registry.registerMetric(metric(counter, 'counter', counterValues) as unknown as Prom.Metric);
    registry.registerMetric(metric(histogram, 'histogram', histogramValues) as unknown as Prom.Metric);
  }
}
