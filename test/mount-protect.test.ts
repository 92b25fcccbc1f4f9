/**
 * Continuous protection and write-behind through real mounts, with kill -9 (the crash matrix's rows for
 * them): a file written without fsync more than one protection interval before a kill -9 is on a fresh
 * host that takes over, byte-identical, on the file store and on the S3 store; a kill -9 while
 * write-behind is uploading, and one between its upload and any segment that references it, lose
 * nothing on the same state directory and leave the store consistent for a fresh host; a file rewritten
 * again and again while its uploads are in flight reads as its last version everywhere.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefsOk, shOk } from './support/homefs-mount.js';
import { testS3Url } from './support/s3.js';

const homes: TestHome[] = [];
after(async () => {
  for (const h of homes) await h.cleanup();
});

function home(name: string, storeUrl?: string): TestHome {
  const h = new TestHome('acme', name, storeUrl);
  homes.push(h);
  return h;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What the writer above puts in file `f<i>`. */
function expected(f: string): string {
  const i = f.slice(1);
  return Array.from({ length: 3000 }, (_, j) => `f${i}:${j};`).join('');
}

async function protection(h: TestHome, mnt: string): Promise<Record<string, number>> {
  return (await h.status(mnt)).protection as Record<string, number>;
}

async function rpo(storeUrl?: string): Promise<void> {
  const h = home(storeUrl ? 'rpo-s3' : 'rpo-file', storeUrl);
  const mnt = await h.mount(); // default flags: --protect-interval 10s
  await shOk(`mkdir -p ${mnt}/notes && printf 'the only copy\\n' > ${mnt}/notes/today.md && head -c 300000 /dev/urandom > ${mnt}/data.bin`);
  const data = readFileSync(path.join(mnt, 'data.bin'));
  await sleep(12_000);
  await h.kill9(mnt);
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.equal(readFileSync(path.join(fresh, 'notes/today.md'), 'utf8'), 'the only copy\n', 'a note nobody fsync-ed, 12 s before the kill');
  assert.ok(readFileSync(path.join(fresh, 'data.bin')).equals(data), 'byte-identical');
  await h.sleep(fresh);
}

test('RPO: a file written without fsync 12 s before a kill -9 is on a fresh host that takes over (file store)', () => rpo());

test('RPO: the same on the S3 store', async () => rpo(await testS3Url()));

test('kill -9 while write-behind uploads: the same state directory keeps every file, then a fresh host sees them all', async () => {
  const h = home('wb-kill');
  const mnt = await h.mount({ extra: ['--protect-interval', '0'] });
  const files = Array.from({ length: 400 }, (_, i) => `f${i}`);
  // One process writes them all at once; the kill follows at once, while write-behind is still at work.
  await shOk(`mkdir -p ${mnt}/many && python3 -c "
import sys
for i in range(400):
    open(sys.argv[1] + '/f%d' % i, 'wb').write(b''.join(b'f%d:%d;' % (i, j) for j in range(3000)))
" ${mnt}/many`);
  await h.kill9(mnt);
  const again = await h.mount({ extra: ['--protect-interval', '0'] });
  for (const f of files) assert.equal(readFileSync(path.join(again, 'many', f), 'latin1'), expected(f), f);
  await h.sleep(again);
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh') });
  for (const f of files) assert.equal(readFileSync(path.join(fresh, 'many', f), 'latin1'), expected(f), `${f} on a fresh host`);
  await h.sleep(fresh);
});

test('kill -9 between a write-behind upload and the segment that would reference it: nothing lost, the next fsync relies on it', async () => {
  const h = home('wb-gap');
  let mnt = await h.mount({ extra: ['--protect-interval', '0'] });
  await shOk(`head -c 200000 /dev/urandom > ${mnt}/stored.bin`);
  const want = readFileSync(path.join(mnt, 'stored.bin'));
  for (let i = 0; i < 100 && (await protection(h, mnt)).filesStored < 1; i++) await sleep(50);
  const p = await protection(h, mnt);
  assert.ok(p.filesStored >= 1 && p.backlogFiles === 0, `write-behind stored the file: ${JSON.stringify(p)}`);
  await h.kill9(mnt);
  mnt = await h.mount({ extra: ['--protect-interval', '0'] });
  assert.ok(readFileSync(path.join(mnt, 'stored.bin')).equals(want), 'the same state directory reads it');
  assert.equal((await protection(h, mnt)).backlogFiles, 0, 'its stored record survived the kill: nothing to upload again');
  await shOk(`python3 -c "import os; fd=os.open('${mnt}/fsynced', os.O_WRONLY|os.O_CREAT, 0o644); os.write(fd, b'x'); os.fsync(fd)"`);
  await h.kill9(mnt);
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.ok(readFileSync(path.join(fresh, 'stored.bin')).equals(want), 'the fsync made the stored file durable too (whole-home segment)');
  assert.equal(readFileSync(path.join(fresh, 'fsynced'), 'utf8'), 'x');
  await h.sleep(fresh);
});

