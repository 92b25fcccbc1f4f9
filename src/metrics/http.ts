/**
 * The daemon's HTTP endpoint (`homefs mount --metrics-addr [HOST:]PORT`): `GET /metrics` answers the
 * home's registry in the Prometheus text format; `GET /healthz` answers 200 while the home is mounted and
 * serving (active or parked, lease held) and 503 otherwise (waking, securing, asleep, lease lost), with a
 * one-line JSON body naming the state. Nothing else is served. Without a host it listens on 127.0.0.1:
 * the endpoint has no authentication, so a non-loopback address must be asked for, and is logged as a
 * warning (docs/operations.md, "Observability").
 */
import type { Server } from 'node:http';
import { isIP } from 'node:net';
import { UserError } from '../util/errors.js';
import { http } from '../util/node-http.js';

export interface ListenAddr {
  host: string;
  port: number;
}

export interface Health {
  ok: boolean;
  state: string;
  reason?: string;
}

export interface EndpointSources {
  metrics(): Promise<string>;
  contentType: string;
  health(): Health;
}

/** `9464`, `:9464` (loopback), `HOST:9464`, `[::1]:9464`; a bad value is a one-line UserError. */
export function parseListenAddr(flag: string, v: string): ListenAddr {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d+)$/.exec(v) ?? /^()()(\d+)$/.exec(v);
  const port = Number(m?.[3]);
  if (!m || !Number.isInteger(port) || port > 65535) throw new UserError(`invalid ${flag} '${v}': use [HOST:]PORT, e.g. 127.0.0.1:9464`);
  const host = m[1] || m[2] || '127.0.0.1';
  return { host, port };
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host.startsWith('::ffff:127.');
  return false;
}

function listenError(addr: ListenAddr, flag: string, e: NodeJS.ErrnoException): UserError {
  const where = `${addr.host}:${addr.port}`;
  switch (e.code) {
    case 'EADDRINUSE':
      return new UserError(`cannot listen on ${where} (${flag}): the address is in use; pick another port`);
    case 'EACCES':
      return new UserError(`cannot listen on ${where} (${flag}): permission denied; use a port above 1023`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new UserError(`cannot listen on ${where} (${flag}): ${addr.host} is not an address of this host`);
    default:
      return new UserError(`cannot listen on ${where} (${flag}): ${e.message}`);
  }
}

/** Starts the endpoint; resolves once it listens, with the port it got (port 0 picks a free one). */
export async function serveEndpoint(addr: ListenAddr, src: EndpointSources, flag = '--metrics-addr'): Promise<{ server: Server; url: string }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      src.metrics().then(
        (text) => res.writeHead(200, { 'content-type': src.contentType }).end(req.method === 'HEAD' ? undefined : text),
        (e: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${e instanceof Error ? e.message : String(e)}\n`),
      );
    } else if (path === '/healthz') {
      const h = src.health();
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(h) + '\n');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics or /healthz\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(listenError(addr, flag, e)));
    server.listen(addr.port, addr.host, () => resolve());
  });
  const bound = server.address();
  const port = typeof bound === 'object' && bound ? bound.port : addr.port;
  const host = addr.host.includes(':') ? `[${addr.host}]` : addr.host;
  return { server, url: `http://${host}:${port}` };
}
