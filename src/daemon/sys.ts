/**
 * The homefs_sys addon (native/src/sys.c): one datagram to a unix socket (sd_notify), stdout/stderr
 * pointed at a reopened log file. Each returns 0 or a negative errno. Loaded on first use.
 */
import { constants } from 'node:os';
import { loadNativeAddon } from '../util/addon.js';

export interface SysAddon {
  notify(socketPath: string, message: string): number;
  redirectStdio(path: string): number;
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
