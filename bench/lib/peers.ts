/**
 * The systems under test, each behind a few small functions: homefs (through its CLI, as a user runs it,
 * plus the control socket for status and seal timing), bindfs (C libfuse loopback: the FUSE floor),
 * rclone mount with --vfs-cache-mode full over a local remote, and restic (backup, restore, mount).
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { callControl } from '../../src/home/control.js';
import { register, forget, forceUnmount, isMounted, unmount, waitMounted } from './mounts.js';
import { run, bash, q, type RunResult } from './sh.js';

export const HOMEFS_BIN = resolve(import.meta.dirname, '../../../bin/homefs');

export interface HomefsMountOptions {
  ref: string; // org/home
  mnt: string;
  store: string; // directory of a file:// store, or a store URL (s3://…)
  state: string;
  cache: string;
  fsync?: 'store' | 'local';
  takeover?: boolean;
}

/** The --store argument: a store URL as given, a directory as file://<absolute path>. */
export function storeUrl(store: string): string {
  return /^[a-z0-9]+:\/\//.test(store) ? store : `file://${resolve(store)}`;
}

export interface HomefsStatus {
  bytesFetched: number;
  cacheBytes: number;
  head: string | null;
  seals: number;
  bytesUploaded: number;
  [k: string]: unknown;
}

/** `homefs mount`; returns its wall time (the command returns once the mount is live). */
export async function homefsMount(o: HomefsMountOptions): Promise<number> {
  mkdirSync(o.mnt, { recursive: true });
  const args = ['mount', o.ref, o.mnt, '--store', storeUrl(o.store), '--state-dir', o.state, '--cache-dir', o.cache,
    '--fsync', o.fsync ?? 'store', '--log-level', 'warn'];
  if (o.takeover) args.push('--takeover');
  register(o.mnt, 'homefs');
  try {
    return (await run(HOMEFS_BIN, args, { timeoutMs: 120_000 })).ms;
  } catch (e) {
    forceUnmount(resolve(o.mnt));
    forget(o.mnt);
    throw e;
  }
}

async function control(mnt: string, op: 'sync' | 'sleep' | 'status'): Promise<Record<string, unknown>> {
  const r = await callControl(resolve(mnt), { op });
  if (!r.ok) throw new Error(`homefs ${op} ${mnt}: ${r.error}`);
  return r;
}

export async function homefsStatus(mnt: string): Promise<HomefsStatus> {
  return (await control(mnt, 'status')) as unknown as HomefsStatus;
}

