/**
 * Local paths of a mounted home: the state directory (journal, upper data, pid lock, daemon log) and the
 * org's block cache. Defaults live under the user's data directory (root: /var/lib/homefs).
 */
import { join, resolve } from 'node:path';
import { dataDir } from '../config.js';

export interface HomePaths {
  stateDir: string;
  journal: string;
  upper: string;
  pidFile: string;
  log: string;
  /** This org's cache root (shared by every home of the org on this host). */
  orgCache: string;
}

export function homePaths(org: string, home: string, stateDir?: string, cacheDir?: string): HomePaths {
  const state = resolve(stateDir ?? join(dataDir(), 'state', org, home));
  const cache = resolve(cacheDir ?? join(dataDir(), 'cache'));
  return {
    stateDir: state,
    journal: join(state, 'journal'),
    upper: join(state, 'upper'),
    pidFile: join(state, 'daemon.pid'),
    log: join(state, 'daemon.log'),
    orgCache: join(cache, org),
  };
}
