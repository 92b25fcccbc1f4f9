/**
 * `homefs mount <org>/<home> <mountpoint>`: mounts a home. Without --foreground the command starts the
 * daemon in the background and returns only once the mount is live (or fails with one line): bin/homefs
 * does that in bash, without Node (cli/early.ts), and the daemon, started with --foreground, checks the
 * arguments here. With --foreground this process is the daemon: it logs JSON lines (pretty on a TTY)
 * and runs until sleep, SIGTERM/SIGINT or umount, each of which performs the final seal first.
 *
 * This module is loaded by every daemon, so it imports little: the daemon starts opening the store (its
 * create-if-absent probe in flight) and claiming the home (home/claim.ts: the pid lock, the lease, HEAD)
 * before it imports the rest of homefs (the home, the FUSE adapter, the metrics).
 */
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { createLogger, parseLevel } from '../util/log.js';
import { defaultStoreUrl, defaults, excludePatterns, storeDisabled } from '../config.js';
import type { MountConfig, MountedHome } from '../home/home.js';
import type { HomeMetrics } from '../metrics/homefs.js';
import { openStore } from '../store/open.js';
import { homePaths } from '../home/paths.js';
import { startClaim, type Claim } from '../home/claim.js';
import { UsageError, UserError, errorMessage } from '../util/errors.js';
import { parseHomeRef } from '../util/names.js';
import { parseBytes, parseDuration } from '../util/units.js';
import { ExitCode } from '../util/exit-codes.js';
import { makeDirsSync } from '../util/mkdirs.js';
import { parseListenAddr, type ListenAddr } from '../metrics/http.js';
import type { DaemonServices } from '../daemon/services.js';
import { errnoName, sys } from '../daemon/sys.js';
import { mountInBackground, reportToLauncher, startedByLauncher } from './early.js';

interface Options {
  store?: string;
  cacheDir?: string;
  cacheSize?: string;
  stateDir?: string;
  fsync: string;
  readOnly?: boolean;
  allowOther?: boolean;
  takeover?: boolean;
  foreground?: boolean;
  quota?: string;
  idleSeal?: string;
  parkAfter?: string;
  protectInterval?: string;
  maxRecords?: string;
  writeBehind?: boolean;
  backgroundWrites?: string;
  leaseTtl?: string;
  logLevel: string;
  metricsAddr?: string;
  fuseSpinUs?: string;
  fuseIdlePollUs?: string;
  fusePassthrough?: string;
}

function isMountpoint(path: string): boolean {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === path);
  } catch {
    return false;
  }
}

function parseMicros(flag: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 1000) throw new UsageError(`invalid ${flag} '${v}': use 0 to 1000 (microseconds)`);
  return n;
}

function parseCount(flag: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 1e9) throw new UsageError(`invalid ${flag} '${v}': use a whole number (0: no limit)`);
  return n;
}

function parseBackgroundWrites(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 64) throw new UsageError(`invalid --background-writes '${v}': use 0 to 64 (uploads in flight while requests flow)`);
  return n;
}

