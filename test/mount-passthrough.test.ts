/**
 * FUSE passthrough through real mounts (the daemon runs as root here, so `--fuse-passthrough auto`
 * engages it where the kernel offers it): the kernel writes files whose bytes are local straight into
 * their upper files, and the daemon must still know what they hold. Checked: a file open for writing
 * reports the size and times of what was written; a quota turns passthrough off and is enforced; a file
 * opened read-only before its copy-up and then for writing is served right (the kernel forbids mixing
 * the two kinds of opens on one inode); mmap writes and O_DIRECT reach a seal; a kill -9 during passthrough writes
 * loses nothing on the same state directory and nothing older than the protection interval on a
 * fresh host; and `--fuse-passthrough off` keeps the writeback path.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefs, homefsOk, sh, shOk } from './support/homefs-mount.js';

const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

function home(name: string): TestHome {
  const h = new TestHome('acme', name);
  homes.push(h);
  return h;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface FuseReport { passthrough: string; opens: { passthrough: number; cached: number; refused: number } | null; liveFiles: number }

async function fuse(h: TestHome, mnt: string): Promise<FuseReport> {
  return (await h.status(mnt)).fuse as FuseReport;
}

let offered = false;
before(async () => {
  // Whether this kernel grants passthrough at all (6.9+ built with it); the tests below need it.
  const h = home('probe');
  const mnt = await h.mount();
  await shOk(`echo x > ${mnt}/probe`);
  offered = (await fuse(h, mnt)).passthrough === 'on';
  await h.sleep(mnt);
  assert.ok(offered, 'this kernel (6.9+) should grant FUSE passthrough to a root daemon');
});

test('a file open for writing through passthrough reports what was written: size, mtime, then an explicit mtime', async () => {
  const h = home('attrs');
  const mnt = await h.mount();
  const out = await shOk(`python3 -c "
import os
p = '${mnt}/f'
fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b'x' * 100000)
a = os.stat(p).st_size
os.write(fd, b'y' * 5)
b = os.fstat(fd).st_size
os.utime(fd, ns=(1_000_000_000_123, 2_000_000_000_456))
c = os.stat(p).st_mtime_ns
os.close(fd)
print(a, b, c, os.stat(p).st_size, os.stat(p).st_mtime_ns)
"`);
  assert.equal(out.trim(), '100000 100005 2000000000456 100005 2000000000456');
  const f = await fuse(h, mnt);
  assert.ok((f.opens?.passthrough ?? 0) >= 1, `the open went through passthrough: ${JSON.stringify(f)}`);
  assert.equal(f.liveFiles, 0, 'no file is open for writing any more');
  await homefsOk(['sync', mnt]);
  await h.sleep(mnt);
  const again = await h.mount();
  const st = statSync(path.join(again, 'f'), { bigint: true });
  assert.equal(st.size, 100005n);
  assert.equal(st.mtimeNs, 2_000_000_000_456n, 'the explicit mtime survives the writes before it and the seal');
  await h.sleep(again);
});

test('a quota turns passthrough off, and a write past it still fails with ENOSPC', async () => {
  const h = home('quota');
  const mnt = await h.mount({ extra: ['--quota', '1M'] });
  const f = await fuse(h, mnt);
  assert.match(f.passthrough, /^off: a quota is set/);
  const r = await sh(`head -c 2000000 /dev/zero > ${mnt}/big && sync ${mnt}/big`);
  assert.notEqual(r.code, 0, 'writing 2 MB into a 1 MiB quota fails');
  assert.match(r.stderr, /No space left on device/);
  await h.sleep(mnt);
});

test('a file opened read-only before its copy-up, then for writing: both opens served by the daemon, then passthrough again', async () => {
  const h = home('mixed');
  let mnt = await h.mount();
  await shOk(`printf 'sealed bytes\\n' > ${mnt}/cfg`);
  await h.sleep(mnt);
  mnt = await h.mount({ host: 'other', mnt: h.mountpoint('other') }); // cfg is clean here: its bytes only in its sealed block
  const out = await shOk(`python3 -c "
import os
p = '${mnt}/cfg'
r = os.open(p, os.O_RDONLY)
first = os.read(r, 100)
w = os.open(p, os.O_WRONLY | os.O_APPEND)
os.write(w, b'appended\\n')
os.close(w)
os.lseek(r, 0, 0)
second = os.read(r, 100)
os.close(r)
third = open(p, 'rb').read()
print(repr(first), repr(second), repr(third))
"`);
  assert.equal(out.trim(), `b'sealed bytes\\n' b'sealed bytes\\nappended\\n' b'sealed bytes\\nappended\\n'`);
  const f = await fuse(h, mnt);
  assert.ok((f.opens?.cached ?? 0) >= 2, `the two overlapping opens were cached: ${JSON.stringify(f)}`);
  assert.ok((f.opens?.passthrough ?? 0) >= 1, `the later open went through passthrough: ${JSON.stringify(f)}`);
  // Now passthrough writes, then a cached view must not serve stale pages: covered by reading back.
  await shOk(`printf 'rewritten\\n' > ${mnt}/cfg`);
  assert.equal(readFileSync(path.join(mnt, 'cfg'), 'utf8'), 'rewritten\n');
  await h.sleep(mnt);
});

test('mmap writes to a passthrough file reach the next seal', async () => {
  const h = home('mmap');
  const mnt = await h.mount();
  await shOk(`python3 -c "
import mmap, os
p = '${mnt}/m'
fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192)
m[0:5] = b'hello'
m[8000:8005] = b'world'
m.flush()
m.close()
os.close(fd)
"`);
  const snap = (await homefsOk(['sync', mnt])).trim();
  const cat = await homefsOk(['cat', `acme/mmap@${snap}`, 'm', '--store', h.storeUrl]);
  assert.equal(cat.length, 8192);
  assert.equal(cat.slice(0, 5), 'hello');
  assert.equal(cat.slice(8000, 8005), 'world');
  await h.sleep(mnt);
});

test('kill -9 during passthrough writes: a fresh host has what was written more than a protection interval before', async () => {
  const h = home('kill');
  const mnt = await h.mount({ extra: ['--protect-interval', '3s'] });
  // A writer that keeps its file open: 200 KB now, then more every 100 ms until killed.
  const writer = sh(`python3 -c "
import os, time
fd = os.open('${mnt}/log', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'a' * 200000)
open('${mnt}/started', 'w').close()
while not os.path.exists('${h.root}/stop'):
    time.sleep(0.1)
    os.write(fd, b'b' * 1000)
"`, { timeoutMs: 120_000 });
  for (let i = 0; i < 100 && (await sh(`test -e ${mnt}/started`)).code !== 0; i++) await sleep(100);
  await sleep(6000); // two protection intervals
  const before = statSync(path.join(mnt, 'log')).size;
  assert.ok(before >= 200000 + 30000, `the writer kept writing (${before} bytes)`);
  await h.kill9(mnt);
  await shOk(`touch ${h.root}/stop`); // (its passthrough writes still land in the upper file: the kernel needs no daemon for them)
  await writer;
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  const onFresh = readFileSync(path.join(fresh, 'log'));
  assert.ok(onFresh.length >= 200000, `a fresh host has what was written more than an interval before the kill (${onFresh.length} bytes)`);
  assert.ok(onFresh.subarray(0, 200000).every((b) => b === 0x61) && onFresh.subarray(200000).every((b) => b === 0x62), 'its bytes are the writer\'s');
  await h.sleep(fresh);
});

test('kill -9 with a passthrough writer: a remount of the same state takes the size from the upper file', async () => {
  const h = home('same');
  const mnt = await h.mount({ extra: ['--protect-interval', '0', '--no-write-behind'] });
  const writer = sh(`python3 -c "
import os, time
fd = os.open('${mnt}/log', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'z' * 123457)
open('${mnt}/started', 'w').close()
while not os.path.exists('${h.root}/stop'):
    time.sleep(0.1)
"`, { timeoutMs: 120_000 });
  for (let i = 0; i < 100 && (await sh(`test -e ${mnt}/started`)).code !== 0; i++) await sleep(100);
  await h.kill9(mnt);
  await shOk(`touch ${h.root}/stop`);
  await writer;
  const again = await h.mount({ extra: ['--protect-interval', '0'] });
  const data = readFileSync(path.join(again, 'log'));
  assert.equal(data.length, 123457);
  assert.ok(data.every((b) => b === 0x7a));
  await h.sleep(again);
});

test('O_DIRECT on a passthrough file: aligned reads and writes reach the upper file and the next seal', async () => {
  const h = home('direct');
  const mnt = await h.mount();
  const out = await shOk(`python3 -c "
import mmap, os
p = '${mnt}/d'
fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)
buf = mmap.mmap(-1, 8192)
buf.write(b'D' * 8192)
print(os.pwritev(fd, [buf], 0))
back = mmap.mmap(-1, 4096)
print(os.preadv(fd, [back], 4096), bytes(back[:3]))
os.close(fd)
print(os.stat(p).st_size)
"`);
  assert.equal(out.trim(), "8192\n4096 b'DDD'\n8192");
  const snap = (await homefsOk(['sync', mnt])).trim();
  const cat = await homefsOk(['cat', `acme/direct@${snap}`, 'd', '--store', h.storeUrl]);
  assert.equal(cat, 'D'.repeat(8192));
  await h.sleep(mnt);
});

test('--fuse-passthrough off keeps the writeback cache and the daemon write path', async () => {
  const h = home('off');
  const mnt = await h.mount({ extra: ['--fuse-passthrough', 'off'] });
  await shOk(`head -c 100000 /dev/urandom > ${mnt}/x && cat ${mnt}/x > /dev/null`);
  const f = await fuse(h, mnt);
  assert.equal(f.passthrough, 'off: --fuse-passthrough off');
  assert.equal(f.opens, null);
  await h.sleep(mnt);
  const bad = await homefs(['mount', 'acme/off', h.mountpoint('bad'), '--store', h.storeUrl, '--fuse-passthrough', 'sometimes']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /invalid --fuse-passthrough 'sometimes': use auto or off/);
});
