/**
 * The one progress display (util/progress.ts) and what push and pull report to it: the bar with a
 * detail suffix, drawn only on a TTY; push's phases in order with its file counter reaching the total;
 * pull's files and bytes reaching totals known from the start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../src/store/memory.js';
import { pushDirectory, type PushProgress } from '../src/transfer/push.js';
import { pullSnapshot, type PullProgress } from '../src/transfer/pull.js';
import { progressBar, renderBar } from '../src/util/progress.js';

function stream(isTTY: boolean, written: string[]): NodeJS.WriteStream {
  const w = new Writable({ write: (c: Buffer, _e, cb) => { written.push(c.toString()); cb(); } });
  return Object.assign(w, { isTTY }) as unknown as NodeJS.WriteStream;
}

test('progress: a detail follows the bar or the counter; nothing is drawn when piped', () => {
  assert.equal(renderBar('pull', 1, 4, String, '1/2 files'), `pull [${'#'.repeat(8)}${'.'.repeat(22)}]  25% 1/4, 1/2 files`);
  assert.equal(renderBar('scanning', 12, 0, String, 'entries'), 'scanning: 12, entries');
  const tty: string[] = [];
  const bar = progressBar({ stream: stream(true, tty), delayMs: 0, format: (n) => `${n} B` });
  bar.update('pull', 512, 1024, '1/2 files');
  bar.stop();
  assert.deepEqual(tty, [`\r\x1b[K${renderBar('pull', 512, 1024, (n) => `${n} B`, '1/2 files')}`, '\n']);
  assert.match(tty[0] ?? '', /50% 512 B\/1024 B, 1\/2 files$/);
  const piped: string[] = [];
  const quiet = progressBar({ stream: stream(false, piped), delayMs: 0 });
  quiet.update('pull', 1, 2, 'x');
  quiet.stop();
  assert.deepEqual(piped, []);
});

test('progress: push reports its phases in order; pull reports files and bytes up to their totals', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-progress-'));
  try {
    const src = join(work, 'src');
    await mkdir(join(src, 'd'), { recursive: true });
    await writeFile(join(src, 'a.txt'), 'a'.repeat(1000));
    await writeFile(join(src, 'd/b.txt'), 'b'.repeat(3000));
    await writeFile(join(src, 'd/c.txt'), '');
    const store = new MemoryStore();
    const pushed: PushProgress[] = [];
    const res = await pushDirectory(src, store, 'acme', 'p', { xattrs: false, onProgress: (p) => pushed.push(p) });
    const phases = pushed.map((p) => p.phase).filter((ph, i, all) => ph !== all[i - 1]);
    assert.deepEqual(phases, ['scan', 'content', 'trees', 'done']);
    const content = pushed.filter((p) => p.phase === 'content');
    assert.deepEqual(content.map((p) => p.files), [0, 1, 2, 3], 'one report per file, counting up');
    assert.ok(content.every((p) => p.filesTotal === 3 && p.bytesTotal === 4000));
    assert.equal(content.at(-1)?.bytesHashed, 4000);
    assert.equal(Math.max(...pushed.filter((p) => p.phase === 'scan').map((p) => p.files)), 4, 'scan counts entries');

    const pulled: PullProgress[] = [];
    await pullSnapshot(store, 'acme', res.snapshot, join(work, 'out'), { xattrs: false, parallelism: 1, onProgress: (p) => pulled.push(p) });
    assert.deepEqual(pulled.at(0), { files: 0, filesTotal: 3, bytes: 0, bytesTotal: 4000 }, 'totals are known before the first file');
    assert.deepEqual(pulled.at(-1), { files: 3, filesTotal: 3, bytes: 4000, bytesTotal: 4000 });
    assert.deepEqual(pulled.map((p) => p.files), [0, 1, 2, 3]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});
