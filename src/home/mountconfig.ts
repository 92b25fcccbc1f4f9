/**
 * What a mounted home (home.ts) is given: its configuration (`MountConfig`, from cli/mount.ts) and the
 * daemon's hooks (`HomeHooks`), and the states it goes through (`HomeState`).
 */
import type { HomeMetrics } from '../metrics/homefs.js';
import { statfsSync } from 'node:fs';
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
  /** Inode records kept in memory at most (inodes/trim.ts); 0: no limit; absent: config.ts defaults.maxRecords. */
  maxRecords?: number;
  /** Upload quiet files' blocks in the background (seal/writebehind.ts); absent: on. */
  writeBehind?: boolean;
  /** Uploads in flight for background work while the foreground is busy; absent: config.ts defaults.backgroundWrites. */
  backgroundWrites?: number;
}

/** Filesystems that stack on others (overlayfs, FUSE, eCryptfs): a backing file there is refused at depth 1. */
const STACKED_FS = new Set([0x794c7630, 0x65735546, 0xf15f]);

/**
 * Whether the mount asks the kernel for FUSE passthrough: 'auto' asks unless the mount is read-only (it
 * writes nothing), has a quota (the daemon must see every write to refuse the one past it), the daemon
 * lacks CAP_SYS_ADMIN (the kernel registers backing files for that capability only), or the upper files
 * are on a stacked filesystem such as a container's overlayfs (the kernel would refuse them as backing
 * files, and the mount would have neither passthrough nor the writeback cache).
 */
export function passthroughWanted(
  cfg: Pick<MountConfig, 'fusePassthrough' | 'readOnly' | 'quotaBytes'>, caps: (cap: number) => boolean | undefined, upperDir: string,
  fsType: (dir: string) => number = (dir) => statfsSync(dir).type,
): { ask: boolean; why: string } {
  if (cfg.fusePassthrough === 'off') return { ask: false, why: '--fuse-passthrough off' };
  if (cfg.readOnly) return { ask: false, why: 'a read-only mount' };
  if (cfg.quotaBytes > 0) return { ask: false, why: 'a quota is set (every write goes through the daemon)' };
  if (caps(CAP_SYS_ADMIN) !== true) return { ask: false, why: 'no CAP_SYS_ADMIN' };
  let type = 0;
  try {
    type = fsType(upperDir);
  } catch {
    return { ask: false, why: 'the state directory\'s filesystem is unknown' };
  }
  if (STACKED_FS.has(type)) return { ask: false, why: `the state directory is on a stacked filesystem (0x${type.toString(16)})` };
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
