/**
 * The journal's redo log (inodes/redolog.ts) and its use by the journal: batches read back whole, mapped or
 * written, a torn or damaged tail is dropped, an emptied log's older records are never read again, a daemon killed with -9 after a commit keeps every committed change (also
 * when killed in the middle of a checkpoint), and a record the log holds from before a checkpoint is never
 * applied over newer state.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Journal } from '../src/inodes/journal.js';
import { MAPPED_BYTES, RedoLog } from '../src/inodes/redolog.js';
import type { Inode } from '../src/inodes/types.js';

function file(ino: number, extra: Partial<Inode> = {}): Inode {
  return { ino, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, atimeNs: 0n, mtimeNs: 5n, ctimeNs: 0n, nlink: 1, parents: [1], ...extra };
}

function scratch(): string {
  return mkdtempSync(join(tmpdir(), 'homefs-redo-'));
}

for (const mapped of [true, false]) {
  test(`${mapped ? 'mapped' : 'pwrite'} log: batches read back in order; a torn or damaged last record is dropped; reset empties it`, () => {
    const dir = scratch();
    try {
      const path = join(dir, 'redo.log');
      const log = new RedoLog(path, { mapped });
      assert.equal(log.mapped, mapped);
      log.append(1, [{ table: 0, key: 7, value: { a: 1n, b: Buffer.from('xy') } }, { table: 1, key: [1, 'n'], value: undefined }]);
      log.append(2, [{ table: 4, key: 'm', value: 'v' }]);
      const whole = log.bytes;
      log.append(3, [{ table: 4, key: 'm', value: 'w' }]);
      let got = RedoLog.readAll(path);
      assert.deepEqual(got.map((b) => b.seq), [1, 2, 3]);
      assert.deepEqual(got[0]?.writes[0]?.value, { a: 1n, b: Buffer.from('xy') });
      assert.ok(Buffer.isBuffer((got[0]?.writes[0]?.value as { b: unknown }).b), 'a Buffer comes back as a Buffer');
      assert.deepEqual(got[0]?.writes[1], { table: 1, key: [1, 'n'], value: undefined });

      const bytes = readFileSync(path);
      const torn = Buffer.from(bytes);
      torn.fill(0, whole + 20); // the third record torn: its end never written
      writeFileSync(join(dir, 'torn.log'), torn);
      assert.deepEqual(RedoLog.readAll(join(dir, 'torn.log')).map((b) => b.seq), [1, 2]);
      writeFileSync(join(dir, 'cut.log'), bytes.subarray(0, whole + 20)); // or the file cut there
      assert.deepEqual(RedoLog.readAll(join(dir, 'cut.log')).map((b) => b.seq), [1, 2]);
      const damaged = Buffer.from(bytes);
      damaged[whole - 1] = (damaged[whole - 1] as number) ^ 0xff; // the second record's last byte flipped
      writeFileSync(join(dir, 'damaged.log'), damaged);
      assert.deepEqual(RedoLog.readAll(join(dir, 'damaged.log')).map((b) => b.seq), [1]);

      log.reset();
      assert.deepEqual(RedoLog.readAll(path), []);
      log.append(4, [{ table: 4, key: 'm', value: 'a value longer than the first record was, so it ends inside the second' }]);
      assert.deepEqual(RedoLog.readAll(path).map((b) => b.seq), [4], 'what follows the new record is not read');
      log.reset();
      log.append(5, [{ table: 4, key: 'm', value: 'x' }]); // ends inside the first old record; old ones may follow
      assert.deepEqual(RedoLog.readAll(path).map((b) => b.seq), [5]);
      const garbage = Buffer.concat([readFileSync(path).subarray(0, log.bytes), Buffer.alloc(64 * 1024)]);
      garbage.writeUInt32LE(0xee19bb25, log.bytes); // what follows reads as a length of 4 GB
      writeFileSync(join(dir, 'garbage.log'), garbage);
      assert.deepEqual(RedoLog.readAll(join(dir, 'garbage.log')).map((b) => b.seq), [5]);
      log.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('a mapped log takes batches past its mapping with pwrites and reads them all back; reset cuts the file back', () => {
  const dir = scratch();
  try {
    const path = join(dir, 'redo.log');
    const log = new RedoLog(path);
    assert.ok(log.mapped);
    const big = Buffer.alloc(MAPPED_BYTES / 3, 7);
    for (let seq = 1; seq <= 4; seq++) log.append(seq, [{ table: 0, key: seq, value: big }]); // the third straddles
    assert.ok(log.bytes > MAPPED_BYTES);
    const got = RedoLog.readAll(path);
    assert.deepEqual(got.map((b) => b.seq), [1, 2, 3, 4]);
    assert.ok(Buffer.from(got[3]?.writes[0]?.value as Uint8Array).equals(big));
    log.reset();
    assert.equal(statSync(path).size, MAPPED_BYTES);
    assert.deepEqual(RedoLog.readAll(path), []);
    log.append(5, [{ table: 0, key: 5, value: 'after' }]);
    assert.deepEqual(RedoLog.readAll(path).map((b) => b.seq), [5]);
    log.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Runs `body` in a child process with journal `j` open on `dir`; the child SIGKILLs itself at the end. */
