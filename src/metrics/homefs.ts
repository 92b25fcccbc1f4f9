/**
 * The metrics of one mounted home, on a prom-client Registry of its own (never prom-client's global
 * one), so that the daemon creates one `HomeMetrics` and passes it to the layers that do the work: FUSE
 * adapter (ops, latency), block cache (hits, misses, evictions, bytes), store (bytes and request latency
 * through `storeMeters()`, retries), sealer (seals, durations) and everyone (errors). Every series carries
 * the `org` and `home` labels, so the files of several homes on one host can be scraped side by side.
 * With `process: true` the registry also holds prom-client's default process and Node.js metrics (CPU,
 * resident memory, open fds, event-loop lag, GC, heap), the names operators' dashboards expect.
 */
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';
import type { StoreMeters } from '../store/metered.js';
import type { ProtectionReport } from '../home/protect.js';
import { OpMeter } from './opmeter.js';

// prom-client's parts, each from its own file: its index also loads the Pushgateway (node:https, so TLS) and
// the cluster aggregator, about 100 ms of a mount's start for nothing used here (docs/decisions/
// 0054-wake-serving-sooner.md). The package has no `exports` map: these paths are its files as published.
const require = createRequire(import.meta.url);
const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;
type Counter<T extends string = string> = Prom.Counter<T>;
type Gauge<T extends string = string> = Prom.Gauge<T>;
type Histogram<T extends string = string> = Prom.Histogram<T>;

/** Latency buckets in seconds: 50 µs (a cached FUSE op) to 60 s (a large seal). */
export const LATENCY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface HomeMetricsOptions {
  org?: string;
  home?: string;
  /** Add prom-client's default process and Node.js metrics (the daemon does; unit tests need not). */
  process?: boolean;
}

/** What continuous protection reports (home/protect.ts `ProtectionReport`; these fields are read). */
export type ProtectionMetrics = Pick<ProtectionReport, 'backlogFiles' | 'backlogBytes' | 'oldestUnprotectedMs' | 'bytesUploaded'>;

export class HomeMetrics {
  readonly registry = new Registry();
  /** FUSE operations by `op` (lookup, read, write, ...) and their latency: plain counts until a scrape (opmeter.ts). */
  readonly ops = new OpMeter(LATENCY_BUCKETS);
  readonly bytesFetched: Counter<'kind'>;
  readonly bytesUploaded: Counter<'kind'>;
  readonly storeSeconds: Histogram<'op'>;
  readonly storeRetries: Counter<'op'>;
  readonly storeRequests: Counter<'op' | 'kind'>;
  readonly cacheHits: Counter<'tier'>;
  readonly cacheMisses: Counter;
  readonly cacheEvictions: Counter;
  readonly cacheBytes: Gauge;
  readonly seals: Counter<'reason' | 'result'>;
  readonly sealSeconds: Histogram<'reason'>;
  readonly errors: Counter<'kind'>;
  readonly dirtyBytes: Gauge;
  readonly nativeReplies: Counter<'op'>;
  readonly served: Counter<'where'>;
  readonly waitEnds: Counter<'why'>;
  private dirtySource: (() => number) | undefined;
  private protectionSource: (() => ProtectionMetrics | undefined) | undefined;
  private nativeSource: (() => Record<string, number>) | undefined;
  private servedSource: (() => Record<string, number>) | undefined;
  private waitEndsSource: (() => Record<string, number>) | undefined;
  private readonly processWanted: boolean;
  private processStarted = false;

