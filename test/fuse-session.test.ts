/**
 * The FUSE binding's session behaviour: a SIGKILLed server leaves no accessor hanging and the mountpoint can
 * be mounted again; an answer delayed by one lookup does not block the directory (FUSE_PARALLEL_DIROPS);
 * interrupts reach the handler; missing ops answer ENOSYS; external unmounts and signals end the server
 * cleanly; mount errors are one clear line; the awake wait for the next request (spinUs) answers everything
 * and serves requests itself (none without it);
 * the idle pollers (idlePollUs) are idle-priority threads that live exactly as long as their mount.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fuseAvailable, startMemfsServer, tempMountpoint, isMounted, waitFor, forceUnmount } from './support/fuse-mount-helpers.js';
import { STATS_XATTR } from './support/memfs.js';
import { mount } from '../src/fuse/index.js';
import type { Ops } from '../src/fuse/types.js';

const skip = fuseAvailable();

function procState(pid: number): string | undefined {
  try { return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0]; } catch { return undefined; }
}
function exitOf(child: ReturnType<typeof spawn>): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode); else child.once('exit', (c) => resolve(c));
  });
}

test('kill -9 of the server: the blocked accessor is released, the mount goes away, remount works', { skip }, async () => {
  const m = tempMountpoint('kill');
  const srv = await startMemfsServer(m, { fs: { slowPrefix: 'slow', slowMs: 30000 } });
  try {
    const accessor = spawn('stat', [path.join(m, 'slow-file')], { stdio: 'ignore' });
    const done = exitOf(accessor);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(accessor.exitCode, null, 'the accessor is waiting for the slow lookup');
    process.kill(srv.pid, 'SIGKILL');
    const t0 = Date.now();
    const code = await Promise.race([done, new Promise<string>((r) => setTimeout(() => r('hung'), 5000))]);
    assert.notEqual(code, 'hung', `accessor still there, state ${procState(accessor.pid ?? 0)}`);
    assert.notEqual(code, 0, 'the lookup failed (connection gone)');
    assert.ok(Date.now() - t0 < 5000);
    if (!(await waitFor(() => !isMounted(m), 5000))) {
      const ps = spawnSync('sh', ['-c', 'ps -eo pid,ppid,stat,wchan:30,args | grep -E "fusermount|stat |memfs" | grep -v grep; for p in $(pgrep fusermount3); do echo $p; cat /proc/$p/stack; ls -l /proc/$p/fd; done'], { encoding: 'utf8' }).stdout;
      assert.fail(`auto_unmount did not remove the dead mount: ${ps}`);
    }
    const again = await startMemfsServer(m);
    try {
      fs.writeFileSync(path.join(m, 'after'), 'remounted');
      assert.equal(fs.readFileSync(path.join(m, 'after'), 'utf8'), 'remounted');
    } finally { await again.stop(); }
    assert.equal(isMounted(m), false);
  } finally { await srv.stop(); forceUnmount(m); }
});

test('waiting awake for the next request (spinUs): every request is answered, a timer\'s late answer too', { skip }, async () => {
  // The longest wait the binding allows, so that a wait that swallowed the loop's other work (the timer
  // that answers the slow lookup, a reply) would show as a hang, not as a slower run.
  const m = tempMountpoint('spin');
  const srv = await startMemfsServer(m, { fs: { slowPrefix: 'slow', slowMs: 200 }, mount: { spinUs: 1000 } });
  try {
    for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(m, `f${i}`), `file ${i}\n`);
    for (let i = 0; i < 300; i++) assert.equal(fs.readFileSync(path.join(m, `f${i}`), 'utf8'), `file ${i}\n`);
    const t0 = Date.now();
    const r = spawnSync('stat', [path.join(m, 'slow-x')], { encoding: 'utf8', timeout: 5000 });
    assert.equal(r.signal, null, 'the lookup answered by a timer came back');
    assert.match(r.stderr, /No such file/);
    assert.ok(Date.now() - t0 >= 190, 'it was the slow lookup');
    await new Promise((res) => setTimeout(res, 100)); // idle: the next request wakes a sleeping loop
    assert.equal(fs.readdirSync(m).filter((n) => n.startsWith('f')).length, 300);
    const { served, waitEnds } = statsOf(m);
    assert.ok(served.awake > 0 && served.woken > 0, `requests served in the wait and after wake-ups: ${JSON.stringify(served)}`);
    assert.deepEqual(Object.keys(waitEnds).sort(), ['loop_due', 'loop_ready', 'no_request', 'preempted', 'served_max', 'skipped']);
    // The pauses between the file loops, the slow lookup and the idle 100 ms: waits that found no request.
    assert.ok(waitEnds.no_request > 0, `waits ended for want of a request: ${JSON.stringify(waitEnds)}`);
  } finally { await srv.stop(); }
  const m2 = tempMountpoint('nospin');
  const srv2 = await startMemfsServer(m2, { mount: { spinUs: 0 } });
  try {
    for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(m2, `f${i}`), `file ${i}\n`);
    const { served, waitEnds } = statsOf(m2);
    assert.equal(served.awake, 0, 'no awake wait: every request after a wake-up');
    assert.equal(Object.values(waitEnds).reduce((a, b) => a + b, 0), 0, `no wait began or was skipped: ${JSON.stringify(waitEnds)}`);
  } finally { await srv2.stop(); }
});

/** The serving process's counts of requests served in the awake wait and after wake-ups, and of why its waits ended (memfs's stats xattr). */
function statsOf(m: string): { served: { awake: number; woken: number }; waitEnds: Record<string, number> } {
  const r = spawnSync('python3', ['-c', `import os,sys; print(os.getxattr(sys.argv[1], '${STATS_XATTR}').decode())`, m], { encoding: 'utf8' });
  return JSON.parse(r.stdout) as { served: { awake: number; woken: number }; waitEnds: Record<string, number> };
}

