/**
 * Inode numbers that travel with the home (model/inos.ts, tree version 3), through real mounts on fresh
 * hosts (each its own state and cache directory): a git repo pushed from a plain directory is clean for
 * `git status` on a woken host without reading one tracked file (its index, written on the source, matches
 * the st_ino, times, size and owner the mount serves); after a seal, the next host serves every number the
 * previous one did, new files' included; and numbers stay unique within a mount (hard links share theirs;
 * a tree that records one number twice, or a file system mounted inside the pushed directory, gets other
 * numbers instead of false hard links).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hashBuffer } from '../src/hash/blake3.js';
import { commitSnapshot } from '../src/format/commit.js';
import { readHead } from '../src/format/heads.js';
import { ObjectStore } from '../src/format/objects.js';
import { decodeHotSet } from '../src/transfer/hotset.js';
import { FileStore } from '../src/store/file.js';
import { TestHome, homefsOk, sh, shOk } from './support/homefs-mount.js';

const GIT = 'git -c user.name=t -c user.email=t@e';
/** Every entry below the current directory: inode number, link count, path (sorted by path). */
const INOS = `find . -printf '%i %n %p\\n' | sort -k3`;

let h: TestHome;
let src: string;

before(async () => {
  h = new TestHome('acme', 'portable');
  src = path.join(h.root, 'src');
  mkdirSync(path.join(src, 'repo'), { recursive: true });
  // Distinct content per file, so each file is its own block; a refreshed index, as an agent's repo has.
  await shOk(`cd ${src}/repo && git init -q && for d in a b c; do mkdir -p $d/x; for i in $(seq 1 12); do
    head -c 3000 /dev/urandom | base64 > $d/f$i.txt; head -c 2000 /dev/urandom | base64 > $d/x/g$i.txt; done; done &&
    ln a/f1.txt a/hard.txt && sleep 1.1 && ${GIT} add -A && ${GIT} commit -qm init && git status --porcelain > /dev/null && git update-index -q --refresh`);
  await homefsOk(['push', src, h.ref, '--store', h.storeUrl], { timeoutMs: 120_000 });
});
after(async () => {
  await h.cleanup();
});

/** The home's hot-set record and wake pack: removed before a host mounts, so that what a sleep writes is that session's alone. */
function dropHotSet(): void {
  for (const hint of ['HOTSET', 'WAKEPACK']) rmSync(path.join(h.root, 'store', h.org, 'homes', h.home, hint), { force: true });
}

/**
 * The blocks the last session read through its mount: its hot-set record, which the sleep writes, lists every
 * block a read or copy-up took from the cache, in first-access order (prefetches are not reads). A read of a
 * control file proves that the check can fail.
 */
function blocksRead(control: string): Set<string> {
  const rec = decodeHotSet(readFileSync(path.join(h.root, 'store', h.org, 'homes', h.home, 'HOTSET')));
  const read = new Set(rec.entries.filter((e) => e.kind === 'block').map((e) => e.hash));
  assert.ok(read.has(control), 'the control file read is in the record');
  return read;
}

/** The block hash of each tracked file of the source repo (all are single-block files). */
async function trackedBlocks(): Promise<Map<string, string>> {
  const files = (await shOk(`cd ${src}/repo && git ls-files`)).trim().split('\n');
  return new Map(files.map((f) => [f, hashBuffer(readFileSync(path.join(src, 'repo', f)))]));
}

/** Asserts that no two entries share an inode number unless they are names of one hard-linked file. */
function assertUnique(listing: string, hardLinked: ReadonlyArray<readonly string[]>): void {
  const byIno = new Map<string, string[]>();
  for (const line of listing.trim().split('\n')) {
    const [ino, , p] = line.split(' ');
    byIno.set(ino as string, [...(byIno.get(ino as string) ?? []), p as string]);
  }
  const shared = [...byIno.values()].filter((ps) => ps.length > 1).map((ps) => ps.sort().join(' ')).sort();
  assert.deepEqual(shared, hardLinked.map((g) => [...g].sort().join(' ')).sort(), 'only hard links share an inode number');
}

