/**
 * Metrics of a daemon in the Prometheus text exposition format (version 0.0.4): counters, gauges and
 * histograms with labels, updated in place by the layers that do the work and rendered on demand
 * (`homefs status <mnt> --metrics`, control op `metrics`). No dependency and no timers: an update is a
 * Map lookup and an addition, cheap enough for the FUSE path.
 */
export type Labels = Record<string, string>;

function labelKey(labels: Labels | undefined): string {
  if (!labels) return '';
  const keys = Object.keys(labels).sort();
  return keys.map((k) => `${k}="${String(labels[k]).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`).join(',');
}

function series(name: string, key: string, extra = ''): string {
  const all = [key, extra].filter((s) => s.length > 0).join(',');
  return all ? `${name}{${all}}` : name;
}

function num(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(12)));
}

abstract class Metric {
  constructor(readonly name: string, readonly help: string, readonly type: 'counter' | 'gauge' | 'histogram') {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`bad metric name ${name}`);
  }
  abstract lines(): string[];
  render(): string {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, ...this.lines()].join('\n') + '\n';
  }
}

export class Counter extends Metric {
  private readonly values = new Map<string, number>();
  constructor(name: string, help: string) {
    super(name, help, 'counter');
  }
  inc(labels?: Labels, by = 1): void {
    if (by < 0) throw new Error(`counter ${this.name} cannot decrease`);
    const k = labelKey(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels?: Labels): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }
  lines(): string[] {
    return [...this.values].map(([k, v]) => `${series(this.name, k)} ${num(v)}`);
  }
}

export class Gauge extends Metric {
  private readonly values = new Map<string, number>();
  constructor(name: string, help: string, private readonly collect?: () => number) {
    super(name, help, 'gauge');
  }
  set(v: number, labels?: Labels): void {
    this.values.set(labelKey(labels), v);
  }
  lines(): string[] {
    if (this.collect) this.values.set('', this.collect());
    return [...this.values].map(([k, v]) => `${series(this.name, k)} ${num(v)}`);
  }
}

/** Latency buckets in seconds: 50 µs (a cached FUSE op) to 60 s (a large seal). */
export const LATENCY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class Histogram extends Metric {
  private readonly values = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(name: string, help: string, readonly buckets: readonly number[] = LATENCY_BUCKETS) {
    super(name, help, 'histogram');
  }
  observe(v: number, labels?: Labels): void {
    const k = labelKey(labels);
    let s = this.values.get(k);
    if (!s) {
      s = { counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 };
      this.values.set(k, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (v <= (this.buckets[i] as number)) s.counts[i] = (s.counts[i] ?? 0) + 1;
    s.sum += v;
    s.count++;
  }
  /** Starts a timer; the returned function observes the elapsed seconds. */
  startTimer(labels?: Labels): () => number {
    const t0 = process.hrtime.bigint();
    return () => {
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      this.observe(s, labels);
      return s;
    };
  }
  lines(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.values) {
      this.buckets.forEach((b, i) => out.push(`${series(`${this.name}_bucket`, k, `le="${num(b)}"`)} ${s.counts[i] ?? 0}`));
      out.push(`${series(`${this.name}_bucket`, k, 'le="+Inf"')} ${s.count}`);
      out.push(`${series(`${this.name}_sum`, k)} ${num(s.sum)}`);
      out.push(`${series(`${this.name}_count`, k)} ${s.count}`);
    }
    return out;
  }
}

export class Registry {
  private readonly metrics = new Map<string, Metric>();

  private add<M extends Metric>(m: M): M {
    const existing = this.metrics.get(m.name);
    if (existing) {
      if (existing.type !== m.type) throw new Error(`metric ${m.name} already registered as a ${existing.type}`);
      return existing as M;
    }
    this.metrics.set(m.name, m);
    return m;
  }
  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }
  gauge(name: string, help: string, collect?: () => number): Gauge {
    return this.add(new Gauge(name, help, collect));
  }
  histogram(name: string, help: string, buckets?: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, buckets));
  }
  /** The whole registry in the Prometheus text format. */
  render(): string {
    return [...this.metrics.values()].map((m) => m.render()).join('');
  }
}
