/**
 * Agent workloads run inside a mounted home, shared by the file-store and the S3-store mount tests:
 * git clone/commit/gc/fsck, a 5,000-file tar round trip, sqlite WAL with 1,000 transactions, and the
 * check of all three from another host.
 */
import assert from 'node:assert/strict';
import { shOk, type TestHome } from './homefs-mount.js';

export async function gitWorkload(h: TestHome, mnt: string): Promise<void> {
  await shOk(`
    export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
    src=${h.root}/src-repo && rm -rf $src && mkdir -p $src && cd $src && git init -q -b main .
    for i in $(seq 1 200); do mkdir -p d$((i % 10)); echo "line $i" > d$((i % 10))/f$i.txt; done
    git add -A && git commit -qm initial
    cd ${mnt} && git clone -q $src repo && cd repo
    echo change >> d1/f1.txt && git add -A && git commit -qm change
    git checkout -q -b feature && echo new > new.txt && git add new.txt && git commit -qm feature
    git gc -q && git fsck --strict`, { timeoutMs: 180_000 });
  const log = await shOk(`cd ${mnt}/repo && git log --oneline --all | wc -l && git status --porcelain | wc -l`);
  assert.deepEqual(log.trim().split('\n'), ['3', '0']);
}

export async function tarWorkload(h: TestHome, mnt: string): Promise<void> {
  await shOk(`
    gen=${h.root}/tar-src && rm -rf $gen && mkdir -p $gen && cd $gen
    for d in $(seq 1 50); do mkdir -p dir$d; for f in $(seq 1 100); do echo "$d/$f" > dir$d/file$f; done; done
    ln -s dir1/file1 link1 && touch -d '2020-01-01 00:00:00.5' dir1/file1
    tar --sort=name --mtime='2021-01-01' --owner=0 --group=0 --numeric-owner -cf ${h.root}/in.tar .
    mkdir -p ${mnt}/untar && cd ${mnt}/untar && tar xf ${h.root}/in.tar
    tar --sort=name --mtime='2021-01-01' --owner=0 --group=0 --numeric-owner -cf ${h.root}/out.tar .
    cmp ${h.root}/in.tar ${h.root}/out.tar`, { timeoutMs: 300_000 });
  assert.equal((await shOk(`find ${mnt}/untar -type f | wc -l`)).trim(), '5000');
}

export async function sqliteWorkload(h: TestHome, mnt: string): Promise<void> {
  const script = `PRAGMA journal_mode=WAL; CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);\n` +
    Array.from({ length: 1000 }, (_, i) => `BEGIN; INSERT INTO t(v) VALUES ('row ${i}'); UPDATE t SET v = v || '!' WHERE k = ${(i % 50) + 1}; COMMIT;`).join('\n');
  await shOk(`cat > ${h.root}/tx.sql <<'SQL'\n${script}\nSQL\ncd ${mnt} && sqlite3 db.sqlite < ${h.root}/tx.sql >/dev/null`, { timeoutMs: 300_000 });
  const out = await shOk(`cd ${mnt} && sqlite3 db.sqlite 'PRAGMA integrity_check; SELECT count(*) FROM t;'`);
  assert.deepEqual(out.trim().split('\n'), ['ok', '1000']);
}

/** All three workloads' results, checked on another mount (e.g. a fresh host). */
export async function checkWorkloads(mnt: string): Promise<void> {
  const out = await shOk(`cd ${mnt} && sqlite3 db.sqlite 'PRAGMA integrity_check; SELECT count(*) FROM t;' && git -C repo fsck --strict && git -C repo log --oneline --all | wc -l && find untar -type f | wc -l`);
  assert.deepEqual(out.trim().split('\n'), ['ok', '1000', '3', '5000']);
}