test('a pushed repo: the mount serves the source st_ino (low 32 bits) and times, and git status reads no tracked file', async () => {
  const blocks = await trackedBlocks();
  dropHotSet();
  const mnt = await h.mount({ host: 'one' });
  try {
    const files = [...blocks.keys()];
    const statSrc = (await shOk(`cd ${src}/repo && stat -c '%i %y %z %s %u %g' ${files.join(' ')}`)).trim().split('\n');
    const statMnt = (await shOk(`cd ${mnt}/repo && stat -c '%i %y %z %s %u %g' ${files.join(' ')}`)).trim().split('\n');
    for (const [i, line] of statMnt.entries()) {
      const [ino, ...rest] = line.split(' ');
      const [srcIno, ...srcRest] = (statSrc[i] as string).split(' ');
      assert.equal(BigInt(ino as string) & 0xffffffffn, BigInt(srcIno as string) & 0xffffffffn, `st_ino of ${files[i]}: the source's low 32 bits`);
      assert.ok(BigInt(ino as string) >= 2n ** 52n, `${files[i]} is served its pushed number`);
      assert.deepEqual(rest, srcRest, `mtime, ctime, size and owner of ${files[i]}`);
    }
    assert.equal(await shOk(`cd ${mnt}/repo && git status --porcelain`), '', 'git sees the pushed repo clean');
    assert.equal((await sh(`cd ${mnt}/repo && git diff --quiet`)).code, 0);
    await shOk(`cat ${mnt}/repo/b/f3.txt > /dev/null`);
    assertUnique(await shOk(`cd ${mnt} && ${INOS}`), [['./repo/a/f1.txt', './repo/a/hard.txt']]);
  } finally {
    await h.sleep(mnt);
  }
  const inRecord = blocksRead(blocks.get('b/f3.txt') as string);
  const read = [...blocks.keys()].filter((f) => f !== 'b/f3.txt' && inRecord.has(blocks.get(f) as string));
  assert.deepEqual(read, [], 'git status and git diff read no tracked file');
});

test('after a seal, the next fresh host serves every number the previous one did, new files included', async () => {
  const mnt1 = await h.mount({ host: 'two' });
  let before: string;
  try {
    // New files, a new directory, a hard link of a new file, a rename and an edit; git records them a
    // second later (an index written in the same second as a file makes git read it: "racily clean").
    await shOk(`cd ${mnt1}/repo && mkdir -p new/deep && for i in 1 2 3; do echo "new $i" > new/n$i.txt; done && echo deep > new/deep/d.txt &&
      ln new/n1.txt new/n1-link.txt && mv b/f2.txt b/f2-moved.txt && echo edit >> c/f5.txt && sleep 1.1 && ${GIT} add -A && ${GIT} commit -qm work`);
    before = await shOk(`cd ${mnt1} && ${INOS}`);
    assertUnique(before, [['./repo/a/f1.txt', './repo/a/hard.txt'], ['./repo/new/n1-link.txt', './repo/new/n1.txt']]);
  } finally {
    await h.sleep(mnt1);
  }
  // The session's hot set would bring the files git add read into the next host's cache: without it, the
  // cache holds only what the next host reads.
  dropHotSet();
  const mnt2 = await h.mount({ host: 'three' });
  let tracked: string[];
  try {
    assert.equal(await shOk(`cd ${mnt2} && ${INOS}`), before, 'the same inode numbers on the next host');
    assert.equal(await shOk(`cd ${mnt2}/repo && git status --porcelain`), '', 'clean');
    tracked = (await shOk(`cd ${mnt2}/repo && git ls-files`)).trim().split('\n');
    assert.ok(tracked.includes('new/deep/d.txt') && tracked.includes('b/f2-moved.txt') && !tracked.includes('b/f2.txt'));
    await shOk(`cat ${mnt2}/repo/a/x/g7.txt > /dev/null`);
  } finally {
    await h.sleep(mnt2);
  }
  // Each tracked file's content, from the source and the first host's changes above (reading it through a
  // mount would put it in the record).
  const srcFile = (f: string): Buffer => readFileSync(path.join(src, 'repo', f));
  const made: Record<string, Buffer> = {
    'new/n1.txt': Buffer.from('new 1\n'), 'new/n1-link.txt': Buffer.from('new 1\n'), 'new/n2.txt': Buffer.from('new 2\n'),
    'new/n3.txt': Buffer.from('new 3\n'), 'new/deep/d.txt': Buffer.from('deep\n'), 'b/f2-moved.txt': srcFile('b/f2.txt'),
    'c/f5.txt': Buffer.concat([srcFile('c/f5.txt'), Buffer.from('edit\n')]),
  };
  const inRecord = blocksRead(hashBuffer(srcFile('a/x/g7.txt')));
  const read = tracked.filter((f) => f !== 'a/x/g7.txt' && inRecord.has(hashBuffer(made[f] ?? srcFile(f))));
  assert.deepEqual(read, [], 'git status read no tracked file, new ones included');
});