  constructor(opts: HomeMetricsOptions = {}) {
    const registers = [this.registry];
    if (opts.org !== undefined && opts.home !== undefined) this.registry.setDefaultLabels({ org: opts.org, home: opts.home });
    this.ops.register(this.registry, { name: 'homefs_fuse_ops_total', help: 'FUSE operations served, by op' }, { name: 'homefs_fuse_op_seconds', help: 'FUSE operation latency in seconds, by op' });
    this.bytesFetched = new Counter({ name: 'homefs_store_fetched_bytes_total', help: 'bytes fetched from the store, by kind (block, meta, other)', labelNames: ['kind'], registers });
    this.bytesUploaded = new Counter({ name: 'homefs_store_uploaded_bytes_total', help: 'bytes uploaded to the store, by kind (block, meta, other)', labelNames: ['kind'], registers });
    this.storeSeconds = new Histogram({ name: 'homefs_store_request_seconds', help: 'store request latency in seconds (retries included), by op', labelNames: ['op'], buckets: LATENCY_BUCKETS, registers });
    this.storeRequests = new Counter({ name: 'homefs_store_requests_total', help: 'store requests since the mount woke, by op and key kind (block, meta, other); retries count once', labelNames: ['op', 'kind'], registers });
    this.storeRetries = new Counter({ name: 'homefs_store_retries_total', help: 'store requests retried after a transient failure, by op', labelNames: ['op'], registers });
    this.cacheHits = new Counter({ name: 'homefs_cache_hits_total', help: 'block cache hits, by tier (memory, disk)', labelNames: ['tier'], registers });
    this.cacheMisses = new Counter({ name: 'homefs_cache_misses_total', help: 'block cache misses (store fetches)', registers });
    this.cacheEvictions = new Counter({ name: 'homefs_cache_evictions_total', help: 'blocks evicted from the disk cache', registers });
    this.cacheBytes = new Gauge({ name: 'homefs_cache_bytes', help: 'bytes in the disk cache', registers });
    this.seals = new Counter({ name: 'homefs_seals_total', help: 'seals by reason (fsync, idle, sync, sleep, absorb; log: a log segment of an fsync, log-tail: one written during a seal) and result (ok, clean, conflict, error)', labelNames: ['reason', 'result'], registers });
    this.sealSeconds = new Histogram({ name: 'homefs_seal_seconds', help: 'seal duration in seconds, by reason', labelNames: ['reason'], buckets: LATENCY_BUCKETS, registers });
    this.errors = new Counter({ name: 'homefs_errors_total', help: 'errors by kind (store, corrupt, fuse, seal)', labelNames: ['kind'], registers });
    const dirty = (): number | undefined => this.dirtySource?.();
    this.dirtyBytes = new Gauge({
      name: 'homefs_dirty_bytes', help: 'size of the files with changes not yet sealed', registers,
      collect() {
        const v = dirty();
        if (v !== undefined) this.set(v);
      },
    });
    /** A counter whose values are read from `source` at scrape time, one per key under `label`. */
    const counted = <L extends string>(name: string, help: string, label: L, source: () => Record<string, number> | undefined): Counter<L> =>
      new Counter({
        name, help, labelNames: [label], registers,
        collect() {
          const v = source();
          if (v === undefined) return;
          this.reset();
          for (const [k, n] of Object.entries(v)) this.inc({ [label]: k } as Partial<Record<L, string>>, n);
        },
      });
    this.nativeReplies = counted('homefs_fuse_native_replies_total', 'FUSE requests the binding answered without entering JS, by op (getxattr, listxattr of inodes known to have no xattrs); not counted in homefs_fuse_ops_total', 'op', () => this.nativeSource?.());
    this.served = counted('homefs_fuse_served_total', 'FUSE requests served by the binding, by where: in the awake wait for the next request (awake), or after a wake-up of the event loop (woken)', 'where', () => this.servedSource?.());
    this.waitEnds = counted('homefs_fuse_awake_wait_ends_total', 'why the awake waits for the next FUSE request ended (loop_due, served_max, no_request, loop_ready, preempted), and turns that skipped theirs after a preemption (skipped)', 'why', () => this.waitEndsSource?.());
    const prot = (): ProtectionMetrics | undefined => this.protectionSource?.();
    const gauge = (name: string, help: string, pick: (p: ProtectionMetrics) => number): void => {
      new Gauge({
        name, help, registers,
        collect() {
          const p = prot();
          if (p) this.set(pick(p));
        },
      });
    };
    gauge('homefs_backlog_files', 'files changed but not yet stored by write-behind', (p) => p.backlogFiles);
    gauge('homefs_backlog_bytes', 'size of the files changed but not yet stored by write-behind', (p) => p.backlogBytes);
    gauge('homefs_unprotected_seconds', 'age of the oldest change no log segment or seal holds (0: none)', (p) => p.oldestUnprotectedMs / 1000);
    new Counter({
      name: 'homefs_writebehind_uploaded_bytes_total', help: 'block bytes write-behind uploaded (its rate is its throughput)', registers,
      collect() {
        const p = prot();
        if (!p) return;
        this.reset();
        this.inc(p.bytesUploaded);
      },
    });
    this.processWanted = opts.process === true;
  }

  /**
   * Registers prom-client's default process and Node.js metrics, if `process` asked for them and they are not
   * yet: the daemon calls it once its mount is live, and a scrape before that does. Loading them (the
   * OpenTelemetry API among them) took ~50 ms, which a mount's start no longer waits for.
   */
  startProcessMetrics(): void {
    if (!this.processWanted || this.processStarted) return;
    this.processStarted = true;
    const collectDefaultMetrics = require('prom-client/lib/defaultMetrics') as typeof Prom.collectDefaultMetrics;
    collectDefaultMetrics({ register: this.registry });
  }

  /** Where the protection series are read from, at scrape time (the home binds its write-behind once mounted). */
  bindProtection(source: () => ProtectionMetrics | undefined): void {
    this.protectionSource = source;
  }

  /** Where `homefs_dirty_bytes` is read from, at scrape time (the home binds its journal once mounted). */
  bindDirtyBytes(source: () => number): void {
    this.dirtySource = source;
  }

  /** Where `homefs_fuse_native_replies_total` is read from, at scrape time (the binding's counters, once mounted). */
  bindNativeReplies(source: () => Record<string, number>): void {
    this.nativeSource = source;
  }

  /** Where `homefs_fuse_served_total` and `homefs_fuse_awake_wait_ends_total` are read from, at scrape time (the binding's counters, once mounted). */
  bindServed(served: () => Record<string, number>, waitEnds?: () => Record<string, number>): void {
    this.servedSource = served;
    this.waitEndsSource = waitEnds;
  }

  /** The meters MeteredStore (store/metered.ts) reports to. */
  storeMeters(): StoreMeters {
    return {
      startRequest: (op, kind) => {
        this.storeRequests.inc({ op, kind });
        return this.storeSeconds.startTimer({ op });
      },
      fetched: (kind, bytes) => this.bytesFetched.inc({ kind }, bytes),
      uploaded: (kind, bytes) => this.bytesUploaded.inc({ kind }, bytes),
      failed: () => this.errors.inc({ kind: 'store' }),
      ended: (op, kind, seconds) => {
        this.storeRequests.inc({ op, kind });
        this.storeSeconds.observe({ op }, seconds);
      },
    };
  }

  /** The whole registry in the Prometheus text format (version 0.0.4). */
  render(): Promise<string> {
    this.startProcessMetrics();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
