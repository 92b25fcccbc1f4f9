/**
 * `homefs mount <org>/<home> <mountpoint>`: mounts a home. Without --foreground the command starts the
 * daemon in the background and returns only once the mount is live (or fails with one line). With
 * --foreground this process is the daemon: it logs JSON lines (pretty on a TTY) and runs until sleep,
 * SIGTERM/SIGINT or umount, each of which performs the final seal first.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, statSync, closeSync, readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { createLogger } from '../util/log.js';
import { defaultStoreUrl, defaults, excludePatterns, storeDisabled } from '../config.js';
import { MountedHome, type MountConfig } from '../home/home.js';
import { homePaths } from '../home/paths.js';
import { UserError, errorMessage } from '../util/errors.js';
import { parseHomeRef } from '../util/names.js';
import { parseBytes, parseDuration } from '../util/units.js';
import { HomeMetrics } from '../metrics/homefs.js';
import { parseListenAddr, type ListenAddr } from '../metrics/http.js';
import { DaemonServices } from '../daemon/services.js';

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
  leaseTtl?: string;
  logLevel: string;
  metricsAddr?: string;
}

function isMountpoint(path: string): boolean {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === path);
  } catch {
    return false;
  }
}

function buildConfig(ref: string, mnt: string, o: Options): MountConfig {
  const { org, home } = parseHomeRef(ref, false);
  if (o.fsync !== 'store' && o.fsync !== 'local') throw new UserError(`invalid --fsync '${o.fsync}': use store or local`);
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
    leaseTtlMs: o.leaseTtl ? parseDuration('--lease-ttl', o.leaseTtl) : defaults.leaseTtlMs,
    excludes: excludePatterns(),
  };
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

async function runDaemon(cfg: MountConfig, level: string, metricsAddr: ListenAddr | undefined): Promise<void> {
  const log = createLogger({ level, base: { org: cfg.org, home: cfg.home }, stream: process.stdout });
  const { mount } = await import('../fuse/index.js');
  let home: MountedHome;
  let services: DaemonServices | undefined;
  try {
    const metrics = new HomeMetrics({ org: cfg.org, home: cfg.home, process: true });
    const logPath = homePaths(cfg.org, cfg.home, cfg.stateDir, cfg.cacheDir).log;
    services = await DaemonServices.start({ metrics, log, logPath, metricsAddr, what: `${cfg.org}/${cfg.home} at ${cfg.mountpoint}` });
    home = await MountedHome.wake(cfg, log, mount as never, services.hooks());
    services.attach(home);
  } catch (e) {
    services?.close();
    if (process.send) {
      process.send({ error: errorMessage(e) });
      process.disconnect?.();
      process.exitCode = 1;
      return;
    }
    throw e;
  }
  const stop = (sig: string): void => {
    home.sleep(sig).then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => undefined);
  if (process.send) {
    process.send({ ready: true });
    process.disconnect?.();
  }
}

async function startBackground(cfg: MountConfig, argv: string[]): Promise<void> {
  const paths = homePaths(cfg.org, cfg.home, cfg.stateDir, cfg.cacheDir);
  mkdirSync(paths.stateDir, { recursive: true, mode: 0o700 });
  const logFd = openSync(paths.log, 'a', 0o600);
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1] ?? '', ...argv, '--foreground'], {
    detached: true, stdio: ['ignore', logFd, logFd, 'ipc'],
  });
  closeSync(logFd);
  await new Promise<void>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new UserError(`the homefs daemon did not come up within 120s; see ${paths.log}`)), 120_000);
    child.on('message', (m: { ready?: boolean; error?: string }) => {
      clearTimeout(timer);
      if (m.ready) resolvePromise();
      else reject(new UserError(m.error ?? 'mount failed'));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new UserError(`the homefs daemon exited (code ${code}) before the mount was live; see ${paths.log}`));
    });
  });
  child.disconnect?.();
  child.unref();
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
    .option('--lease-ttl <duration>', 'lease lifetime without renewal', '30s')
    .option('--log-level <level>', 'daemon log level (trace, debug, info, warn, error)', 'info')
    .option('--metrics-addr <[host:]port>', 'serve Prometheus /metrics and /healthz over HTTP (host default: 127.0.0.1)')
    .option('--foreground', 'run the daemon in this process')
    .action(async (ref: string, mnt: string, o: Options) => {
      if (storeDisabled()) {
        mkdirSync(resolve(mnt), { recursive: true });
        process.stdout.write(`HOMEFS_STORE=false: ${resolve(mnt)} is a plain directory; nothing mounted, nothing sealed\n`);
        return;
      }
      const cfg = buildConfig(ref, mnt, o);
      checkMountpoint(cfg.mountpoint, cfg);
      const metricsAddr = o.metricsAddr !== undefined ? parseListenAddr('--metrics-addr', o.metricsAddr) : undefined;
      if (o.foreground) return runDaemon(cfg, o.logLevel, metricsAddr);
      const argv = process.argv.slice(2).filter((a) => a !== '--foreground');
      await startBackground(cfg, argv);
      process.stdout.write(`mounted ${cfg.org}/${cfg.home} at ${cfg.mountpoint}\n`);
    });
}