test('a tree recording one inode number twice: the second entry gets another number', async () => {
  const store = await new FileStore(path.join(h.root, 'store')).init();
  try {
    const objects = new ObjectStore(store, h.org);
    const head = await readHead(store, h.org, h.home);
    assert.ok(head);
    const snap = await objects.getSnapshot(head.snapshot);
    const root = await objects.getTree(snap.root);
    const repo = root.entries.find((e) => e.name === 'repo');
    assert.ok(repo?.ino !== undefined, 'the pushed directory recorded a number');
    const dup = 2 ** 52 + 77;
    const file = (name: string): (typeof root.entries)[number] => ({ name, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n, blocks: [], ino: dup });
    const sub = await objects.putTree({ entries: [file('x1'), file('x2')] });
    const other = await objects.putTree({ entries: [file('y1'), { ...file('y2'), ino: repo.ino }] });
    const entries = [...root.entries,
      { name: 'dupes', kind: 'dir' as const, mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n, tree: sub, ino: dup + 1 },
      { name: 'more', kind: 'dir' as const, mode: 0o755, uid: 0, gid: 0, size: 0, mtimeNs: 1n, ctimeNs: 1n, tree: other }];
    entries.sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
    await commitSnapshot(objects, h.home, head.gen, { root: await objects.putTree({ entries }), parent: head.snapshot, stats: snap.stats, reason: 'test' });
  } finally {
    await store.close();
  }
  const mnt = await h.mount({ host: 'five' });
  try {
    const listing = await shOk(`cd ${mnt} && ${INOS}`);
    assertUnique(listing, [['./repo/a/f1.txt', './repo/a/hard.txt'], ['./repo/new/n1-link.txt', './repo/new/n1.txt']]);
    const inos = await shOk(`cd ${mnt} && stat -c '%i' dupes/x1 dupes/x2 more/y1 more/y2 repo`);
    const [x1, x2, y1, y2, r] = inos.trim().split('\n');
    assert.equal(x1, String(2 ** 52 + 77), 'the first entry loaded gets the recorded number');
    assert.notEqual(x2, x1);
    assert.notEqual(y1, x1);
    assert.notEqual(y2, r, 'a number a loaded directory already has is not served twice');
  } finally {
    await h.sleep(mnt);
  }
});

test('a file system mounted inside the pushed directory records no numbers: no false hard links', async () => {
  const t = new TestHome('acme', 'devices');
  try {
    const dir = path.join(t.root, 'src');
    mkdirSync(dir);
    const inner = t.tmpfs('src/inner', '1m');
    for (let i = 0; i < 20; i++) {
      writeFileSync(path.join(dir, `outer${i}`), `o${i}\n`);
      writeFileSync(path.join(inner, `f${i}`), `i${i}\n`);
    }
    await homefsOk(['push', dir, t.ref, '--store', t.storeUrl]);
    const mnt = await t.mount();
    try {
      assertUnique(await shOk(`cd ${mnt} && ${INOS}`), []);
      const innerInos = (await shOk(`stat -c '%i' ${mnt}/inner/f*`)).trim().split('\n').map(BigInt);
      assert.ok(innerInos.every((n) => n < 2n ** 52n), 'the inner file system\'s numbers were not recorded (derived instead)');
    } finally {
      await t.sleep(mnt);
    }
  } finally {
    await t.cleanup();
  }
});
