/**
 * systemd's readiness protocol (sd_notify(3)) for a daemon run by `homefs@.service` (Type=notify):
 * READY=1 once the home is mounted, STOPPING=1 when the final seal begins, STATUS= lines a human reads in
 * `systemctl status`, and WATCHDOG=1 every WATCHDOG_USEC/2 while the event loop turns (WatchdogSec=).
 * Each message is one datagram to $NOTIFY_SOCKET, sent by the homefs_sys addon from this process, the
 * service's main process, so the unit's default NotifyAccess=main accepts it. Without NOTIFY_SOCKET
 * every call does nothing. The variables are removed from the environment once read, so the daemon's
 * children never speak for it. A failed send is logged once and otherwise ignored: notifications never
 * stop the home.
 */
import type { Logger } from 'pino';
import { errnoName, sys } from './sys.js';

export type SendFn = (socketPath: string, message: string) => number;

export class SystemdNotifier {
  private watchdog: NodeJS.Timeout | undefined;
  private warned = false;

  constructor(
    readonly socketPath: string | undefined,
    /** Half the watchdog period systemd asked for, or undefined without WatchdogSec. */
    readonly watchdogMs: number | undefined,
    private readonly log: Logger,
    private readonly send: SendFn = (p, m) => sys().notify(p, m),
  ) {}

  /** Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID, and removes them from `env`. */
  static fromEnv(log: Logger, env: NodeJS.ProcessEnv = process.env): SystemdNotifier {
    const socketPath = env.NOTIFY_SOCKET || undefined;
    const usec = Number(env.WATCHDOG_USEC);
    const forUs = !env.WATCHDOG_PID || Number(env.WATCHDOG_PID) === process.pid;
    const watchdogMs = socketPath && forUs && Number.isFinite(usec) && usec > 0 ? Math.max(1, Math.floor(usec / 2000)) : undefined;
    delete env.NOTIFY_SOCKET;
    delete env.WATCHDOG_USEC;
    delete env.WATCHDOG_PID;
    return new SystemdNotifier(socketPath, watchdogMs, log);
  }

  get enabled(): boolean {
    return this.socketPath !== undefined;
  }

  notify(...fields: string[]): void {
    if (!this.socketPath) return;
    const rc = this.send(this.socketPath, fields.join('\n'));
    if (rc < 0 && !this.warned) {
      this.warned = true;
      this.log.warn({ op: 'notify', socket: this.socketPath, err: errnoName(rc) }, 'cannot notify systemd through NOTIFY_SOCKET');
    }
  }

  /** The home is mounted and serving; starts the watchdog pings if systemd asked for them. */
  ready(status: string): void {
    this.notify('READY=1', `STATUS=${status}`, `MAINPID=${process.pid}`);
    if (this.watchdogMs !== undefined && !this.watchdog) {
      this.watchdog = setInterval(() => this.notify('WATCHDOG=1'), this.watchdogMs);
      this.watchdog.unref();
    }
  }

  /** The final seal began. The watchdog keeps pinging: a long seal is progress, not a hang. */
  stopping(status: string): void {
    this.notify('STOPPING=1', `STATUS=${status}`);
  }

  close(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
  }
}
