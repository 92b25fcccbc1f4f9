/**
 * A mounted home as a service, through real mounts: the metrics endpoint (--metrics-addr) and its health
 * answer, homefs_dirty_bytes following writes and seals; a port in use failing the mount with one line;
 * S3 retries logged by the daemon; systemd's notify protocol (READY=1 once the mount is live, watchdog
 * pings, STOPPING=1 on SIGTERM before the final seal) received on a NOTIFY_SOCKET this test listens on;
 * and daemon.log rotated by mount-helper/homefs.logrotate, the daemon reopening it on SIGHUP.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, TestHome, homefs, homefsOk, run, shOk } from './support/homefs-mount.js';
import { forceUnmount, isMounted } from './support/fuse-mount-helpers.js';

const LOGROTATE = fileURLToPath(new URL('../../mount-helper/homefs.logrotate', import.meta.url));
const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

function newHome(name: string): TestHome {
  const h = new TestHome('acme', name);
  homes.push(h);
  return h;
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function freePort(): Promise<number> {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  s.close();
  await once(s, 'close');
  return port;
}

function gauge(text: string, name: string): number {
  const m = new RegExp(`^${name}\\{org="acme",home="[^"]+"\\} (\\S+)$`, 'm').exec(text);
  assert.ok(m, `${name} in:\n${text.slice(0, 2000)}`);
  return Number(m[1]);
}

test('--metrics-addr serves /metrics and /healthz on loopback; homefs_dirty_bytes follows writes and seals', async () => {
  const h = newHome('metrics');
  const mnt = await h.mount({ extra: ['--metrics-addr', '0'] });
  const url = String((await h.status(mnt)).metricsUrl);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const health = await fetch(`${url}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { ok: true, state: 'active' });
  await shOk(`head -c 5000 /dev/urandom > ${mnt}/five.bin`);
  let text = await (await fetch(`${url}/metrics`)).text();
  assert.equal(gauge(text, 'homefs_dirty_bytes'), 5000);
  assert.match(text, /^homefs_fuse_ops_total\{op="create",org="acme",home="metrics"\} \d+$/m);
  assert.ok(gauge(text, 'process_resident_memory_bytes') > 0);
  await homefsOk(['sync', mnt]);
  text = await (await fetch(`${url}/metrics`)).text();
  assert.equal(gauge(text, 'homefs_dirty_bytes'), 0);
  assert.match(text, /^homefs_seals_total\{reason="sync",result="ok",org="acme",home="metrics"\} 1$/m);
  assert.match(text, /^homefs_store_request_seconds_count\{org="acme",home="metrics",op="putIfAbsent"\} \d+$/m);
  assert.match(await homefsOk(['status', mnt, '--metrics']), /^homefs_seals_total\{reason="sync",result="ok",org="acme",home="metrics"\} 1$/m, 'the control socket answers the same registry');
});

test('a --metrics-addr already in use fails the mount with one line and leaves nothing behind; a bad one is refused at once', async () => {
  const h = newHome('port');
  const taken = createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
  const port = (taken.address() as { port: number }).port;
  try {
    const mnt = h.mountpoint();
    const d = h.hostDirs('host1');
    const r = await homefs(['mount', h.ref, mnt, '--store', h.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache, '--metrics-addr', `127.0.0.1:${port}`]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port} \\(--metrics-addr\\): the address is in use; pick another port`));
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.equal(isMounted(mnt), false);
    await h.mount({ mnt });
    const bad = await homefs(['mount', h.ref, h.mountpoint('other'), '--store', h.storeUrl, '--metrics-addr', 'nope']);
    assert.notEqual(bad.code, 0);
    assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    assert.match(bad.stderr, /invalid --metrics-addr 'nope': use \[HOST:\]PORT/);
  } finally {
    taken.close();
  }
});

test('the daemon logs each S3 retry (onRetry wired)', async () => {
  const h = newHome('retries');
  const port = await freePort(); // nothing listens there: every request is refused, a transient error
  const d = h.hostDirs('host1');
  const r = await homefs(['mount', h.ref, h.mountpoint(), '--store', `s3://bucket/p?endpoint=http://127.0.0.1:${port}&region=us-east-1&pathStyle=true`, '--state-dir', d.state, '--cache-dir', d.cache], {
    env: { ...process.env, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_CONFIG_FILE: '/nonexistent', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent' },
  });
  assert.notEqual(r.code, 0);
  const retries = readFileSync(path.join(d.state, 'daemon.log'), 'utf8').split('\n').filter((l) => l.includes('store request failed, retrying')).map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(retries.filter((o) => o.request === 'putIfAbsent').map((o) => o.attempt), [1, 2, 3, 4, 5], 'the create-if-absent probe, retried 5 times');
  assert.equal(retries[0]?.level, 40);
  assert.match(String(retries[0]?.err), /ECONNREFUSED|connect/i);
});

test('Type=notify: READY=1 once the mount is live, watchdog pings, STOPPING=1 on SIGTERM, final seal before exit', async () => {
  const h = newHome('notify');
  const sock = path.join(h.root, 'notify.sock');
  const listener = spawn('python3', ['-u', '-c', [
    'import json, socket, sys',
    's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
    's.bind(sys.argv[1])',
    'print("listening")',
    'while True: print(json.dumps(s.recv(4096).decode()))',
  ].join('\n'), sock], { stdio: ['ignore', 'pipe', 'inherit'] });
  const mnt = h.mountpoint();
  const msgs: string[] = [];
  let mountedAtReady: boolean | undefined;
  let buf = '';
  listener.stdout.setEncoding('utf8');
  listener.stdout.on('data', (c: string) => {
    buf += c;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === 'listening') continue;
      const msg = JSON.parse(line) as string;
      if (msg.includes('READY=1') && mountedAtReady === undefined) mountedAtReady = isMounted(mnt);
      msgs.push(msg);
    }
  });
  const d = h.hostDirs('host1');
  let daemon: ReturnType<typeof spawn> | undefined;
  try {
    await until('the listener', () => (existsSync(sock) ? true : undefined));
    daemon = spawn(process.execPath, [BIN, 'mount', h.ref, mnt, '--store', h.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache, '--foreground'], {
      env: { ...process.env, NOTIFY_SOCKET: sock, WATCHDOG_USEC: '100000' }, stdio: ['ignore', 'ignore', 'ignore'],
    });
    h.mounts.add(mnt);
    const exited = once(daemon, 'exit');
    const ready = await until('READY=1', () => msgs.find((m) => m.startsWith('READY=1')));
    assert.equal(mountedAtReady, true, 'the mount is live when READY=1 arrives');
    assert.match(ready, new RegExp(`^READY=1\nSTATUS=mounted acme/notify at ${mnt}\nMAINPID=${daemon.pid}$`));
    await shOk(`echo sealed-on-stop > ${mnt}/f.txt`);
    await until('two watchdog pings', () => (msgs.filter((m) => m === 'WATCHDOG=1').length >= 2 ? true : undefined));
    daemon.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    assert.equal(code, 0);
    const stopping = msgs.findIndex((m) => m.startsWith('STOPPING=1'));
    assert.ok(stopping > msgs.indexOf(ready), `STOPPING=1 after READY=1: ${JSON.stringify(msgs)}`);
    assert.equal(msgs[stopping], 'STOPPING=1\nSTATUS=securing acme/notify at ' + mnt);
    assert.equal(isMounted(mnt), false);
    h.mounts.delete(mnt);
    assert.equal(await homefsOk(['cat', h.ref, 'f.txt', '--store', h.storeUrl]), 'sealed-on-stop\n', 'the final seal committed before the daemon exited');
  } finally {
    if (daemon && daemon.exitCode === null) daemon.kill('SIGKILL');
    forceUnmount(mnt);
    listener.kill();
  }
});

test('logrotate with mount-helper/homefs.logrotate: the daemon reopens daemon.log on SIGHUP and keeps serving', async () => {
  const h = newHome('rotate');
  const mnt = await h.mount();
  const state = h.hostDirs('host1').state;
  const log = path.join(state, 'daemon.log');
  await shOk(`echo before > ${mnt}/a.txt`);
  const conf = path.join(h.root, 'logrotate.conf');
  const snippet = readFileSync(LOGROTATE, 'utf8');
  assert.ok(snippet.includes('/var/lib/homefs/state/*/*/daemon.log {'), 'the snippet names the default layout');
  writeFileSync(conf, snippet.replace('/var/lib/homefs/state/*/*/daemon.log', log));
  const lr = await run('logrotate', ['-f', '-s', path.join(h.root, 'logrotate.state'), conf]);
  assert.equal(lr.code, 0, lr.stderr);
  assert.ok(existsSync(`${log}.1`), 'rotated to daemon.log.1 (compressed only at the next rotation)');
  const reopened = await until('the reopened log', () => (existsSync(log) && readFileSync(log, 'utf8').includes('log file reopened') ? true : undefined));
  assert.equal(reopened, true);
  assert.match((await homefsOk(['sync', mnt])).trim(), /^[0-9a-f]{64}$/);
  const fresh = readFileSync(log, 'utf8');
  const old = readFileSync(`${log}.1`, 'utf8');
  assert.match(fresh, /"msg":"sealed"/);
  assert.match(old, /"msg":"mounted"/);
  assert.doesNotMatch(old, /"msg":"sealed"|log file reopened/, 'nothing written to the rotated file after SIGHUP');
  // Still serving: active, or parked if this ran slower than the 10 s idle threshold (a loaded machine).
  const st = (await h.status(mnt)).state;
  assert.ok(st === 'active' || st === 'parked', `state ${String(st)}`);
  await h.sleep(mnt);
});
