/**
 * The daemon's log file and SIGHUP. `homefs mount` starts the daemon in the background with stdout and
 * stderr appended to <state-dir>/daemon.log. After logrotate (mount-helper/homefs.logrotate) has moved
 * that file away, SIGHUP makes the daemon open the path again and point stdout and stderr at the new
 * file, so nothing is written into the rotated one. A daemon whose stdout is not that file (a terminal
 * with --foreground, systemd's journal) leaves its output alone on SIGHUP.
 */
import { fstatSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { errnoName, sys } from './sys.js';

/** Whether this process's stdout is the file at `path` (same device and inode). */
export function stdoutIs(path: string): boolean {
  try {
    const out = fstatSync(1);
    const file = statSync(path);
    return out.isFile() && out.dev === file.dev && out.ino === file.ino;
  } catch {
    return false;
  }
}

export type RedirectFn = (path: string) => number;

/** Reopens `path` as stdout and stderr on every SIGHUP; returns the function that stops doing so. */
export function reopenOnHangup(path: string, log: Logger, redirect: RedirectFn = (p) => sys().redirectStdio(p)): () => void {
  const onHup = (): void => {
    const rc = redirect(path);
    if (rc < 0) log.error({ op: 'log', path, err: errnoName(rc) }, 'cannot reopen the log file; still writing to the old one');
    else log.info({ op: 'log', path }, 'log file reopened');
  };
  process.on('SIGHUP', onHup);
  return () => process.off('SIGHUP', onHup);
}