function buildConfig(ref: string, mnt: string, o: Options): MountConfig {
  const { org, home } = parseHomeRef(ref, false);
  if (o.fsync !== 'store' && o.fsync !== 'local') throw new UsageError(`invalid --fsync '${o.fsync}': use store or local`);
  parseLevel(o.logLevel); // refused here, before the daemon starts and could only say so in daemon.log
  const mountpoint = resolve(mnt);
  return {
    org, home, mountpoint, storeUrl: o.store ?? defaultStoreUrl(),
    ...(o.stateDir ? { stateDir: resolve(o.stateDir) } : {}),
    ...(o.cacheDir ? { cacheDir: resolve(o.cacheDir) } : {}),
    cacheBytes: o.cacheSize ? parseBytes('--cache-size', o.cacheSize) : defaults.cacheSizeBytes,
    fsync: o.fsync, readOnly: !!o.readOnly, allowOther: !!o.allowOther, takeover: !!o.takeover,
    quotaBytes: o.quota ? parseBytes('--quota', o.quota) : 0,
    idleSealMs: o.idleSeal ? parseDuration('--idle-seal', o.idleSeal) : defaults.idleSealIntervalMs,
    parkAfterMs: o.parkAfter ? parseDuration('--park-after', o.parkAfter) : defaults.parkAfterMs,
    protectIntervalMs: o.protectInterval !== undefined ? parseDuration('--protect-interval', o.protectInterval) : defaults.protectIntervalMs,
    maxRecords: o.maxRecords !== undefined ? parseCount('--max-records', o.maxRecords) : defaults.maxRecords,
    writeBehind: o.writeBehind !== false,
    backgroundWrites: o.backgroundWrites !== undefined ? parseBackgroundWrites(o.backgroundWrites) : defaults.backgroundWrites,
    leaseTtlMs: o.leaseTtl ? parseDuration('--lease-ttl', o.leaseTtl) : defaults.leaseTtlMs,
    fuseSpinUs: o.fuseSpinUs !== undefined ? parseMicros('--fuse-spin-us', o.fuseSpinUs) : defaults.fuseSpinUs,
    fuseIdlePollUs: o.fuseIdlePollUs !== undefined ? parseMicros('--fuse-idle-poll-us', o.fuseIdlePollUs) : defaults.fuseIdlePollUs,
    fusePassthrough: parsePassthrough(o.fusePassthrough ?? 'auto'),
    excludes: excludePatterns(),
  };
}

function parsePassthrough(v: string): 'auto' | 'off' {
  if (v === 'auto' || v === 'off') return v;
  throw new UsageError(`invalid --fuse-passthrough '${v}': use auto or off`);
}

function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function checkMountpoint(mountpoint: string, cfg: MountConfig): void {
  const paths = homePaths(cfg.org, cfg.home, cfg.stateDir, cfg.cacheDir);
  for (const [what, dir] of [['state directory', paths.stateDir], ['cache directory', paths.orgCache]] as const) {
    if (inside(dir, mountpoint)) throw new UserError(`the ${what} ${dir} lies inside the mountpoint ${mountpoint}; put it elsewhere (the daemon cannot keep its own data in the home it serves)`);
  }
  if (cfg.storeUrl.startsWith('file://') && inside(cfg.storeUrl.slice('file://'.length), mountpoint)) {
    throw new UserError(`the store ${cfg.storeUrl} lies inside the mountpoint ${mountpoint}; put it elsewhere`);
  }
  let st;
  try {
    st = statSync(mountpoint);
  } catch {
    throw new UserError(`mountpoint ${mountpoint} does not exist; create it first (mkdir -p ${mountpoint})`);
  }
  if (!st.isDirectory()) throw new UserError(`mountpoint ${mountpoint} is not a directory`);
  if (isMountpoint(mountpoint)) throw new UserError(`${mountpoint} is already a mountpoint; unmount it first (homefs sleep ${mountpoint})`);
}

/** The daemon's heaviest imports, loaded one part at a time (the home module then finds them loaded). */
const IMPORT_PARTS: ReadonlyArray<() => Promise<unknown>> = [
  () => import('lmdb'),
  () => import('../metrics/homefs.js'),
  () => import('../inodes/journal.js'),
  () => import('../cache/blockcache.js'),
  () => import('../fs/adapter.js'),
  () => import('../fuse/index.js'),
  () => import('../home/home.js'),
  () => import('../daemon/services.js'),
];

/**
 * A daemon started by `homefs mount` (bin/homefs, cli/early.ts), its arguments checked: makes the state
 * directory, tells the command where the log is, and points stdout and stderr (the command's until now) at it.
 */
function takeLogFile(cfg: MountConfig): void {
  const paths = homePaths(cfg.org, cfg.home, cfg.stateDir, cfg.cacheDir);
  makeDirsSync(paths.stateDir, 0o700);
  reportToLauncher(`log ${paths.log}`, false);
  const rc = sys().redirectStdio(paths.log);
  if (rc < 0) throw new UserError(`cannot open the daemon's log ${paths.log}: ${errnoName(rc)}`);
}