/** Threads of `pid` under SCHED_IDLE (policy 5, field 41 of /proc/PID/task/TID/stat). */
function idleThreads(pid: number | 'self'): number {
  let n = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const fields = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      if (fields[41 - 3] === '5') n++;
    } catch { /* the thread ended meanwhile */ }
  }
  return n;
}

test('idle pollers (idlePollUs): one idle-priority thread per other CPU (at most 3) while mounted, none after', { skip }, async () => {
  const want = Math.min(os.availableParallelism() - 1, 3);
  const m = tempMountpoint('idlepoll');
  const srv = await startMemfsServer(m, { mount: { spinUs: 50, idlePollUs: 1000 } });
  try {
    for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(m, `f${i}`), `file ${i}\n`);
    for (let i = 0; i < 300; i++) assert.equal(fs.readFileSync(path.join(m, `f${i}`), 'utf8'), `file ${i}\n`);
    assert.equal(idleThreads(srv.pid), want, 'idle-priority threads of the serving process');
  } finally { await srv.stop(); }
  // In this process (nothing here touches the mountpoint): the threads go with the unmount.
  const m2 = tempMountpoint('idlepoll2');
  const before = idleThreads('self');
  const session = mount(m2, {} as Ops, { idlePollUs: 50 });
  try {
    assert.equal(idleThreads('self') - before, want, 'pollers started with the mount');
  } finally { session.unmount(); fs.rmSync(m2, { recursive: true, force: true }); }
  assert.equal(idleThreads('self'), before, 'pollers joined at unmount');
});