test('a file rewritten while its uploads are in flight reads as its last version, on the same host and a fresh one', async () => {
  const h = home('wb-rewrite');
  const mnt = await h.mount({ extra: ['--protect-interval', '1s'] });
  for (let v = 1; v <= 30; v++) {
    await shOk(`head -c 50000 /dev/zero | tr '\\0' '${String.fromCharCode(96 + (v % 26) + 1)}' > ${mnt}/busy`);
    await sleep(v % 3 === 0 ? 150 : 5); // now and then long enough for write-behind (and protection) to start on it
  }
  const last = readFileSync(path.join(mnt, 'busy'));
  await sleep(2500);
  await h.kill9(mnt);
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.ok(readFileSync(path.join(fresh, 'busy')).equals(last), 'the fresh host reads the last version');
  await h.sleep(fresh);
});

test('an fsync that left fresh names out is followed by a seal within the interval: a fresh host after kill -9 has them all', async () => {
  const h = home('partial-then-seal');
  // The interval is long enough that no protection run starts while the unpack is written (a run starts
  // once the oldest change is a third of an interval old), even on a slow machine.
  const mnt = await h.mount({ extra: ['--no-write-behind', '--protect-interval', '15s'] });
  const fsync = (name: string, text: string): Promise<string> =>
    shOk(`python3 -c 'import os; fd = os.open("${mnt}/${name}", os.O_WRONLY | os.O_CREAT, 0o644); os.write(fd, b"${text}"); os.fsync(fd)'`);
  await fsync('first', 'sealed'); // a HEAD for the log to follow
  await shOk(`mkdir ${mnt}/unpack && python3 -c 'import sys\nfor i in range(24): open(f"{sys.argv[1]}/f{i}", "w").write(("f%d;" % i) * 300000)' ${mnt}/unpack`);
  await fsync('note', 'fsynced');
  const log = await homefsOk(['log', h.ref, '--store', h.storeUrl]);
  assert.match(log.split('\n')[0] ?? '', /log segment/, 'the fsync wrote a segment (that left fresh names out), not a seal');
  // The partial segment does not count, so protection seals: a third of an interval after the unpack began.
  let newest = '';
  const sealed = /^\s*\d+\s.*\sprotect$/; // a generation's line, not a segment's
  for (let i = 0; i < 150 && !sealed.test(newest); i++) {
    await sleep(100);
    newest = (await homefsOk(['log', h.ref, '--store', h.storeUrl])).split('\n')[0] ?? '';
  }
  assert.match(newest, sealed, 'protection sealed after the partial segment, within the interval');
  await h.kill9(mnt);
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.equal(readFileSync(path.join(fresh, 'note'), 'utf8'), 'fsynced');
  for (let i = 0; i < 24; i++) assert.equal(readFileSync(path.join(fresh, 'unpack', `f${i}`), 'utf8'), `f${i};`.repeat(300000), `unpack/f${i}`);
  await h.sleep(fresh);
});

test('protection flushes the kernel\'s writes only once a file was opened for writing: a mount that is only read spawns no sync', async () => {
  const h = home('kernel-flush');
  const mnt = await h.mount({ extra: ['--protect-interval', '3s'] }); // a flush every second while requests come
  await shOk(`mkdir -p ${mnt}/d && printf 'x\\n' > ${mnt}/d/a`);
  // Requests keep coming until the flushes stop (one flush after the writer's release at least).
  const flushes = async (): Promise<number> => (await protection(h, mnt)).kernelFlushes ?? 0;
  let afterWrite = -1;
  for (let i = 0; i < 10; i++) {
    const n = await flushes();
    if (n >= 1 && n === afterWrite) break;
    afterWrite = n;
    for (let j = 0; j < 12; j++) {
      await shOk(`ls ${mnt}/d > /dev/null`);
      await sleep(100);
    }
  }
  assert.ok(afterWrite >= 1, 'the file written gets a flush');
  // 3 s of reads only (requests keep coming): no flush.
  const until = Date.now() + 3000;
  while (Date.now() < until) {
    await shOk(`cat ${mnt}/d/a > /dev/null && ls -la ${mnt}/d > /dev/null`);
    await sleep(50);
  }
  assert.equal(await flushes(), afterWrite, 'reads alone: no sync -f');
  // A writer held open: flushed again while it is open.
  await shOk(`exec 3>>${mnt}/d/a; printf 'y\\n' >&3; for i in $(seq 20); do ls ${mnt}/d > /dev/null; sleep 0.1; done; exec 3>&-`);
  assert.ok((await flushes()) > afterWrite, 'a writer open: flushed');
  assert.equal(readFileSync(path.join(mnt, 'd/a'), 'utf8'), 'x\ny\n');
  await h.sleep(mnt);
});
