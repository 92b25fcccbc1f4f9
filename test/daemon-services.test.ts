/**
 * The daemon's services in isolation: --metrics-addr parsing and the loopback rule, the HTTP endpoint
 * (/metrics, /healthz, 404, 405, an address in use) on 127.0.0.1, and the sd_notify client's reading of
 * systemd's variables (what it sends, when it pings, that children do not inherit them), the addon's
 * datagram to a path and to an abstract socket, and a failed log reopen. The same paths through a real
 * mount and a real NOTIFY_SOCKET are in mount-service.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import pino from 'pino';
import { HomeMetrics } from '../src/metrics/homefs.js';
import { isLoopback, parseListenAddr, serveEndpoint, type Health } from '../src/metrics/http.js';
import { SystemdNotifier } from '../src/daemon/sd-notify.js';
import { reopenOnHangup } from '../src/daemon/logfile.js';
import { sys } from '../src/daemon/sys.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const quiet = pino({ level: 'silent' });

test('--metrics-addr: [HOST:]PORT, loopback unless a host is given; bad values are one line', () => {
  assert.deepEqual(parseListenAddr('--metrics-addr', '9464'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseListenAddr('--metrics-addr', ':9464'), { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(parseListenAddr('--metrics-addr', '0.0.0.0:9464'), { host: '0.0.0.0', port: 9464 });
  assert.deepEqual(parseListenAddr('--metrics-addr', '[::1]:0'), { host: '::1', port: 0 });
  assert.deepEqual(parseListenAddr('--metrics-addr', 'metrics.internal:80'), { host: 'metrics.internal', port: 80 });
  for (const bad of ['', 'abc', '127.0.0.1', '1.2.3.4:65536', '::1:80', 'host:-1', 'host:9x']) {
    assert.throws(() => parseListenAddr('--metrics-addr', bad), /^UserError: invalid --metrics-addr '.*': use \[HOST:\]PORT/, bad);
  }
  for (const h of ['127.0.0.1', '127.1.2.3', '::1', 'localhost', '::ffff:127.0.0.1']) assert.equal(isLoopback(h), true, h);
  for (const h of ['0.0.0.0', '10.0.0.1', '::', 'example.com', '128.0.0.1']) assert.equal(isLoopback(h), false, h);
});

test('endpoint: /metrics in the Prometheus format, /healthz 200 or 503 with the state, nothing else', async () => {
  const m = new HomeMetrics({ org: 'acme', home: 'a' });
  m.ops.inc('read');
  let health: Health = { ok: false, state: 'waking' };
  const { server, url } = await serveEndpoint({ host: '127.0.0.1', port: 0 }, { metrics: () => m.render(), contentType: m.contentType, health: () => health });
  try {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const metrics = await fetch(`${url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(await metrics.text(), /^homefs_fuse_ops_total\{op="read",org="acme",home="a"\} 1$/m);
    let h = await fetch(`${url}/healthz`);
    assert.equal(h.status, 503);
    assert.deepEqual(await h.json(), { ok: false, state: 'waking' });
    health = { ok: true, state: 'active' };
    h = await fetch(`${url}/healthz`);
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { ok: true, state: 'active' });
    assert.equal((await fetch(`${url}/`)).status, 404);
    assert.equal((await fetch(`${url}/metrics`, { method: 'POST' })).status, 405);
  } finally {
    server.close();
  }
});

test('endpoint: an address in use is one line naming the address and the fix', async () => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  const port = (taken.address() as { port: number }).port;
  try {
    await assert.rejects(
      serveEndpoint({ host: '127.0.0.1', port }, { metrics: async () => '', contentType: 'text/plain', health: () => ({ ok: true, state: 'active' }) }),
      { name: 'UserError', message: `cannot listen on 127.0.0.1:${port} (--metrics-addr): the address is in use; pick another port` },
    );
  } finally {
    taken.close();
  }
});

test('sd_notify: READY, STOPPING and watchdog pings go to NOTIFY_SOCKET; children inherit none of it', () => {
  const env: NodeJS.ProcessEnv = { NOTIFY_SOCKET: '/run/x/notify', WATCHDOG_USEC: '4000000', WATCHDOG_PID: String(process.pid), OTHER: '1' };
  const n = SystemdNotifier.fromEnv(quiet, env);
  assert.deepEqual(env, { OTHER: '1' }, 'the variables are removed once read');
  assert.equal(n.socketPath, '/run/x/notify');
  assert.equal(n.watchdogMs, 2000, 'pings at half the watchdog period');
  const sent: string[] = [];
  const spy = new SystemdNotifier(n.socketPath, n.watchdogMs, quiet, (p, msg) => {
    sent.push(`${p}|${msg}`);
    return 0;
  });
  spy.ready('mounted acme/a at /m');
  spy.stopping('securing acme/a');
  spy.close();
  assert.deepEqual(sent, [`/run/x/notify|READY=1\nSTATUS=mounted acme/a at /m\nMAINPID=${process.pid}`, '/run/x/notify|STOPPING=1\nSTATUS=securing acme/a']);

  const other = SystemdNotifier.fromEnv(quiet, { NOTIFY_SOCKET: '@abstract', WATCHDOG_USEC: '4000000', WATCHDOG_PID: '1' });
  assert.equal(other.watchdogMs, undefined, 'a watchdog meant for another pid is not ours');
  const none = SystemdNotifier.fromEnv(quiet, {});
  assert.equal(none.enabled, false);
  none.ready('x'); // without NOTIFY_SOCKET nothing is sent and nothing fails
});

test('sd_notify: a failed send is logged once and never thrown', () => {
  const lines: string[] = [];
  const log = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
  const n = new SystemdNotifier('/nonexistent/notify', undefined, log, () => -111);
  n.ready('a');
  n.stopping('b');
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? '', /"err":"ECONNREFUSED".*cannot notify systemd through NOTIFY_SOCKET/);
});

test('homefs_sys.notify: one datagram to a path socket and to an abstract one; errors as negative errno', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'homefs-notify-'));
  const sock = path.join(dir, 'notify.sock');
  const abstract = `homefs-test-${process.pid}`;
  const listener = spawn('python3', ['-u', '-c', [
    'import socket, sys',
    'a = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); a.bind(sys.argv[1])',
    'b = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); b.bind("\\0" + sys.argv[2])',
    'print("listening")',
    'print(repr(a.recv(4096).decode())); print(repr(b.recv(4096).decode()))',
  ].join('\n'), sock, abstract], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let out = '';
    listener.stdout.setEncoding('utf8');
    listener.stdout.on('data', (c: string) => (out += c));
    while (!out.includes('listening')) await new Promise((r) => setTimeout(r, 10));
    assert.equal(sys().notify(sock, 'READY=1\nSTATUS=one'), 0);
    assert.equal(sys().notify(`@${abstract}`, 'WATCHDOG=1'), 0);
    const [code] = (await once(listener, 'exit')) as [number];
    assert.equal(code, 0);
    assert.equal(out, "listening\n'READY=1\\nSTATUS=one'\n'WATCHDOG=1'\n");
    assert.equal(sys().notify(path.join(dir, 'missing.sock'), 'READY=1'), -2, 'ENOENT');
    assert.equal(sys().notify('relative.sock', 'READY=1'), -22, 'EINVAL: neither a path nor abstract');
  } finally {
    listener.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('log reopen: a failed reopen on SIGHUP is logged and the old log kept', () => {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => lines.push(s) });
  const calls: string[] = [];
  const stop = reopenOnHangup('/nonexistent/daemon.log', log, (p) => {
    calls.push(p);
    return -2;
  });
  try {
    process.emit('SIGHUP', 'SIGHUP');
  } finally {
    stop();
  }
  process.emit('SIGHUP', 'SIGHUP');
  assert.deepEqual(calls, ['/nonexistent/daemon.log'], 'one reopen, none after stop()');
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? '', /"err":"ENOENT".*cannot reopen the log file; still writing to the old one/);
});
