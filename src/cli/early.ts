/**
 * A background `homefs mount`, without loading homefs: bin/homefs imports this module first, and for a
 * mount whose daemon runs in the background it spawns the daemon (`homefs mount … --foreground`) at once
 * and waits for it, instead of loading commander and the mount module to check the arguments first. The
 * daemon checks them itself (it always did, with the same code), so the command's Node process does
 * nothing but start, spawn and wait, and the daemon's start no longer shares the machine's cores with the
 * command's imports (docs/decisions/0080-early-daemon.md).
 *
 * The daemon's stdout and stderr are pipes to this process until it has checked its arguments and made its
 * state directory: then it says where its log is (`{ log }`), points stdout and stderr there, and wakes the
 * home. Whatever it printed before (a refused argument, `homefs: …`) is printed here as it was, with its
 * exit code; once the mount is live it sends `{ ready, mounted }`, or `{ error, exitCode }` if the wake
 * failed, and this process prints one line and exits. The daemon runs detached: it outlives this process.
 *
 * This module imports nothing of homefs: it runs before anything else is loaded.
 */
import { spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** Tells a daemon that its stdout and stderr are its spawner's pipes until it takes its log file. */
export const EARLY_ENV = 'HOMEFS_EARLY_DAEMON';

/** What the daemon tells the command that started it: where it logs, then whether the mount is live. */
export type DaemonReport =
  | { log: string }
  | { ready: true; mounted: string }
  | { ready?: false; error: string; exitCode: number };

/** util/exit-codes.ts ExitCode.internal, not imported (this module loads nothing of homefs); a test keeps them equal. */
export const INTERNAL_EXIT = 70;
const USER_ERROR = 1;
const UP_WITHIN_MS = 120_000;

/** Whether `argv` (without node and the script) asks for a mount whose daemon runs in the background. */
export function wantsEarlyDaemon(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  if (argv[0] !== 'mount' || env[EARLY_ENV] !== undefined) return false;
  if (env.HOMEFS_STORE === 'false' || env.COVEY_HOME_STORE === 'false') return false;
  return !argv.some((a) => a === '--foreground' || a === '-h' || a === '--help' || a === '--');
}

/** The daemon log's last logged error, to explain an exit that came without a report. */
export function lastLoggedError(log: string): string | null {
  try {
    const fd = openSync(log, 'r');
    const size = fstatSync(fd).size;
    const tail = Buffer.alloc(Math.min(size, 64 * 1024)); // the log may be long; its end is enough
    readSync(fd, tail, 0, tail.length, size - tail.length);
    closeSync(fd);
    for (const l of tail.toString('utf8').trimEnd().split('\n').slice(-20).reverse()) {
      const err = (JSON.parse(l) as { err?: unknown }).err;
      if (typeof err === 'string') return err;
    }
  } catch {
    // no log, or not JSON: the caller points at the log
  }
  return null;
}

/** glibc's malloc asks for transparent huge pages (docs/decisions/0089-huge-pages-for-received-bytes.md). */
export const HUGE_PAGES_TUNABLE = 'glibc.malloc.hugetlb=1';

/**
 * The daemon's environment: `env` with glibc's malloc set to ask for transparent huge pages where the host
 * leaves them to each process (`madvise`), unless GLIBC_TUNABLES already says how (`glibc.malloc.hugetlb`).
 * A first touch of fresh memory cost 3.2 ms per MiB in 4 KiB page faults on this project's VM, 0.2-1.7 ms
 * with huge pages (bench/firsttouch.ts), and a wake fills tens of MiB of fresh buffers with what the store sends.
 */
export function daemonEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const tunables = env.GLIBC_TUNABLES ?? '';
  if (tunables.split(':').some((t) => t.startsWith('glibc.malloc.hugetlb='))) return { ...env };
  return { ...env, GLIBC_TUNABLES: tunables ? `${tunables}:${HUGE_PAGES_TUNABLE}` : HUGE_PAGES_TUNABLE };
}

/**
 * Starts the daemon of `homefs mount <argv…>` in the background and waits until the mount is live (prints
 * `mounted …`, exit code 0) or the daemon says or shows why not (its words, its exit code). Resolves with
 * the exit code; never throws.
 */
export function mountInBackground(argv: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1] ?? '', ...argv, '--foreground'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...daemonEnv(process.env), [EARLY_ENV]: '1' },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout?.on('data', (b: Buffer) => out.push(b));
  child.stderr?.on('data', (b: Buffer) => err.push(b));
  let log: string | null = null;
  return new Promise<number>((resolve) => {
    let done = false;
    const finish = (code: number, line?: string, to: NodeJS.WriteStream = process.stderr): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (line !== undefined) to.write(`${line}\n`);
      if (child.connected) child.disconnect();
      child.stdout?.destroy();
      child.stderr?.destroy();
      child.unref();
      resolve(code);
    };
    const timer = setTimeout(() => {
      child.kill('SIGTERM'); // a daemon that never came up must not mount later, behind the user's back
      finish(USER_ERROR, `homefs: the homefs daemon did not come up within ${UP_WITHIN_MS / 1000}s${log === null ? '' : `; see ${log}`}`);
    }, UP_WITHIN_MS);
    child.on('message', (m: DaemonReport) => {
      if ('log' in m) log = m.log;
      else if (m.ready) finish(0, `mounted ${m.mounted}`, process.stdout);
      else if (m.exitCode === INTERNAL_EXIT) finish(m.exitCode, `homefs: internal error in the daemon: ${m.error}${log === null ? '' : ` (stack trace in ${log})`}`);
      else finish(m.exitCode, `homefs: ${m.error}`);
    });
    child.on('error', (e) => finish(USER_ERROR, `homefs: cannot start the homefs daemon: ${e.message}`));
    child.on('close', (code, signal) => {
      // Exited before a report: it refused its arguments (its own words, on its pipes) or it died.
      if (done) return;
      const printed = Buffer.concat(err).toString('utf8');
      process.stdout.write(Buffer.concat(out));
      if (printed.trim() !== '' && log === null) {
        process.stderr.write(printed);
        return finish(code ?? USER_ERROR);
      }
      const why = (log !== null ? lastLoggedError(log) : null) ?? printed.trim().split('\n').pop()?.replace(/^homefs: /, '') ?? '';
      finish(code || USER_ERROR, `homefs: the homefs daemon exited (${signal ?? `code ${code}`}) before the mount was live${why ? `: ${why}` : ''}${log === null ? '' : `; see ${log}`}`);
    });
  });
}
