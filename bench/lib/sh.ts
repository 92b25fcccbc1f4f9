/**
 * Running the programs a benchmark measures: every call is a child process with its wall time taken here,
 * so node's own start-up never hides inside a measurement by accident. A failing command throws with its
 * stderr tail, because a benchmark that silently measures an error is worse than none.
 */
import { spawn } from 'node:child_process';

export interface RunResult {
  ms: number;
  stdout: string;
  stderr: string;
  code: number;
  /** Peak resident set size in KiB, when the command was run with `rss: true`. */
  rssKiB?: number;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Do not throw on a non-zero exit; return the result instead. */
  allowFail?: boolean;
  /** Measure peak RSS with /usr/bin/time. */
  rss?: boolean;
  timeoutMs?: number;
  input?: string;
}

export class CommandError extends Error {}

/** Runs `cmd args…` and returns its output and wall time in milliseconds. */
export function run(cmd: string, args: string[], o: RunOptions = {}): Promise<RunResult> {
  const argv = o.rss ? ['/usr/bin/time', '-f', '@@RSS=%M', cmd, ...args] : [cmd, ...args];
  return new Promise((resolveRun, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd: o.cwd,
      env: o.env ?? process.env,
      stdio: [o.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (b: Buffer) => out.push(b));
    child.stderr?.on('data', (b: Buffer) => err.push(b));
    if (o.input !== undefined) child.stdin?.end(o.input);
    const timer = o.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), o.timeoutMs) : undefined;
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      let stderr = Buffer.concat(err).toString('utf8');
      let rssKiB: number | undefined;
      const m = /@@RSS=(\d+)\s*$/.exec(stderr);
      if (m) {
        rssKiB = Number(m[1]);
        stderr = stderr.slice(0, m.index);
      }
      const r: RunResult = { ms, stdout: Buffer.concat(out).toString('utf8'), stderr, code: code ?? (signal ? 128 : 1) };
      if (rssKiB !== undefined) r.rssKiB = rssKiB;
      if (r.code !== 0 && !o.allowFail) {
        const tail = (stderr.trim() || r.stdout.trim()).split('\n').slice(-3).join(' | ');
        reject(new CommandError(`${[cmd, ...args].join(' ').slice(0, 200)} exited ${r.code}${signal ? ` (${signal})` : ''}: ${tail}`));
        return;
      }
      resolveRun(r);
    });
  });
}

/** Runs a bash script (`set -euo pipefail`). */
export function bash(script: string, o: RunOptions = {}): Promise<RunResult> {
  return run('bash', ['-c', `set -euo pipefail\n${script}`], o);
}

/** Quotes one word for bash. */
export function q(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Wall time of an async function in milliseconds. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

/** Empties the kernel's page, dentry and inode caches (root only); false when not permitted. */
export async function dropCaches(): Promise<boolean> {
  const r = await bash('sync; echo 3 > /proc/sys/vm/drop_caches', { allowFail: true });
  return r.code === 0;
}

/** Apparent size in bytes of a directory tree (`du -sb`). */
export async function duBytes(path: string): Promise<number> {
  const r = await run('du', ['-sb', path]);
  return Number(r.stdout.split('\t')[0]);
}

/** Number of regular files under a path. */
export async function countFiles(path: string): Promise<number> {
  const r = await bash(`find ${q(path)} -type f | wc -l`);
  return Number(r.stdout.trim());
}

const FSOPS = new URL('./tools/fsops.js', import.meta.url).pathname;

/** Runs one fsops workload (see tools/fsops.ts) and returns its JSON result. */
export async function fsops(...args: string[]): Promise<Record<string, number>> {
  const r = await run(process.execPath, [FSOPS, ...args], { timeoutMs: 1_800_000 });
  return JSON.parse(r.stdout) as Record<string, number>;
}