test('a lookup answered later does not block other lookups in the same directory', { skip }, async () => {
  const m = tempMountpoint('pardir');
  const srv = await startMemfsServer(m, { fs: { slowPrefix: 'slow', slowMs: 3000, timeout: 0 } });
  try {
    fs.writeFileSync(path.join(m, 'fast'), 'f');
    const slow = spawn('stat', [path.join(m, 'slow-x')], { stdio: 'ignore' });
    const slowDone = exitOf(slow);
    await new Promise((r) => setTimeout(r, 200));
    const t0 = process.hrtime.bigint();
    assert.equal(fs.readFileSync(path.join(m, 'fast'), 'utf8'), 'f');
    assert.equal(fs.existsSync(path.join(m, 'missing')), false);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    // Serialized behind the slow lookup they would take ~2.8 s; the bound leaves room for a loaded machine.
    assert.ok(ms < 1500, `lookups next to a pending one took ${ms.toFixed(0)} ms`);
    assert.equal(slow.exitCode, null, 'the slow lookup is still pending');
    assert.notEqual(await slowDone, 0);  // slow-x does not exist: ENOENT after 3 s
  } finally { await srv.stop(); }
});

test('an interrupted request reaches the interrupt handler and is still answered', { skip }, async () => {
  const m = tempMountpoint('intr');
  const srv = await startMemfsServer(m, { fs: { slowPrefix: 'slow', slowMs: 800 } });
  try {
    const r = spawnSync('python3', ['-c', `
import os, signal, sys
signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 0.2)
try: os.stat(sys.argv[1]); print('found')
except FileNotFoundError: print('ENOENT')
print(os.getxattr(os.path.dirname(sys.argv[1]), '${STATS_XATTR}').decode())`, path.join(m, 'slow-y')], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 0, r.stderr);
    const [answer, json] = r.stdout.trim().split('\n');
    assert.equal(answer, 'ENOENT');
    const st = JSON.parse(json ?? '{}') as { interrupts: number };
    assert.ok(st.interrupts >= 1, `interrupts seen: ${st.interrupts}`);
  } finally { await srv.stop(); }
});

test('ops missing from the handler object answer ENOSYS (EOPNOTSUPP for xattrs)', { skip }, async () => {
  const m = tempMountpoint('enosys');
  const srv = await startMemfsServer(m, { omit: ['mknod', 'setxattr', 'getxattr', 'symlink'] });
  try {
    const r = spawnSync('python3', ['-c', `
import os, sys, errno
m = sys.argv[1]
def err(fn):
    try: fn(); return 'ok'
    except OSError as e: return errno.errorcode[e.errno]
print(err(lambda: os.mkfifo(os.path.join(m, 'p'))), err(lambda: os.symlink('t', os.path.join(m, 's'))),
      err(lambda: os.setxattr(m, 'user.x', b'1')), err(lambda: os.mkdir(os.path.join(m, 'd'))))`, m], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'ENOSYS ENOSYS ENOTSUP ok');
  } finally { await srv.stop(); }
});

test('external unmount (fusermount3 -u) ends the server through onUnmounted', { skip }, async () => {
  const m = tempMountpoint('ext');
  const srv = await startMemfsServer(m);
  const exited = exitOf(srv.child);
  assert.equal(spawnSync('fusermount3', ['-u', m]).status, 0);
  assert.equal(await exited, 0);
  assert.match(srv.output(), /unmounted connection closed/);
  assert.equal(isMounted(m), false);
  await srv.stop();
});

test('SIGTERM and SIGINT unmount and then end the server with that signal', { skip }, async () => {
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    const m = tempMountpoint('sig');
    const srv = await startMemfsServer(m);
    assert.ok(isMounted(m));
    const ended = new Promise<string | null>((r) => srv.child.once('exit', (_c, s) => r(s)));
    srv.child.kill(sig);
    assert.equal(await ended, sig);
    assert.equal(isMounted(m), false, `${sig} left the mount behind`);
    await srv.stop();
  }
});

test('a handler that throws: the caller gets EIO, the server crashes and its mount is gone', { skip }, async () => {
  const m = tempMountpoint('crash');
  const srv = await startMemfsServer(m, { fs: { throwOnName: 'boom' } });
  const exited = exitOf(srv.child);
  const r = spawnSync('stat', [path.join(m, 'boom')], { encoding: 'utf8', timeout: 10000 });
  assert.match(r.stderr, /Input\/output error/);
  assert.equal(await exited, 1);
  assert.match(srv.output(), /asked to crash on lookup of boom/);
  assert.equal(isMounted(m), false);
  await srv.stop();
});

