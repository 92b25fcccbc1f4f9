/**
 * The first half of a wake, light enough that the daemon starts it before it imports the rest of homefs
 * (mount.ts): the home's pid lock at once, then, for a read-write mount, the lease (its look, then its
 * write), HEAD's read once the look has shown no live lease of another holder, and the listing of HEAD's log
 * as soon as HEAD's generation is known (base.ts reads it). At +20 ms these are four
 * round trips, which now pass while the daemon's modules load instead of after (docs/decisions/
 * 0060-claim-before-imports.md).
 *
 * The lease's writes bypass the store's probe gate (store/gated.ts): a lease advances nothing, and a wake
 * whose probe fails releases it again. Everything else stays behind the gate, the takeover's HEAD and the
 * log's tombstone included. The claim's requests are metered from the first (`LateMeters`), and counted
 * once the daemon's metrics exist.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { readHead, type HeadRecord } from '../format/heads.js';
import { LateMeters, MeteredStore } from '../store/metered.js';
import { logPrefix } from '../store/keys.js';
import type { ObjectInfo, Store } from '../store/store.js';
import { makeDirsSync } from '../util/mkdirs.js';
import { Lease } from './lease.js';
import { homePaths, type HomePaths } from './paths.js';
import { acquirePidLock } from './pidlock.js';

/** What the claim needs of a mount's configuration (mountconfig.ts MountConfig). */
export interface ClaimConfig {
  org: string;
  home: string;
  mountpoint: string;
  readOnly: boolean;
  takeover: boolean;
  leaseTtlMs: number;
  stateDir?: string;
  cacheDir?: string;
}

export interface Claim {
  paths: HomePaths;
  /** Drops the pid lock. */
  unlock: () => void;
  /** The lease, held (undefined for a read-only mount); rejects with the one-line reason it was refused. */
  lease: Promise<Lease | undefined>;
  /** HEAD, read once the lease's look was clear (undefined until then, and for a read-only mount). */
  headRead(): Promise<HeadRecord | null> | undefined;
  /**
   * The listing of HEAD's log (generation `gen`), started as soon as HEAD's listing named the generation,
   * alongside the read of its record; undefined for any other generation, or once taken (one use).
   */
  takeLogListing(gen: number): Promise<readonly ObjectInfo[]> | undefined;
  /** Meters the claim's requests until `meters.bind` hands them to the daemon's metrics. */
  meters: LateMeters;
}

/** A store whose writes need not wait for the probe (a GatedStore's `ungated`), else the store itself. */
function ungated(store: Store): Store {
  return (store as Store & { ungated?: Store }).ungated ?? store;
}

/**
 * Takes the pid lock (throws its UserError at once: a second mount of the home on this host) and starts the
 * lease's claim on `store` as soon as it opens. Never leaves a rejection unhandled: `lease` is awaited by wake.
 */
export function startClaim(cfg: ClaimConfig, store: Promise<Store>, log: Logger): Claim {
  const paths = homePaths(cfg.org, cfg.home, cfg.stateDir, cfg.cacheDir);
  makeDirsSync(paths.stateDir, 0o700);
  const unlock = acquirePidLock(paths.pidFile, `${cfg.org}/${cfg.home}`);
  const meters = new LateMeters();
  let head: Promise<HeadRecord | null> | undefined;
  let logListing: { gen: number; infos: Promise<readonly ObjectInfo[]> } | undefined;
  const lease = cfg.readOnly ? Promise.resolve(undefined) : store.then(async (opened) => {
    const l = new Lease(new MeteredStore(ungated(opened), meters), cfg.org, cfg.home, leaseToken(paths), cfg.mountpoint, cfg.leaseTtlMs, (by) => {
      log.error({ org: cfg.org, home: cfg.home, by: by.host }, 'lease taken over by another host: this mount can no longer advance HEAD');
    });
    // HEAD is read once the look has shown no live lease of another holder (unless --takeover), alongside the
    // lease's write: a holder's last seal moves HEAD before its lease goes, so a HEAD read after that look sees it.
    await l.acquire(cfg.takeover, () => {
      const metered = new MeteredStore(opened, meters);
      head = readHead(metered, cfg.org, cfg.home, (gen) => {
        const infos = listAll(metered, logPrefix(cfg.org, cfg.home, gen));
        infos.catch(() => undefined); // (awaited by chooseBase, which lists again if it failed)
        logListing = { gen, infos };
      });
      head.catch(() => undefined); // (awaited by chooseBase)
    });
    return l;
  });
  lease.catch(() => undefined); // (awaited by wake)
  const takeLogListing = (gen: number): Promise<readonly ObjectInfo[]> | undefined => {
    const l = logListing;
    if (l?.gen !== gen) return undefined;
    logListing = undefined;
    return l.infos;
  };
  return { paths, unlock, lease, headRead: () => head, takeLogListing, meters };
}

async function listAll(store: Store, prefix: string): Promise<ObjectInfo[]> {
  const out: ObjectInfo[] = [];
  for await (const o of store.list(prefix)) out.push(o);
  return out;
}

/** The lease token identifies this state directory, so a crashed daemon's successor reclaims at once. */
function leaseToken(paths: HomePaths): string {
  const file = `${paths.stateDir}/lease-token`;
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    const token = randomBytes(16).toString('hex');
    writeFileSync(file, token, { mode: 0o600 });
    return token;
  }
}
