/**
 * A background `homefs mount` and its daemon: how the daemon reports to the command that started it.
 *
 * bin/homefs, run as a program, is a bash script: for a background mount it starts the daemon (`homefs
 * mount … --foreground`) at once, with no Node process of its own, and waits for the daemon's reports on
 * a pipe whose descriptor number is in HOMEFS_EARLY_DAEMON (docs/decisions/0090-shell-launcher.md). The
 * daemon checks its arguments itself; until it knows its log, its stdout and stderr are the command's, so a
 * refused argument reads as it always did. Then it reports one line at a time:
 *
 *     log <path>                      where it logs (it then points stdout and stderr there)
 *     ready <line>                    the mount is live: the command prints <line> and exits 0
 *     error <code> <line>             the wake failed: the command prints <line> on stderr, exits <code>
 *
 * A daemon that exits without `ready` or `error` has the command print why (its exit status, the log's
 * last error: `lastLoggedError`). `node bin/homefs mount …` (the mount(8) helper, systemd, the tests) runs
 * the same bash launcher (`mountInBackground`), so there is one protocol and one waiter.
 *
 * This module imports nothing of homefs: it runs before anything else is loaded.
 */
import { spawn } from 'node:child_process';
import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { constants as os } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The descriptor of the pipe a daemon reports on, set by bin/homefs for the daemon it starts. */
export const EARLY_ENV = 'HOMEFS_EARLY_DAEMON';

const BIN = fileURLToPath(new URL('../../../bin/homefs', import.meta.url));

/** Whether `argv` (without node and the script) asks for a mount whose daemon runs in the background. */
export function wantsEarlyDaemon(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  if (argv[0] !== 'mount' || env[EARLY_ENV] !== undefined) return false;
  if (env.HOMEFS_STORE === 'false' || env.COVEY_HOME_STORE === 'false') return false;
  return !argv.some((a) => a === '--foreground' || a === '-h' || a === '--help' || a === '--');
}

/**
 * `homefs mount <argv…>` in the background, from Node: runs bin/homefs's bash launcher with this Node
 * binary, its output and error output this process's own. Resolves with its exit code. (A stray
 * HOMEFS_EARLY_DAEMON is not passed on: the launcher would hand the mount back to Node.)
 */
export function mountInBackground(argv: readonly string[]): Promise<number> {
  const env: NodeJS.ProcessEnv = { ...process.env, HOMEFS_NODE: process.execPath };
  delete env[EARLY_ENV];
  return new Promise((resolve) => {
    const child = spawn(BIN, [...argv], { stdio: 'inherit', env });
    child.on('error', (e) => {
      process.stderr.write(`homefs: cannot run ${BIN}: ${e.message}\n`);
      resolve(1);
    });
    child.on('close', (code, signal) => resolve(code ?? 128 + (signal ? os.signals[signal] : 0)));
  });
}

/** The daemon's side: its launcher's pipe, taken once (close-on-exec, so no child of the daemon holds it open). */
let channel: number | null | undefined;

function reportFd(): number | null {
  if (channel !== undefined) return channel;
  const v = process.env[EARLY_ENV];
  delete process.env[EARLY_ENV]; // (not for the daemon's own children)
  channel = null;
  if (v !== undefined && /^\d+$/.test(v)) {
    try {
      channel = openSync(`/proc/self/fd/${v}`, constants.O_WRONLY); // Node opens with O_CLOEXEC
      closeSync(Number(v));
    } catch {
      channel = null; // no launcher listening: nothing to report to
    }
  }
  return channel;
}

/** Whether this daemon was started by a launcher that waits for its reports. */
export function startedByLauncher(): boolean {
  return reportFd() !== null;
}

/** One report to the launcher (on one line); `last` closes the pipe. A launcher gone is not an error. */
export function reportToLauncher(report: string, last: boolean): void {
  const fd = reportFd();
  if (fd === null) return;
  try {
    writeSync(fd, `${report.replace(/\r?\n/g, ' ')}\n`);
  } catch {
    // the launcher has gone (it was killed): the daemon goes on, or exits, as it would have
  }
  if (last) {
    closeSync(fd);
    channel = null;
  }
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