function killedChild(dir: string, body: string, opts = '{}'): void {
  const mod = fileURLToPath(new URL('../src/inodes/journal.js', import.meta.url));
  const script = `
    import { Journal } from ${JSON.stringify(mod)};
    const file = (ino, extra = {}) => ({ ino, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, atimeNs: 0n, mtimeNs: 5n, ctimeNs: 0n, nlink: 1, parents: [1], ...extra });
    const j = new Journal(${JSON.stringify(join(dir, 'journal'))}, ${opts});
    ${body}
    process.kill(process.pid, 'SIGKILL');
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.signal, 'SIGKILL', `child did not die by SIGKILL: ${r.stderr}`);
}

test('kill -9 after commits: every committed change is there after reopening, an uncommitted one is not', async () => {
  const dir = scratch();
  try {
    killedChild(dir, `
      j.put(file(1, { kind: 'dir', parents: [] }));
      j.put(file(10, { content: { state: 'inline', data: Buffer.from('hello') } }));
      j.setChild(1, 'a', 10);
      j.setMeta('k', { x: 1 });
      j.setLinkIno(99, 10);
      j.commit();
      j.put(file(11));
      j.setChild(1, 'b', 11);
      j.commit();
      j.remove(11);
      j.removeChild(1, 'b');
      j.update(10, { mtimeNs: 77n });
      j.commit();
      j.put(file(12));
      j.setChild(1, 'c', 12); // queued, never committed: a request that was never replied to
    `);
    const j = new Journal(join(dir, 'journal'));
    try {
      assert.equal(j.get(10)?.mtimeNs, 77n);
      assert.deepEqual(Buffer.from((j.get(10)?.content as { data: Uint8Array }).data), Buffer.from('hello'));
      assert.equal(j.get(11), undefined, 'removed in a committed batch');
      assert.equal(j.get(12), undefined, 'never committed');
      assert.deepEqual([...j.children(1)], [['a', 10]]);
      assert.deepEqual(j.getMeta('k'), { x: 1 });
      assert.equal(j.linkIno(99), 10);
    } finally {
      await j.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('kill -9 inside a checkpoint (LMDB committed, log not emptied), then more batches: all there once, in order', async () => {
  const dir = scratch();
  try {
    killedChild(dir, `
      for (let i = 0; i < 100; i++) { j.put(file(100 + i, { size: i })); j.commit(); }
      j.checkpoint();
    `, '{ killInCheckpoint: 1 }');
    let j = new Journal(join(dir, 'journal'));
    for (let i = 0; i < 100; i++) assert.equal(j.get(100 + i)?.size, i);
    j.update(150, { size: 1000 });
    j.commit();
    await j.close();
    j = new Journal(join(dir, 'journal'));
    try {
      assert.equal(j.get(150)?.size, 1000);
      assert.equal(j.get(151)?.size, 51);
    } finally {
      await j.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a batch the log still holds from before a checkpoint is not applied again; a newer one is', async () => {
  const dir = scratch();
  try {
    let j = new Journal(join(dir, 'journal'));
    j.put(file(5, { size: 1 }));
    j.commit(); // seq 1
    j.update(5, { size: 2 });
    j.commit(); // seq 2
    await j.close(); // checkpointed: LMDB holds size 2 and seq 2; the log is empty
    const log = new RedoLog(join(dir, 'journal', 'redo.log'));
    log.append(1, [{ table: 0, key: 5, value: file(5, { size: 1 }) }]); // stale: an emptying the host lost
    log.append(3, [{ table: 0, key: 6, value: file(6, { size: 3 }) }]);
    log.close();
    j = new Journal(join(dir, 'journal'));
    try {
      assert.equal(j.get(5)?.size, 2);
      assert.equal(j.get(6)?.size, 3);
    } finally {
      await j.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('reads see changes that are only in the log: a removed inode, its dirents, links and meta', async () => {
  const dir = scratch();
  const j = new Journal(join(dir, 'journal'));
  try {
    j.put(file(1, { kind: 'dir', parents: [] }));
    j.put(file(20, { kind: 'dir' }));
    j.setChild(1, 'd', 20);
    j.put(file(21, { parents: [20] }));
    j.setChild(20, 'x', 21);
    j.setMeta('m', 1);
    j.setLinkIno(7, 21);
    j.checkpoint(); // all of it in LMDB
    j.removeChild(20, 'x');
    j.remove(21);
    j.removeChild(1, 'd');
    j.remove(20);
    j.setMeta('m', 2);
    j.setLinkIno(7, 22);
    j.commit(); // in the log only
    assert.equal(j.get(21), undefined);
    assert.equal(j.get(20), undefined);
    assert.deepEqual([...j.children(20)], [], 'the removed directory\'s entry is only removed in the log');
    assert.equal(j.getMeta('m'), 2);
    assert.equal(j.linkIno(7), 22);
    j.checkpoint();
    assert.equal(j.get(21), undefined);
    assert.equal(j.getMeta('m'), 2);
    assert.equal(j.linkIno(7), 22);
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a directory whose number comes back before a checkpoint does not see its old entries again', async () => {
  const dir = scratch();
  const j = new Journal(join(dir, 'journal'));
  try {
    j.put(file(1, { kind: 'dir', parents: [] }));
    j.put(file(20, { kind: 'dir' }));
    j.setChild(1, 'd', 20);
    j.put(file(21, { parents: [20] }));
    j.setChild(20, 'x', 21);
    j.checkpoint(); // d/x in LMDB
    j.removeChild(20, 'x');
    j.remove(21);
    j.removeChild(1, 'd');
    j.remove(20);
    j.commit(); // the removals in the log only
    j.put(file(20, { kind: 'dir' })); // the same number again (a derived one: the same parent and name)
    j.setChild(1, 'd', 20);
    j.put(file(22, { parents: [20] }));
    j.setChild(20, 'y', 22);
    j.commit();
    assert.deepEqual([...j.children(20)], [['y', 22]], 'x was removed; only the new entry is there');
    j.checkpoint();
    assert.deepEqual([...j.children(20)], [['y', 22]]);
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('commitScheduled commits at once what was left for the end of the turn and leaves no immediate behind', async () => {
  const dir = scratch();
  try {
    const j = new Journal(join(dir, 'journal'));
    const commits: unknown[] = [];
    j.onCommit((err) => commits.push(err));
    j.put(file(1, { kind: 'dir', parents: [] }));
    j.put(file(10));
    j.setChild(1, 'a', 10);
    assert.ok(j.pending, 'queued for the end of the turn');
    const immediates = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Immediate').length;
    const before = immediates();
    assert.ok(before >= 1, 'an immediate commits it at the end of the turn');
    j.commitScheduled();
    assert.equal(immediates(), before - 1, 'the immediate is gone: the loop has nothing left to do for it');
    assert.equal(j.pending, false);
    assert.deepEqual(commits, [undefined], 'one commit, now');
    assert.deepEqual(RedoLog.readAll(join(dir, 'journal', 'redo.log')).map((b) => b.writes.length), [3]);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    j.commitScheduled();
    assert.equal(commits.length, 1, 'nothing scheduled: nothing to do');
    await j.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
