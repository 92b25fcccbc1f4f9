/**
 * Helpers for tests that use real FUSE mounts: start a MemFs server process, and tear a mount down
 * whatever state it is in (fusermount3 -u, then umount -l, then abort the connection through fusectl,
 * which is the only thing that releases processes stuck in state D on a dead server).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync, existsSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MemFsOptions } from './memfs.js';
import type { MountOptions } from '../../src/fuse/types.js';

const here = path.dirname(fileURLToPath(import.meta.url));

export function fuseAvailable(): string | undefined {
  if (!existsSync('/dev/fuse')) return '/dev/fuse missing';
  if (spawnSync('which', ['fusermount3']).status !== 0) return 'fusermount3 missing';
  if (!existsSync(path.resolve(here, '../../../native/build/Release/homefs_fuse.node'))) return 'addon not built (npm install)';
  return undefined;
}

export function tempMountpoint(tag: string): string { return mkdtempSync(path.join(tmpdir(), `homefs-${tag}-`)); }

/** Device number "major:minor" of the FUSE mount at mnt, from /proc/self/mountinfo. */
export function mountDevice(mnt: string): string | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f[4] === mnt && line.includes(' - fuse')) return f[2];
  }
  return undefined;
}
export function isMounted(mnt: string): boolean { return mountDevice(mnt) !== undefined; }

function fusectl(): string {
  const dir = '/sys/fs/fuse/connections';
  if (existsSync(dir) && readdirSync(dir).length === 0) spawnSync('mount', ['-t', 'fusectl', 'none', dir]);
  return dir;
}

/** Aborts the connection of the mount at mnt (releases state-D accessors of a dead or stuck server). */
export function abortConnection(mnt: string): boolean {
  const dev = mountDevice(mnt);
  if (!dev) return false;
  const minor = dev.split(':')[1];
  const p = path.join(fusectl(), String(minor), 'abort');
  if (!existsSync(p)) return false;
  writeFileSync(p, '1');
  return true;
}

/** Tears down whatever is mounted at mnt; never throws. */
export function forceUnmount(mnt: string): void {
  if (!isMounted(mnt)) return;
  if (spawnSync('fusermount3', ['-u', '-q', mnt], { timeout: 5000 }).status === 0 && !isMounted(mnt)) return;
  abortConnection(mnt);
  spawnSync('umount', ['-l', mnt], { timeout: 5000 });
}

export interface Server { child: ChildProcess; pid: number; mnt: string; stop(): Promise<void>; output(): string }

/** Starts test/support/memfs-server in a child process and resolves once the mount is live. */
export async function startMemfsServer(mnt: string, opts: { fs?: MemFsOptions; mount?: MountOptions; omit?: string[] } = {}): Promise<Server> {
  const script = path.join(here, 'memfs-server.js');
  const child = spawn(process.execPath, [script, mnt], {
    env: { ...process.env, HOMEFS_MEMFS_SERVER: '1', HOMEFS_MEMFS_OPTS: JSON.stringify(opts) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr?.on('data', (d: Buffer) => { out += d.toString(); });
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`memfs server did not start: ${out}`)), 10000);
    const check = (): void => { if (out.includes('ready')) { clearTimeout(t); resolve(); } };
    child.stdout?.on('data', check);
    child.once('exit', (code) => { clearTimeout(t); reject(new Error(`memfs server exited (${code}): ${out}`)); });
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(); else child.once('exit', () => resolve());
  });
  return {
    child, pid: child.pid ?? 0, mnt, output: () => out,
    async stop(): Promise<void> {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      forceUnmount(mnt);
      if (!isMounted(mnt)) rmSync(mnt, { recursive: true, force: true });
    },
  };
}

/** Waits until pred() holds, polling; false on timeout. */
export async function waitFor(pred: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return pred();
}

export function isDir(p: string): boolean { try { return statSync(p).isDirectory(); } catch { return false; } }
