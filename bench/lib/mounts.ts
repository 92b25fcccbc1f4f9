/**
 * Every FUSE mount a benchmark creates is registered here and torn down on every exit path: the normal
 * `unmount()`, an exception, SIGINT/SIGTERM, or process exit. Tear-down is `fusermount3 -u`, then
 * `umount -l`, then aborting the connection through /sys/fs/fuse/connections/<n>/abort, so a hung
 * server can never leave a dead mount (and processes stuck in state D) behind.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { run } from './sh.js';

const live = new Map<string, string>(); // mountpoint -> label

/** The fusectl connection number ("device minor") of a mount, if mounted. */
function connectionOf(mnt: string): string | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f[4] === mnt) return f[2]?.split(':')[1];
  }
  return undefined;
}

export function isMounted(mnt: string): boolean {
  return connectionOf(resolve(mnt)) !== undefined;
}

export function register(mnt: string, label: string): void {
  live.set(resolve(mnt), label);
}

export function forget(mnt: string): void {
  live.delete(resolve(mnt));
}

/** Synchronous, last-resort tear-down of one mount (safe in exit and signal handlers). */
export function forceUnmount(mnt: string): void {
  const conn = connectionOf(mnt);
  if (conn === undefined) return;
  const attempt = (cmd: string, args: string[]): boolean => {
    try {
      execFileSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
    } catch {
      /* fall through to the next method */
    }
    return connectionOf(mnt) === undefined;
  };
  if (attempt('fusermount3', ['-u', mnt])) return;
  if (attempt('umount', ['-l', mnt])) return;
  try {
    if (!existsSync('/sys/fs/fuse/connections/' + conn)) execFileSync('mount', ['-t', 'fusectl', 'none', '/sys/fs/fuse/connections'], { stdio: 'ignore' });
    writeFileSync(`/sys/fs/fuse/connections/${conn}/abort`, '1');
  } catch {
    /* nothing more we can do */
  }
  attempt('umount', ['-l', mnt]);
}

/** Tears down every registered mount. */
export function unmountAll(): void {
  for (const mnt of [...live.keys()]) {
    forceUnmount(mnt);
    live.delete(mnt);
  }
}

/** Polite unmount of a non-homefs mount (bindfs, rclone, restic): waits until the server let go. */
export async function unmount(mnt: string): Promise<void> {
  const abs = resolve(mnt);
  const r = await run('fusermount3', ['-u', abs], { allowFail: true });
  if (r.code !== 0) forceUnmount(abs);
  for (let i = 0; i < 100 && isMounted(abs); i++) await new Promise((s) => setTimeout(s, 50));
  if (isMounted(abs)) forceUnmount(abs);
  forget(abs);
}

/** Waits until `mnt` is a mountpoint (for servers that daemonize before the mount is live). */
export async function waitMounted(mnt: string, timeoutMs = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!isMounted(mnt)) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`${mnt} did not become a mount within ${timeoutMs} ms`);
    await new Promise((s) => setTimeout(s, 20));
  }
}

let installed = false;
/** Installs exit and signal handlers that tear down every registered mount. */
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  process.on('exit', unmountAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(`\nbench: ${sig}, unmounting ${live.size} mount(s)\n`);
      unmountAll();
      process.exit(130);
    });
  }
}
