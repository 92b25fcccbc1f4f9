/**
 * The metrics of a homefs daemon, by name, on one Registry. The daemon creates one `HomeMetrics` and
 * hands it to the layers that do the work (FUSE adapter: ops; cache: hits/misses/evictions, bytes
 * fetched; sealer: seals, durations, bytes uploaded; everywhere: errors). `defaultMetrics` is the
 * instance the control socket's `metrics` op renders.
 */
import { Registry, type Counter, type Gauge, type Histogram } from './registry.js';

export class HomeMetrics {
  readonly registry = new Registry();
  /** FUSE operations by `op` (lookup, read, write, ...). */
  readonly ops: Counter = this.registry.counter('homefs_fuse_ops_total', 'FUSE operations served, by op');
  readonly opSeconds: Histogram = this.registry.histogram('homefs_fuse_op_seconds', 'FUSE operation latency in seconds, by op');
  readonly bytesFetched: Counter = this.registry.counter('homefs_store_fetched_bytes_total', 'bytes fetched from the store (blocks and trees)');
  readonly bytesUploaded: Counter = this.registry.counter('homefs_store_uploaded_bytes_total', 'bytes uploaded to the store');
  readonly cacheHits: Counter = this.registry.counter('homefs_cache_hits_total', 'block cache hits, by tier (memory, disk)');
  readonly cacheMisses: Counter = this.registry.counter('homefs_cache_misses_total', 'block cache misses (store fetches)');
  readonly cacheEvictions: Counter = this.registry.counter('homefs_cache_evictions_total', 'blocks evicted from the disk cache');
  readonly cacheBytes: Gauge = this.registry.gauge('homefs_cache_bytes', 'bytes in the disk cache');
  readonly seals: Counter = this.registry.counter('homefs_seals_total', 'seals by reason (fsync, idle, sync, sleep) and result (ok, conflict, error)');
  readonly sealSeconds: Histogram = this.registry.histogram('homefs_seal_seconds', 'seal duration in seconds, by reason');
  readonly errors: Counter = this.registry.counter('homefs_errors_total', 'errors by kind (store, corrupt, fuse, seal)');
  readonly dirtyBytes: Gauge = this.registry.gauge('homefs_dirty_bytes', 'bytes written and not yet sealed');

  constructor() {
    const start = Date.now();
    this.registry.gauge('homefs_uptime_seconds', 'seconds since the daemon started', () => (Date.now() - start) / 1000);
    this.registry.gauge('homefs_resident_memory_bytes', 'resident set size of the daemon', () => process.memoryUsage.rss());
  }

  render(): string {
    return this.registry.render();
  }
}

export const defaultMetrics = new HomeMetrics();
