/**
 * The homefs_sys addon (native/src/sys.c): one datagram to a unix socket (sd_notify), stdout/stderr
 * pointed at a reopened log file, and glibc's mmap threshold. Each returns 0 or a negative errno. Loaded on
 * first use.
 */
import { constants } from 'node:os';
import { loadNativeAddon } from '../util/addon.js';

export interface SysAddon {
  notify(socketPath: string, message: string): number;
  redirectStdio(path: string): number;
  mmapThreshold(bytes: number): number;
}

let addon: SysAddon | undefined;

export function sys(): SysAddon {
  addon ??= loadNativeAddon('homefs_sys') as SysAddon;
  return addon;
}

/** The name of a negative errno returned by the addon (`-111` → `ECONNREFUSED`). */
export function errnoName(rc: number): string {
  const e = Object.entries(constants.errno).find(([, v]) => v === -rc);
  return e ? e[0] : `errno ${-rc}`;
}

/** Allocations from this size up are mapped on their own, so the pages of a freed block buffer leave the RSS. */
const MMAP_THRESHOLD = 128 * 1024;

/**
 * Fixes glibc's mmap threshold at 128 KiB for this process (called first thing by the CLI). glibc's default
 * threshold slides up to 32 MiB after the first large buffer is freed; from then on the 1–8 MiB buffers
 * of blocks being read, hashed and sent come from the heap arenas, whose freed pages stay resident. A push
 * of the full-size home held 1.36 GB of RSS with a V8 heap of 0.4–0.8 GB (docs/benchmarks.md). Does
 * nothing where the addon is missing (the command then fails on its own terms, or needs no addon).
 */
export function returnLargeFreesToOs(): void {
  try {
    sys().mmapThreshold(MMAP_THRESHOLD);
  } catch {
    /* glibc's default */
  }
}
