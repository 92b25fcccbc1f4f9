/**
 * The negative xattr marks (src/fs/noxattrs.ts) on a real journal: an inode is marked only when a reply
 * naming it goes out with nothing queued and no xattrs in its record; a reply held behind a commit marks
 * only after that commit; every way an inode may gain xattrs revokes at once (setxattr, a record with
 * xattrs loaded from a tree, removal whose number may come back).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Req, Session } from '../src/fuse/types.js';
import { NoXattrMarks } from '../src/fs/noxattrs.js';
import { CommittedReplies } from '../src/fs/replies.js';
import { Journal } from '../src/inodes/journal.js';
import type { Inode } from '../src/inodes/types.js';
import { Xattrs } from '../src/inodes/xattrs.js';

/** Records marks, revokes and sent replies; every other Session method does nothing. */
class FakeSession {
  readonly events: string[] = [];
  readonly marked = new Set<number>();
  markNoXattrs(ino: number): void { this.marked.add(ino); this.events.push(`mark ${ino}`); }
  revokeNoXattrs(ino: number): void { this.marked.delete(ino); this.events.push(`revoke ${ino}`); }
  asSession(): Session {
    return new Proxy(this, {
      get: (t, k) => (k in t ? (t as unknown as Record<string | symbol, unknown>)[k] : (_req: Req) => { t.events.push(`reply ${String(k)}`); }),
    }) as unknown as Session;
  }
}

function file(ino: number, xattrs?: Array<[string, Buffer]>): Inode {
  const t = 1n;
  return { ino, kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0, atimeNs: t, mtimeNs: t, ctimeNs: t, nlink: 1, parents: [1], ...(xattrs ? { xattrs } : {}) };
}

async function withJournal(fn: (j: Journal) => void): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'homefs-noxattrs-'));
  const j = new Journal(join(dir, 'journal'));
  try {
    fn(j);
  } finally {
    await j.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('marks only committed inodes without xattrs; revokes on setxattr, on a record with xattrs, on removal', () => withJournal((j) => {
  const s = new FakeSession();
  const marks = new NoXattrMarks(s, j);
  j.put(file(10));
  j.put(file(11, [['user.a', Buffer.from('1')]]));
  marks.sent(10);
  assert.equal(s.marked.has(10), false, 'not while its record is queued');
  j.commit();
  marks.sent(10);
  marks.sent(11);
  marks.sent(0);
  assert.deepEqual([...s.marked], [10], 'the committed inode without xattrs, only');

  new Xattrs(j).set(10, 'user.x', Buffer.from('v'), 0);
  assert.equal(s.marked.has(10), false, 'setxattr revokes synchronously, before any commit or reply');
  j.commit();
  marks.sent(10);
  assert.equal(s.marked.has(10), false, 'an inode with xattrs is never marked');
  new Xattrs(j).remove(10, 'user.x');
  j.commit();
  marks.sent(10);
  assert.equal(s.marked.has(10), true, 'marked again once its empty set is committed');

  // A number reused by a record loaded with xattrs (a tree entry), or removed and handed out again.
  j.put(file(12));
  j.commit();
  marks.sent(12);
  j.remove(12);
  assert.equal(s.marked.has(12), false, 'removal revokes');
  j.put(file(12, [['user.t', Buffer.from('tree')]]));
  j.commit();
  marks.sent(12);
  assert.equal(s.marked.has(12), false, 'the new holder of the number has xattrs');
  j.updateInMemory(10, { xattrs: [['user.m', Buffer.from('m')]] });
  assert.equal(s.marked.has(10), false, 'an in-memory change that adds xattrs revokes too');
}));

test('a reply held behind a commit marks its inode only when it goes out, after the commit', () => withJournal((j) => {
  const fake = new FakeSession();
  const replies = new CommittedReplies(fake.asSession(), j);
  j.put(file(20));
  const entry = { ino: 20, generation: 0, attr: {} as never, attrTimeout: 1, entryTimeout: 1 };
  replies.entry({} as Req, entry);
  assert.deepEqual(fake.events, [], 'held: nothing sent, nothing marked');
  j.commit();
  assert.deepEqual(fake.events, ['mark 20', 'reply entry'], 'marked as the reply goes out, after the commit');
  replies.noSuchXattr({} as Req, 20);
  assert.deepEqual(fake.events.slice(2), ['mark 20', 'reply err'], 'ENODATA from JS marks too');
}));
