/**
 * The mounted home end to end, through a real FUSE mount driven from child processes: a fresh home,
 * POSIX basics agents rely on, sync/sleep, and a fresh host seeing exactly the committed snapshot.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestHome, homefs, homefsOk, shOk } from './support/homefs-mount.js';

let h: TestHome;
before(() => {
  h = new TestHome('acme', 'basic');
});
after(async () => {
  await h.cleanup();
});

test('a home with no HEAD mounts empty, keeps writes, and a fresh host sees the sealed state', async () => {
  const mnt = await h.mount();
  assert.equal((await shOk(`ls -A ${mnt}`)).trim(), '');
  await shOk(`cd ${mnt}
    printf 'hello\\n' > a.txt
    mkdir -p d/e && printf x > d/e/f
    ln -s a.txt lnk && ln -s nowhere dangling
    ln a.txt hard
    mkfifo fifo
    head -c 20000000 /dev/urandom > big.bin
    chmod 4751 d/e/f
    touch -m -d '2001-02-03 04:05:06.123456789' a.txt
    setfattr -n user.note -v bonjour d/e/f
    printf 'caf\\xc3\\xa9' > 'café ☕.txt'`);
  const st = await h.status(mnt);
  assert.equal(st.state, 'active');
  assert.ok(Number(st.dirtyFiles) >= 4, `dirty files: ${String(st.dirtyFiles)}`);
  const sum = (await shOk(`cd ${mnt} && sha256sum big.bin a.txt d/e/f 'café ☕.txt'`)).trim();
  const snap = (await homefsOk(['sync', mnt])).trim();
  assert.match(snap, /^[0-9a-f]{64}$/);
  const st2 = await h.status(mnt);
  assert.equal(st2.dirtyFiles, 0);
  assert.equal(st2.head, snap);
  assert.equal(await h.sleep(mnt), snap, 'sleep with nothing new keeps the same snapshot');

  const mnt2 = await h.mount({ host: 'host2', mnt: h.mountpoint('mnt2') });
  assert.equal((await shOk(`cd ${mnt2} && sha256sum big.bin a.txt d/e/f 'café ☕.txt'`)).trim(), sum);
  const meta = await shOk(`cd ${mnt2} && stat -c '%n %F %a %s %h' a.txt hard lnk dangling fifo d/e/f | sort && readlink dangling && stat -c %y a.txt && getfattr --only-values -n user.note d/e/f`);
  assert.match(meta, /^a\.txt regular file 644 6 2$/m);
  assert.match(meta, /^hard regular file 644 6 2$/m);
  assert.match(meta, /^fifo fifo 644 0 1$/m);
  assert.match(meta, /^d\/e\/f regular file 4751 1 1$/m);
  assert.match(meta, /^dangling symbolic link 777 7 1$/m);
  assert.match(meta, /2001-02-03 04:05:06\.123456789/);
  assert.match(meta, /bonjour/);
  assert.equal((await shOk(`stat -c %i ${mnt2}/a.txt ${mnt2}/hard | uniq | wc -l`)).trim(), '1', 'hard links share an inode');
  await h.sleep(mnt2);
});

test('POSIX basics inside the mount: rename, unlink of an open file, truncate, O_APPEND, sparse files, stable inodes', async () => {
  const mnt = await h.mount({ host: 'host3', mnt: h.mountpoint('mnt3') });
  const out = await shOk(`cd ${mnt}
    mkdir -p r && cd r
    echo one > x && echo two > y
    i1=$(stat -c %i x)
    mv x z && [ "$(stat -c %i z)" = "$i1" ] && echo stable-ino
    mv -f y z && cat z
    mkdir -p dir1/sub && echo s > dir1/sub/f && mv dir1 dir2 && cat dir2/sub/f
    exec 3<z; rm z; cat <&3; exec 3<&-
    printf 0123456789 > t && truncate -s 4 t && cat t && echo
    truncate -s 3000000 t && stat -c %s t && [ "$(head -c 4 t)" = 0123 ] && echo sparse-ok
    echo a > ap && echo b >> ap && cat ap
    dd if=/dev/zero of=holes bs=1 count=1 seek=9999999 status=none && stat -c %s holes
    ( set +e; mkdir dir2 2>/dev/null; echo "mkdir-exists=$?" )
    ( set +e; rmdir dir2 2>/dev/null; echo "rmdir-nonempty=$?" )
    ls`);
  assert.match(out, /stable-ino/);
  assert.match(out, /^two$/m);
  assert.match(out, /^s$/m);
  assert.match(out, /^0123$/m);
  assert.match(out, /sparse-ok/);
  assert.match(out, /^a\nb$/m);
  assert.match(out, /^10000000$/m);
  assert.match(out, /mkdir-exists=1/);
  assert.match(out, /rmdir-nonempty=1/);
  await h.sleep(mnt);
});

test('a second read-write mount of the same home is refused while the lease is live', async () => {
  const mnt = await h.mount({ host: 'hostA', mnt: h.mountpoint('lease1') });
  const second = h.mountpoint('lease2');
  const d = h.hostDirs('hostB');
  const r = await homefs(['mount', h.ref, second, '--store', h.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache]);
  assert.notEqual(r.code, 0);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /is mounted read-write on host .*--takeover/);
  await h.sleep(mnt);
});

test('bad flags and a missing mountpoint fail with one line', async () => {
  for (const args of [
    ['mount', 'Bad/Name', '/tmp'],
    ['mount', 'acme/x', '/nonexistent/dir'],
    ['mount', 'acme/x', '/tmp', '--fsync', 'sometimes'],
    ['mount', 'acme/x', '/tmp', '--cache-size', 'lots'],
    ['sync', '/tmp'],
    ['status', '/nonexistent'],
  ]) {
    const r = await homefs(args);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.equal(r.stderr.trim().split('\n').length, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /at .*\.js:\d+/, 'no stack trace');
  }
});

test('HOMEFS_STORE=false mounts nothing and says the home is a plain directory', async () => {
  const dir = h.mountpoint('plain');
  const r = await homefs(['mount', 'acme/plain', dir], { env: { ...process.env, HOMEFS_STORE: 'false' } });
  assert.equal(r.code, 0);
  assert.match(r.stdout, /plain directory/);
  const r2 = await homefs(['mount', 'acme/plain', dir], { env: { ...process.env, HOMEFS_STORE: '', COVEY_HOME_STORE: 'false' } });
  assert.match(r2.stdout, /plain directory/);
});