/** One seal through the control socket (what `homefs sync` does, minus the CLI's node start-up). */
export async function homefsSync(mnt: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  await control(mnt, 'sync');
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** `homefs sleep`: final seal, unmount, daemon exit; returns its wall time. */
export async function homefsSleep(mnt: string): Promise<number> {
  const abs = resolve(mnt);
  try {
    const ms = (await run(HOMEFS_BIN, ['sleep', abs], { timeoutMs: 300_000 })).ms;
    for (let i = 0; i < 100 && isMounted(abs); i++) await new Promise((s) => setTimeout(s, 50));
    return ms;
  } finally {
    if (isMounted(abs)) forceUnmount(abs);
    forget(abs);
  }
}

/** `homefs locality <ref> --cache-dir <cache>`: how much of HEAD's data this host's block cache already holds. */
export async function homefsLocality(ref: string, store: string, cache: string): Promise<{ bytes: number; bytesCached: number; ratio: number }> {
  const r = await run(HOMEFS_BIN, ['locality', ref, '--store', storeUrl(store), '--cache-dir', cache, '--json'], { timeoutMs: 120_000 });
  return JSON.parse(r.stdout) as { bytes: number; bytesCached: number; ratio: number };
}

/** `homefs push <dir> <ref>`, returning the push's JSON summary, wall time and peak RSS. */
export async function homefsPush(dir: string, ref: string, store: string): Promise<{ r: RunResult; json: Record<string, number> }> {
  const r = await run(HOMEFS_BIN, ['push', dir, ref, '--store', storeUrl(store), '--json'], { rss: true, timeoutMs: 3_600_000 });
  return { r, json: JSON.parse(r.stdout) as Record<string, number> };
}

export async function bindfsMount(src: string, mnt: string): Promise<number> {
  mkdirSync(mnt, { recursive: true });
  register(mnt, 'bindfs');
  const r = await run('bindfs', [src, mnt]);
  await waitMounted(resolve(mnt));
  return r.ms;
}

/**
 * `rclone mount` with --vfs-cache-mode full of a local directory, or of `remote:path` of a remote set up by
 * `env` (RCLONE_CONFIG_<NAME>_… variables, see `rcloneS3Env`).
 */
export async function rcloneMount(remoteDir: string, mnt: string, cacheDir: string, env?: NodeJS.ProcessEnv): Promise<number> {
  mkdirSync(mnt, { recursive: true });
  register(mnt, 'rclone');
  const t0 = Date.now();
  const remote = /^[A-Za-z0-9_]+:/.test(remoteDir) ? remoteDir : resolve(remoteDir);
  await run('rclone', ['mount', remote, resolve(mnt), '--vfs-cache-mode', 'full', '--vfs-write-back', '0s', '--cache-dir', cacheDir,
    '--daemon', '--config', '/dev/null', '--log-level', 'ERROR'], env ? { env } : {});
  await waitMounted(resolve(mnt));
  return Date.now() - t0;
}

/**
 * Environment for rclone with an S3 remote named `name` at `endpoint` (credentials from the AWS_* variables).
 * AWS_CA_BUNDLE is removed: rclone 1.60 fails with LoadCustomCABundleError while it is set.
 */
export function rcloneS3Env(name: string, endpoint: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.AWS_CA_BUNDLE;
  const p = `RCLONE_CONFIG_${name.toUpperCase()}_`;
  return { ...env, [`${p}TYPE`]: 's3', [`${p}PROVIDER`]: 'Ceph', [`${p}ENDPOINT`]: endpoint, [`${p}ENV_AUTH`]: 'true', [`${p}REGION`]: 'us-east-1', [`${p}FORCE_PATH_STYLE`]: 'true' };
}

export { unmount };

/**
 * restic with a password and repository given by environment, like its users script it. `repo` is a
 * directory or a repository URL (`s3:http://host:port/bucket/prefix`, credentials from AWS_*); the cache
 * goes beside a directory repository, or in `cacheDir`.
 */
export function resticEnv(repo: string, cacheDir?: string): NodeJS.ProcessEnv {
  const isUrl = /^[a-z0-9]+:/.test(repo);
  return { ...process.env, RESTIC_REPOSITORY: isUrl ? repo : resolve(repo), RESTIC_PASSWORD: 'bench',
    RESTIC_CACHE_DIR: cacheDir ?? join(resolve(isUrl ? '.' : repo), '..', 'restic-cache') };
}

export async function restic(repo: string, args: string[], opts: { rss?: boolean; cwd?: string; cacheDir?: string } = {}): Promise<RunResult> {
  const { cacheDir, ...rest } = opts;
  return run('restic', ['--quiet', ...args], { env: resticEnv(repo, cacheDir), timeoutMs: 3_600_000, ...rest });
}

/** `restic mount` in the background; resolves once the mount is live. */
export async function resticMount(repo: string, mnt: string, cacheDir?: string): Promise<number> {
  mkdirSync(mnt, { recursive: true });
  register(mnt, 'restic');
  const t0 = Date.now();
  const child = spawn('restic', ['mount', resolve(mnt)], { env: resticEnv(repo, cacheDir), stdio: 'ignore', detached: true });
  child.unref();
  await waitMounted(resolve(mnt), 60_000);
  return Date.now() - t0;
}

/** Size in bytes of a directory as stored (`du -sb`). */
export async function storeBytes(dir: string): Promise<number> {
  return Number((await bash(`du -sb ${q(dir)} | cut -f1`)).stdout.trim());
}
