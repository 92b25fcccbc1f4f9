/**
 * What a mounted home (home.ts) is given: its configuration (`MountConfig`, from cli/mount.ts) and the
 * daemon's hooks (`HomeHooks`), and the states it goes through (`HomeState`).
 */
import type { HomeMetrics } from '../metrics/homefs.js';
import { CAP_SYS_ADMIN } from '../util/caps.js';

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
  /** FUSE passthrough: 'auto' (where the kernel and CAP_SYS_ADMIN allow, without a quota) or 'off'; absent: 'auto'. */
  fusePassthrough?: 'auto' | 'off';
  excludes: string[];
  /** Continuous protection's interval (home/protect.ts), ms; 0: off; absent: config.ts defaults.protectIntervalMs. */
  protectIntervalMs?: number;
  /** Upload quiet files' blocks in the background (seal/writebehind.ts); absent: on. */
  writeBehind?: boolean;
  /** Uploads in flight for background work while the foreground is busy; absent: config.ts defaults.backgroundWrites. */
  backgroundWrites?: number;
}

/**
 * Whether the mount asks the kernel for FUSE passthrough: 'auto' asks unless the mount is read-only (it
 * writes nothing), has a quota (the daemon must see every write to refuse the one past it), or the daemon
 * lacks CAP_SYS_ADMIN (the kernel registers backing files for that capability only).
 */
export function passthroughWanted(cfg: MountConfig, caps: (cap: number) => boolean | undefined): { ask: boolean; why: string } {
  if (cfg.fusePassthrough === 'off') return { ask: false, why: '--fuse-passthrough off' };
  if (cfg.readOnly) return { ask: false, why: 'a read-only mount' };
  if (cfg.quotaBytes > 0) return { ask: false, why: 'a quota is set (every write goes through the daemon)' };
  if (caps(CAP_SYS_ADMIN) !== true) return { ask: false, why: 'no CAP_SYS_ADMIN' };
  return { ask: true, why: '' };
}

/** What the daemon hands a home besides its config: where it reports, and whom it tells it is securing. */
export interface HomeHooks {
  metrics: HomeMetrics;
  /** Called once when the final seal begins (sleep, SIGTERM, unmount): systemd's STOPPING=1. */
  onSecuring?: () => void;
  /** Where the metrics endpoint listens (--metrics-addr), for `homefs status`. */
  metricsUrl?: string | undefined;
}