async function runDaemon(cfg: MountConfig, level: string, metricsAddr: ListenAddr | undefined): Promise<void> {
  const startedAt = performance.now(); // since the process started: Node's own start and this module's imports
  const log = createLogger({ level, base: { org: cfg.org, home: cfg.home }, stream: process.stdout });
  // Every retry is logged from the store's very first request (the probe's), and counted once the metrics
  // exist (they are created after the imports below, before anything can scrape them).
  let metrics: HomeMetrics | undefined;
  const early: string[] = [];
  const onRetry = (op: string, attempt: number, delayMs: number, err: unknown): void => {
    if (metrics) metrics.storeRetries.inc({ op });
    else early.push(op);
    log.warn({ op: 'store', request: op, attempt, delayMs, err: errorMessage(err) }, 'store request failed, retrying');
  };
  // The store opens while the rest of homefs loads: its probe runs alongside, and its writes wait for it.
  const opening = openStore(cfg.storeUrl, { write: !cfg.readOnly, create: !cfg.readOnly, overlapProbe: true, onRetry });
  opening.catch(() => undefined); // (awaited by wake)
  let home: MountedHome;
  let services: DaemonServices | undefined;
  let claim: Claim | undefined;
  let handedOver = false; // wake closes the store (and gives back the claim) from then on, whatever happens
  try {
    // The pid lock, the lease and HEAD's read go ahead while the rest of homefs loads.
    claim = startClaim(cfg, opening, log);
    // The store's own modules first, so that the claim's first requests are out before the rest loads. The
    // rest loads a part at a time, with a turn of the event loop after each: evaluating modules holds the
    // loop, and the claim's round trips (their connects and answers) advance only between the parts.
    await opening.catch(() => undefined);
    for (const part of IMPORT_PARTS) {
      await part();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const [{ mount, nativeReplies, servedStats, waitEnds }, { MountedHome }, homefsMetrics, { DaemonServices }] = await Promise.all([
      import('../fuse/index.js'), import('../home/home.js'), import('../metrics/homefs.js'), import('../daemon/services.js'),
    ]);
    const importedAt = performance.now();
    metrics = new homefsMetrics.HomeMetrics({ org: cfg.org, home: cfg.home, process: true });
    metrics.bindNativeReplies(() => ({ ...nativeReplies() })); // one home per daemon: the process's counts are the home's
    metrics.bindServed(() => ({ ...servedStats() }), () => waitEnds());
    for (const op of early.splice(0)) metrics.storeRetries.inc({ op });
    const logPath = homePaths(cfg.org, cfg.home, cfg.stateDir, cfg.cacheDir).log;
    services = await DaemonServices.start({ metrics, log, logPath, metricsAddr, what: `${cfg.org}/${cfg.home} at ${cfg.mountpoint}` });
    handedOver = true;
    home = await MountedHome.wake(cfg, log, mount as never, services.hooks(), { store: opening, claim, marks: { startup: startedAt, imports: importedAt } });
    services.attach(home);
  } catch (e) {
    services?.close();
    if (!handedOver) {
      await claim?.lease.then((l) => l?.release(), () => undefined).catch(() => undefined);
      claim?.unlock();
      await opening.then((s) => s.close(), () => undefined);
    }
    // wake gave back what it took (lease, journal, cache); the process must not linger either way.
    const exitCode = e instanceof UserError ? e.exitCode : ExitCode.internal;
    log.error({ err: errorMessage(e), ...(exitCode === ExitCode.internal ? { stack: (e as Error)?.stack } : {}) }, 'mount failed');
    if (startedByLauncher()) {
      const logPath = homePaths(cfg.org, cfg.home, cfg.stateDir, cfg.cacheDir).log;
      const line = exitCode === ExitCode.internal ? `internal error in the daemon: ${errorMessage(e)} (stack trace in ${logPath})` : errorMessage(e);
      reportToLauncher(`error ${exitCode} homefs: ${line}`, true);
      process.exit(exitCode);
    }
    setTimeout(() => process.exit(exitCode), 2000).unref(); // foreground: main prints the error, then exits
    throw e;
  }
  // The home is asleep for good (signal, `homefs sleep`, unmount from outside): leave the last control
  // reply a moment to reach its client, then end the daemon with the home's status.
  void home.finished.then((code) => setTimeout(() => process.exit(code), 50));
  const stop = (sig: string): void => {
    home.sleep(sig).catch(() => undefined);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => undefined);
  reportToLauncher(`ready mounted ${cfg.org}/${cfg.home} at ${cfg.mountpoint}`, true);
  metrics.startProcessMetrics(); // (not on the mount's way: metrics/homefs.ts)
}

export function register(program: Command): void {
  program
    .command('mount')
    .description('mount <org>/<home> at <mountpoint> (returns once the mount is live; the daemon keeps running)')
    .argument('<home>', '<org>/<home>')
    .argument('<mountpoint>', 'an existing empty directory')
    .option('--store <url>', 'store URL (default: $HOMEFS_STORE, else the local data directory)')
    .option('--cache-dir <dir>', 'block cache directory, shared by all homes of an org on this host')
    .option('--cache-size <bytes>', 'block cache size cap, e.g. 10G', undefined)
    .option('--state-dir <dir>', 'journal and local data of this home')
    .option('--fsync <mode>', 'store: fsync returns once sealed in the store; local: once durable on this host', 'store')
    .option('--read-only', 'mount read-only (no lease, no seals)')
    .option('--allow-other', 'let other users access the mount (kernel enforces permissions)')
    .option('--takeover', 'claim the home even if another host holds a live lease, fencing that host')
    .option('--quota <bytes>', 'capacity of the home: writes past it fail with ENOSPC; df shows it')
    .option('--idle-seal <duration>', 'seal a parked home at most this often', '5m')
    .option('--park-after <duration>', 'idle time after which the home is parked', '10s')
    .option('--protect-interval <duration>', 'while active, every change reaches the store within this long, fsync\'d or not (0: off)', '10s')
    .option('--max-records <n>', 'entries of the home kept in memory at most: beyond, unchanged directories are unloaded and read from their trees again when a request needs them (0: no limit)', String(defaults.maxRecords))
    .option('--no-write-behind', 'do not upload quiet changed files in the background (fsync and sleep then upload everything)')
    .option('--background-writes <n>', 'uploads that write-behind and background seals keep in flight while users\' requests flow (0: none until they pause)', String(defaults.backgroundWrites))
    .option('--lease-ttl <duration>', 'lease lifetime without renewal', '30s')
    .option('--fuse-spin-us <n>', 'after answering FUSE requests, wait this long awake for the next before sleeping (0: never)', String(defaults.fuseSpinUs))
    .option('--fuse-passthrough <mode>', 'auto: files whose bytes are local open through FUSE passthrough where the kernel and privileges allow (no writeback cache then); off: the writeback cache, every read and write through the daemon', 'auto')
    .option('--fuse-idle-poll-us <n>', 'while FUSE requests came in the last N µs, keep the other CPUs from halting (idle-priority threads; 0: never)', String(defaults.fuseIdlePollUs))
    .option('--log-level <level>', 'daemon log level (trace, debug, info, warn, error)', 'info')
    .option('--metrics-addr <[host:]port>', 'serve Prometheus /metrics and /healthz over HTTP (host default: 127.0.0.1)')
    .option('--foreground', 'run the daemon in this process')
    .action(async (ref: string, mnt: string, o: Options) => {
      if (storeDisabled()) {
        makeDirsSync(resolve(mnt), 0o755);
        process.stdout.write(`HOMEFS_STORE=false: ${resolve(mnt)} is a plain directory; nothing mounted, nothing sealed\n`);
        return;
      }
      const cfg = buildConfig(ref, mnt, o);
      checkMountpoint(cfg.mountpoint, cfg);
      const metricsAddr = o.metricsAddr !== undefined ? parseListenAddr('--metrics-addr', o.metricsAddr) : undefined;
      if (o.foreground) {
        if (startedByLauncher()) takeLogFile(cfg);
        return runDaemon(cfg, o.logLevel, metricsAddr);
      }
      // (bin/homefs, run as a program, starts a background mount's daemon without Node: cli/early.ts)
      process.exitCode = await mountInBackground(process.argv.slice(2).filter((a) => a !== '--foreground'));
    });
}
