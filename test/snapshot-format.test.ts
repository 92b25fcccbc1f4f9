/**
 * The checked-in format fixtures (test/fixtures/format/) still decode to the same values and hash to the
 * same ids: a change of the encodings that would orphan existing stores fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decodeSnapshot, decodeTree, encodeTree } from '../src/format/codec.js';
import { hashBuffer } from '../src/hash/blake3.js';

const dir = new URL('../../test/fixtures/format/', import.meta.url);
const TREE_HASH = 'a45cbafa634a4b6077649f6c1076ece8817dce8419b6b9713573d170ea653f96';
const SNAPSHOT_ID = 'c8c2cd6300eadbf83a495b5c03153a17389d25d970a5ba06f335c9c08c40205d';

test('tree-v1.bin decodes to the documented entries and re-encodes to the same bytes', () => {
  const bytes = readFileSync(new URL('tree-v1.bin', dir));
  assert.equal(hashBuffer(bytes), TREE_HASH);
  const t = decodeTree(bytes, TREE_HASH);
  assert.deepEqual(
    t.entries.map((e) => `${e.kind}:${e.name}`),
    ['file:.bashrc', 'file:big', 'dir:dir', 'file:empty', 'fifo:fifo', 'file:hard1', 'file:hard2', 'symlink:link', 'chardev:tty', 'file:ünïcødé 日本 🎉'],
  );
  const [bashrc, big, d, , , h1, h2, link, tty] = t.entries;
  assert.deepEqual(bashrc?.xattrs, [['user.a', Buffer.from('1')], ['user.b', Buffer.alloc(0)]]);
  assert.equal(bashrc?.mtimeNs, 1_700_000_000_123_456_789n);
  assert.equal(big?.size, 20 * 1024 * 1024);
  assert.equal(big?.blocks?.length, 5);
  assert.equal(big?.mode, 0o4755);
  assert.equal(d?.mode, 0o1777);
  assert.equal(d?.mtimeNs, -5n);
  assert.equal(d?.tree, 'b'.repeat(64));
  assert.equal(h1?.link, 1);
  assert.equal(h2?.link, 1);
  assert.equal(link?.target, 'nowhere');
  assert.equal(tty?.rdev, 0x8801);
  assert.ok(encodeTree(t).equals(bytes));
});

test('tree-v3.bin (inode numbers) decodes to the documented entries and re-encodes to the same bytes', () => {
  const bytes = readFileSync(new URL('tree-v3.bin', dir));
  const hash = '757ab8bd4a66654c468fc91de1b4588bac695551e929dab1f7b9982554c5c24a';
  assert.equal(hashBuffer(bytes), hash);
  assert.equal(bytes[4], 3);
  const t = decodeTree(bytes, hash);
  assert.deepEqual(
    t.entries.map((e) => [e.name, e.ino]),
    [['README.md', 2 ** 52 + 1_234_567], ['hard1', 2 ** 52 + 2 ** 51 + 42], ['hard2', 2 ** 52 + 2 ** 51 + 42], ['lib', 2 ** 52 + 1_234_568], ['old', undefined], ['renamed', 2 ** 40 + 99]],
  );
  const [, h1, , lib] = t.entries;
  assert.equal(h1?.link, 1);
  assert.equal(h1?.nlink, 2);
  assert.equal(lib?.kind, 'dir');
  assert.equal(lib?.nlink, 3);
  assert.ok(encodeTree(t).equals(bytes));
});

test('snapshot-v1.json decodes and its id is the hash of its bytes', () => {
  const bytes = readFileSync(new URL('snapshot-v1.json', dir));
  assert.equal(hashBuffer(bytes), SNAPSHOT_ID);
  const s = decodeSnapshot(bytes, SNAPSHOT_ID);
  assert.equal(s.root, TREE_HASH);
  assert.equal(s.parent, null);
  assert.equal(s.home, 'acme/alice');
  assert.deepEqual(s.stats, { files: 3, dirs: 1, bytes: 42 });
});
