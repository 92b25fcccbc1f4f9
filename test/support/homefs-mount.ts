/**
 * Test harness for homefs mounts: a temporary store, cache and state directory, `homefs mount` run as a
 * separate daemon process, and shell commands run in child processes against the mountpoint. Every mount
 * is torn down in `cleanup()` (sleep, then fusermount3 -u / umount -l / connection abort), and so is every
 * scratch tmpfs made with `tmpfs()`: only after the daemons that may hold files on it have exited, with a
 * lazy unmount as the last resort, so a failing test never leaves one mounted.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { forceUnmount, isMounted } from './fuse-mount-helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const BIN = path.resolve(here, '../../../bin/homefs');

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command in a child process (never blocks this event loop). */
export function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string } = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

export function sh(script: string, opts: { cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return run('bash', ['-euo', 'pipefail', '-c', script], opts);
}

/** Like sh, but throws with the output when the script fails. */
export async function shOk(script: string, opts: { cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  const r = await sh(script, opts);
  if (r.code !== 0) throw new Error(`script failed (${r.code}): ${script}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export function homefs(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<RunResult> {
  return run(process.execPath, [BIN, ...args], opts);
}

export async function homefsOk(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  const r = await homefs(args, opts);
  if (r.code !== 0) throw new Error(`homefs ${args.join(' ')} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r.stdout;
}

export class TestHome {
  readonly root: string;
  readonly storeUrl: string;
  readonly mounts = new Set<string>();
  private readonly tmpfses: string[] = [];

  constructor(readonly org = 'acme', readonly home = 'agent', storeUrl?: string) {
    this.root = mkdtempSync(path.join(tmpdir(), 'homefs-test-'));
    this.storeUrl = storeUrl ?? `file://${path.join(this.root, 'store')}`;
  }

  get ref(): string {
    return `${this.org}/${this.home}`;
  }

  /** A host = its own cache and state directory. */
  hostDirs(host: string): { state: string; cache: string } {
    return { state: path.join(this.root, host, 'state'), cache: path.join(this.root, host, 'cache') };
  }

  mountpoint(name = 'mnt'): string {
    const m = path.join(this.root, 'mnts', name);
    mkdirSync(m, { recursive: true });
    return m;
  }

  async mount(opts: { host?: string; mnt?: string; extra?: string[]; ref?: string } = {}): Promise<string> {
    const mnt = opts.mnt ?? this.mountpoint();
    const d = this.hostDirs(opts.host ?? 'host1');
    await homefsOk(['mount', opts.ref ?? this.ref, mnt, '--store', this.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache, ...(opts.extra ?? [])]);
    this.mounts.add(mnt);
    return mnt;
  }

  async status(mnt: string): Promise<Record<string, unknown>> {
    return JSON.parse(await homefsOk(['status', mnt, '--json'])) as Record<string, unknown>;
  }

  async sleep(mnt: string): Promise<string> {
    const out = await homefsOk(['sleep', mnt], { timeoutMs: 180_000 });
    this.mounts.delete(mnt);
    return out.trim();
  }

  /** kill -9 of the daemon serving mnt, then tear the dead mount down. */
  async kill9(mnt: string): Promise<void> {
    const pid = Number((await this.status(mnt)).pid);
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 100 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 20));
    forceUnmount(mnt);
    this.mounts.delete(mnt);
  }

  /** Mounts a tmpfs of `size` (e.g. '8m') at root/name; cleanup() unmounts it. */
  tmpfs(name: string, size: string): string {
    const dir = path.join(this.root, name);
    mkdirSync(dir, { recursive: true });
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`mount -t tmpfs ${dir} failed: ${r.stderr}`);
    this.tmpfses.push(dir);
    return dir;
  }

  async cleanup(): Promise<void> {
    const daemons: number[] = [];
    for (const mnt of this.mounts) {
      if (isMounted(mnt)) {
        const st = await homefs(['status', mnt, '--json']);
        if (st.code === 0) daemons.push(Number((JSON.parse(st.stdout) as { pid: unknown }).pid));
        await homefs(['sleep', mnt], { timeoutMs: 60_000 });
      }
      forceUnmount(mnt);
    }
    this.mounts.clear();
    // `sleep` answers just before its daemon exits; the daemon's log and journal may sit on a tmpfs.
    for (const pid of daemons) {
      for (let i = 0; i < 250 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 20));
      // A daemon that outlived its sleep and its unmount is stopped here: tests leave no server running.
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    for (const dir of this.tmpfses.splice(0)) {
      if (spawnSync('umount', [dir], { timeout: 5000 }).status !== 0) spawnSync('umount', ['-l', dir], { timeout: 5000 });
    }
    spawnSync('rm', ['-rf', this.root]);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function removeTree(p: string): void {
  rmSync(p, { recursive: true, force: true });
}
