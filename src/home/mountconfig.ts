/**
 * What a mounted home (home.ts) is given: its configuration (`MountConfig`, from cli/mount.ts) and the
 * daemon's hooks (`HomeHooks`), and the states it goes through (`HomeState`).
 */
import type { HomeMetrics } from '../metrics/homefs.js';

export type HomeState = 'waking' | 'active' | 'parked' | 'securing' | 'asleep';

export interface MountConfig {
  org: string;
  home: string;
  mountpoint: string;
  storeUrl: string;
  stateDir?: string;
  cacheDir?: string;
  cacheBytes: number;
  fsync: 'store' | 'local';
  readOnly: boolean;
  allowOther: boolean;
  takeover: boolean;
  quotaBytes: number;
  idleSealMs: number;
  parkAfterMs: number;
  leaseTtlMs: number;
  /** The FUSE loop's awake wait for the next request, µs (config.ts defaults.fuseSpinUs); absent: that default. */
  fuseSpinUs?: number;
  /** The idle pollers' window, µs (config.ts defaults.fuseIdlePollUs); absent: that default. */
  fuseIdlePollUs?: number;
  excludes: string[];
  /** Continuous protection's interval (home/protect.ts), ms; 0: off; absent: config.ts defaults.protectIntervalMs. */
  protectIntervalMs?: number;
  /** Upload quiet files' blocks in the background (seal/writebehind.ts); absent: on. */
  writeBehind?: boolean;
  /** Uploads in flight for background work while the foreground is busy; absent: config.ts defaults.backgroundWrites. */
  backgroundWrites?: number;
}

/** What the daemon hands a home besides its config: where it reports, and whom it tells it is securing. */
export interface HomeHooks {
  metrics: HomeMetrics;
  /** Called once when the final seal begins (sleep, SIGTERM, unmount): systemd's STOPPING=1. */
  onSecuring?: () => void;
  /** Where the metrics endpoint listens (--metrics-addr), for `homefs status`. */
  metricsUrl?: string | undefined;
}