test('writeback cache: writes, appends, truncation and mmap stay coherent', { skip }, async () => {
  const m = tempMountpoint('wb');
  const srv = await startMemfsServer(m, { mount: { writebackCache: true } });
  try {
    const f = path.join(m, 'wb');
    fs.writeFileSync(f, 'abc');
    fs.appendFileSync(f, 'def');
    assert.equal(fs.readFileSync(f, 'utf8'), 'abcdef');
    fs.truncateSync(f, 2);
    assert.equal(fs.readFileSync(f, 'utf8'), 'ab');
    const r = spawnSync('python3', ['-c', `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR); os.ftruncate(fd, 4096)
mm = mmap.mmap(fd, 4096); mm[0:2] = b'XY'; mm.flush(); mm.close(); os.fsync(fd); os.close(fd)`, f], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const data = fs.readFileSync(f);
    assert.equal(data.length, 4096);
    assert.equal(data.subarray(0, 2).toString(), 'XY');
  } finally { await srv.stop(); }
});

test('a write payload stays its request\'s until answered: 40 writes held at once, every byte lands', { skip }, async () => {
  // Each write is held until 40 wait (memfs writeBatch), then read: a receive buffer reused before its
  // write was answered would show another write's bytes. 40 exceed the pool, so some payloads are copies.
  const m = tempMountpoint('wbuf');
  const srv = await startMemfsServer(m, { fs: { writeBatch: 40 } });
  try {
    const r = spawnSync('python3', ['-c', `
import hashlib, os, sys, threading
def chunk(t, i): return hashlib.sha256(b'%d-%d' % (t, i)).digest() * 8192  # 256 KiB
def writer(t):
    fd = os.open(os.path.join(sys.argv[1], 'f%d' % t), os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(3): assert os.pwrite(fd, chunk(t, i), i * 262144) == 262144
    os.close(fd)
ts = [threading.Thread(target=writer, args=(t,)) for t in range(40)]
for x in ts: x.start()
for x in ts: x.join()
bad = [t for t in range(40) if open(os.path.join(sys.argv[1], 'f%d' % t), 'rb').read() != b''.join(chunk(t, i) for i in range(3))]
print(bad)`, m], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), '[]', 'files whose bytes differ from what was written');
    const py = spawnSync('python3', ['-c', `import os,sys; print(os.getxattr(sys.argv[1], '${STATS_XATTR}').decode())`, m], { encoding: 'utf8' });
    const wb = (JSON.parse(py.stdout) as { writeBuffers: { lent: number; copied: number; pool: number; maxLent: number } }).writeBuffers;
    assert.ok(wb.lent >= 3 * (40 - wb.pool), `payloads passed as views: ${JSON.stringify(wb)}`);
    assert.equal(wb.maxLent, wb.pool, `every pool buffer was lent at once: ${JSON.stringify(wb)}`);
    assert.ok(wb.copied >= 3 * (40 - wb.pool), `payloads copied once the pool was empty: ${JSON.stringify(wb)}`);
  } finally { await srv.stop(); }
});

test('mount errors are one clear line', { skip }, (t) => {
  const dir = tempMountpoint('err');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'file');
  fs.writeFileSync(f, '');
  const ops = {} as Ops;
  assert.throws(() => mount(f, ops), /^Error: cannot mount on .*file: not a directory$/);
  assert.throws(() => mount(path.join(f, 'x', 'y'), ops), /cannot mount on .*: (no such directory|.*ENOTDIR.*)/);
  assert.throws(() => mount('/proc', ops), /cannot mount on \/proc: busy \(already a mount point; .*fusermount3 -u \/proc\)/);
  for (const re of [/not a directory/]) {
    try { mount(f, ops); } catch (e) { assert.match((e as Error).message, re); assert.ok(!(e as Error).message.includes('\n')); }
  }
});
