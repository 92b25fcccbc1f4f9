/**
 * Which index entries the git-index prefetch fetches (home/gitindex.ts): exactly those whose stat data
 * `git status` finds changed, parsed from an index git itself wrote, compared with git's own answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gitIndexEntries, gitWillRead } from '../src/home/gitindex.js';
import type { Inode } from '../src/inodes/types.js';

function inodeOf(file: string): Inode {
  const st = lstatSync(file, { bigint: true });
  return {
    ino: Number(st.ino), kind: 'file', mode: Number(st.mode & 0o7777n), uid: Number(st.uid), gid: Number(st.gid), size: Number(st.size),
    atimeNs: st.atimeNs, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, nlink: Number(st.nlink), parents: [1],
  };
}

test('a refreshed index: git reads no entry; any of ino, ctime, mtime, size or owner changed, or a racy entry: it does', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'homefs-gitindex-'));
  try {
    execSync(`cd ${dir} && git init -q && mkdir sub && echo a > a.txt && echo bb > sub/b.txt && printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && sleep 1.1 &&
      git -c user.name=t -c user.email=t@e add -A && git -c user.name=t -c user.email=t@e commit -qm i && git update-index -q --refresh`);
    const entries = gitIndexEntries(readFileSync(path.join(dir, '.git/index')));
    assert.ok(entries);
    assert.deepEqual(entries.map((e) => e.path), ['a.txt', 'run.sh', 'sub/b.txt']);
    const indexSec = Number(lstatSync(path.join(dir, '.git/index'), { bigint: true }).mtimeNs / 1_000_000_000n);
    for (const e of entries) {
      const node = inodeOf(path.join(dir, e.path));
      assert.equal(gitWillRead(e, node, indexSec), false, `${e.path} matches its index entry`);
      const S = 1_000_000_000n;
      for (const [what, changed] of [
        ['ino', { ...node, ino: node.ino + 2 ** 32 + 1 }], ['ctime', { ...node, ctimeNs: node.ctimeNs + S }], ['mtime', { ...node, mtimeNs: node.mtimeNs - S }],
        ['size', { ...node, size: node.size + 1 }], ['uid', { ...node, uid: node.uid + 1 }], ['exec bit', { ...node, mode: node.mode ^ 0o100 }],
      ] as const) assert.equal(gitWillRead(e, changed, indexSec), true, `${e.path}: ${what} changed`);
      // Only the low 32 bits of st_ino count, as in git: a number 2^52 above it matches.
      assert.equal(gitWillRead(e, { ...node, ino: node.ino + 2 ** 52 }, indexSec), false);
      assert.equal(gitWillRead(e, node, e.mtimeSec), true, `${e.path}: written in the same second as the index (racily clean)`);
    }
    // What git itself says of the same index: nothing to refresh.
    assert.equal(execSync(`cd ${dir} && git diff-files --name-only`, { encoding: 'utf8' }), '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an index that is not version 2 or 3, or is cut short, gives no entries', () => {
  assert.equal(gitIndexEntries(Buffer.from('DIRC\0\0\0\x04\0\0\0\0')), null);
  assert.equal(gitIndexEntries(Buffer.from('DIRC\0\0\0\x02\0\0\0\x01')), null);
  assert.equal(gitIndexEntries(Buffer.from('XXXX')), null);
});
