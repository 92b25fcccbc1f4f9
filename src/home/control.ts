/**
 * The daemon's control channel: a Unix socket (mode 0600) per mountpoint, speaking one JSON request and
 * one JSON reply per connection. `sync`, `sleep` and `status` use it. The socket path is derived from the
 * mountpoint's absolute path, so the CLI never has to touch the (possibly hung) mount to find its daemon.
 */
import { createHash } from 'node:crypto';
import { rmSync, chmodSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import { UserError } from '../util/errors.js';
import { makeDirsSync } from '../util/mkdirs.js';

export type ControlRequest = { op: 'sync' } | { op: 'sleep' } | { op: 'status' } | { op: 'metrics' };
export type ControlReply = { ok: true; [k: string]: unknown } | { ok: false; error: string };

export function runtimeDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HOMEFS_RUNTIME_DIR) return env.HOMEFS_RUNTIME_DIR;
  if (process.getuid?.() === 0) return '/run/homefs';
  return join(env.XDG_RUNTIME_DIR || '/tmp', `homefs-${process.getuid?.() ?? 0}`);
}

export function socketPath(mountpoint: string): string {
  const id = createHash('sha256').update(resolve(mountpoint)).digest('hex').slice(0, 20);
  return join(runtimeDir(), `${id}.sock`);
}

export function serveControl(mountpoint: string, handle: (req: ControlRequest) => Promise<ControlReply>): Server {
  const path = socketPath(mountpoint);
  makeDirsSync(runtimeDir(), 0o700);
  rmSync(path, { force: true });
  const server = createServer((conn) => {
    let buf = '';
    conn.setEncoding('utf8');
    conn.on('data', (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      let req: ControlRequest;
      try {
        req = JSON.parse(buf.slice(0, nl)) as ControlRequest;
      } catch {
        conn.end(JSON.stringify({ ok: false, error: 'bad request' }) + '\n');
        return;
      }
      handle(req).then(
        (r) => conn.end(JSON.stringify(r) + '\n'),
        (e: unknown) => conn.end(JSON.stringify({ ok: false, error: e instanceof Error ? e.message : String(e) }) + '\n'),
      );
    });
    conn.on('error', () => undefined);
  });
  server.listen(path, () => chmodSync(path, 0o600));
  return server;
}

/** Sends one request to the daemon serving `mountpoint`. */
export function callControl(mountpoint: string, req: ControlRequest, timeoutMs = 600_000): Promise<ControlReply> {
  const path = socketPath(mountpoint);
  return new Promise((resolvePromise, reject) => {
    const conn = createConnection(path);
    let buf = '';
    const timer = setTimeout(() => {
      conn.destroy();
      reject(new UserError(`the homefs daemon of ${mountpoint} did not answer within ${Math.round(timeoutMs / 1000)}s`));
    }, timeoutMs);
    conn.setEncoding('utf8');
    conn.on('connect', () => conn.write(JSON.stringify(req) + '\n'));
    conn.on('data', (c: string) => (buf += c));
    conn.on('end', () => {
      clearTimeout(timer);
      try {
        resolvePromise(JSON.parse(buf) as ControlReply);
      } catch {
        reject(new UserError(`the homefs daemon of ${mountpoint} sent a malformed reply`));
      }
    });
    conn.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (e.code === 'ENOENT' || e.code === 'ECONNREFUSED') reject(new UserError(`${mountpoint} is not a homefs mount served on this host (no daemon answers)`));
      else reject(new UserError(`cannot reach the homefs daemon of ${mountpoint}: ${e.message}`));
    });
  });
}
