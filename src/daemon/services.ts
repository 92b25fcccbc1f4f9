/**
 * What a daemon process runs around its MountedHome, started from one place (cli/mount.ts, `runDaemon`):
 * the metrics and health endpoint (--metrics-addr), systemd notifications (sd-notify.ts) and the log
 * reopen on SIGHUP (logfile.ts). `start` runs before the home wakes, so a port already in use fails the
 * mount before it claims anything; `attach` runs once the home is mounted.
 */
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { HomeHooks, MountedHome } from '../home/home.js';
import type { HomeMetrics } from '../metrics/homefs.js';
import { isLoopback, serveEndpoint, type ListenAddr } from '../metrics/http.js';
import { reopenOnHangup, stdoutIs } from './logfile.js';
import { SystemdNotifier } from './sd-notify.js';

export interface ServiceOptions {
  metrics: HomeMetrics;
  log: Logger;
  /** <state-dir>/daemon.log: reopened on SIGHUP when it is this process's stdout. */
  logPath: string;
  metricsAddr?: ListenAddr | undefined;
  /** A label for STATUS= lines, e.g. `acme/agent1 at /home/agent`. */
  what: string;
}

export class DaemonServices {
  private home: MountedHome | undefined;
  private endpoint: Server | undefined;
  private stopReopen: (() => void) | undefined;
  readonly notifier: SystemdNotifier;
  url: string | undefined;

  private constructor(private readonly o: ServiceOptions) {
    this.notifier = SystemdNotifier.fromEnv(o.log);
  }

  static async start(o: ServiceOptions): Promise<DaemonServices> {
    const s = new DaemonServices(o);
    if (stdoutIs(o.logPath)) s.stopReopen = reopenOnHangup(o.logPath, o.log);
    if (o.metricsAddr) {
      const { server, url } = await serveEndpoint(o.metricsAddr, {
        metrics: () => o.metrics.render(),
        contentType: o.metrics.contentType,
        health: () => s.home?.health() ?? { ok: false, state: 'waking' },
      });
      server.unref();
      s.endpoint = server;
      s.url = url;
      if (isLoopback(o.metricsAddr.host)) o.log.info({ op: 'metrics', url }, 'metrics endpoint listening');
      else o.log.warn({ op: 'metrics', url }, 'metrics endpoint listening on a non-loopback address: anyone who can reach it reads this home\'s metrics');
    }
    return s;
  }

  /** What the home reports to and calls back (MountedHome.wake). */
  hooks(): HomeHooks {
    return { metrics: this.o.metrics, onSecuring: () => this.notifier.stopping(`securing ${this.o.what}`), metricsUrl: this.url };
  }

  /** The home is mounted: health answers from it, and systemd hears READY=1. */
  attach(home: MountedHome): void {
    this.home = home;
    this.notifier.ready(`mounted ${this.o.what}${this.url ? `; metrics at ${this.url}/metrics` : ''}`);
  }

  close(): void {
    this.notifier.close();
    this.endpoint?.close();
    this.stopReopen?.();
  }
}
