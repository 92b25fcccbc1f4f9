/**
 * The daemon of `homefs mount`, started before the command has loaded: bin/homefs imports this module
 * first, and for a background mount it spawns the daemon (`homefs mount … --foreground`) at once, so that
 * the daemon's Node start and imports overlap the command's own (commander, the mount module, the
 * checks of its arguments): a mount returns ~0.1 s sooner (docs/decisions/0080-early-daemon.md).
 *
 * The early daemon does nothing with effects until it is told to: it parses and checks its arguments,
 * then waits on its IPC channel for `{ go, log }` from the command, which sends it only once its own
 * checks passed (cli/mount.ts `startBackground`). The daemon then points its stdout and stderr at `log`
 * and wakes the home as any daemon does. Until then its stdout and stderr are pipes to the command, which
 * keeps their last bytes to explain an exit before the mount was live. A command that ends without handing
 * over (bad arguments, `--help`, HOMEFS_STORE=false, an error) kills it; a daemon whose command is gone
 * before `go` exits.
 *
 * This module imports nothing of homefs: it runs before anything else is loaded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

/** The environment variable that tells a daemon to wait for `go` (removed from its environment at once). */
export const EARLY_ENV = 'HOMEFS_EARLY_DAEMON';

/** What the command sends the early daemon once the mount's arguments checked out. */
export interface GoMessage {
  go: true;
  /** The log file the daemon appends its stdout and stderr to. */
  log: string;
}

export interface EarlyDaemon {
  child: ChildProcess;
  /** The last bytes the daemon wrote to stdout or stderr before it took its log file. */
  output(): string;
}

const OUTPUT_KEPT = 4096;
let early: EarlyDaemon | null = null;

/** Whether `argv` (without node and the script) asks for a mount whose daemon runs in the background. */
export function wantsEarlyDaemon(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  if (argv[0] !== 'mount' || env[EARLY_ENV] !== undefined) return false;
  if (env.HOMEFS_STORE === 'false' || env.COVEY_HOME_STORE === 'false') return false;
  return !argv.some((a) => a === '--foreground' || a === '-h' || a === '--help' || a === '--');
}

/** Spawns the daemon for `argv` if it asks for a background mount (see the module comment). */
export function startEarlyDaemon(argv: readonly string[]): void {
  if (!wantsEarlyDaemon(argv)) return;
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1] ?? '', ...argv, '--foreground'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, [EARLY_ENV]: '1' },
  });
  let kept = '';
  const keep = (b: Buffer): void => {
    kept = (kept + b.toString('utf8')).slice(-OUTPUT_KEPT);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('error', () => undefined); // a spawn that failed shows as an exit to whoever waits
  // Nothing of it keeps this process alive: a command that ends without handing over exits (and kills it).
  child.unref();
  child.channel?.unref();
  (child.stdout as Socket | null)?.unref();
  (child.stderr as Socket | null)?.unref();
  early = { child, output: () => kept };
  process.on('exit', () => {
    if (early) child.kill('SIGKILL'); // never handed over: it has done nothing yet
  });
}

/** The early daemon, for the command to hand the mount over to; null when none was started. Once only. */
export function takeEarlyDaemon(): EarlyDaemon | null {
  const e = early;
  early = null;
  return e;
}

/**
 * Daemon side: when started early, waits for `go` and returns the log file to append to; null when not
 * started early. Exits quietly when the command is gone before `go`.
 */
export function awaitGo(): Promise<string | null> {
  if (process.env[EARLY_ENV] === undefined) return Promise.resolve(null);
  delete process.env[EARLY_ENV];
  return new Promise((resolve) => {
    const onDisconnect = (): void => process.exit(0);
    process.once('disconnect', onDisconnect);
    process.once('message', (m: Partial<GoMessage>) => {
      process.off('disconnect', onDisconnect);
      if (m.go && typeof m.log === 'string') resolve(m.log);
      else process.exit(0);
    });
  });
}
