/**
 * The fsync log through a real mount and the CLI: what an fsync returned for is in the home's
 * log, not yet sealed, and every reader (log, ls, cat, pull, diff, du, verify, locality, a read-only mount,
 * fork) sees it; after kill -9 a fresh host
 * replays it. The newest segment is chained (it holds only the last fsync's file, and relies on the segment
 * before it for the other), so every reader reads through the chain. Writes go through a child process
 * (shOk), as a user's would.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { TestHome, homefsOk, shOk } from './support/homefs-mount.js';

const h = new TestHome('acme', 'logged');
after(() => h.cleanup());

/** write + fsync of `name` in a child process (python: the shell has no fsync of one file). */
function writeFsync(file: string, text: string): Promise<string> {
  return shOk(`python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644); os.write(fd, sys.argv[2].encode()); os.fsync(fd); os.close(fd)' ${file} '${text}'`);
}

test('readers see what fsync logged; a fresh host replays it after kill -9', async () => {
  const mnt = await h.mount();
  await shOk(`mkdir -p ${mnt}/a/b/c`);
  await writeFsync(`${mnt}/a/first`, 'sealed');
  await writeFsync(`${mnt}/a/b/c/second`, 'logged, not sealed');
  await writeFsync(`${mnt}/a/third`, 'chained');
  const logDir = path.join(h.root, 'store', 'acme', 'homes', 'logged', 'log');
  const gen = readdirSync(logDir).sort()[0] ?? '';
  const newest = readdirSync(path.join(logDir, gen)).sort()[0] ?? ''; // numbers sort newest first
  assert.equal(readFileSync(path.join(logDir, gen, newest)).readUInt8(4), 2, 'the newest segment is chained (version 2)');
  const store = ['--store', h.storeUrl];
  const log = await homefsOk(['log', h.ref, ...store]);
  assert.match(log.split('\n')[0] ?? '', /^ {2}log .* \(fsync'd, log segment \d+, not sealed yet\)$/, 'log shows the pending segment on top');
  assert.equal(log.trim().split('\n').length, 2, 'one sealed generation below it');
  assert.equal(await homefsOk(['cat', h.ref, 'a/b/c/second', ...store]), 'logged, not sealed');
  assert.match(await homefsOk(['ls', h.ref, 'a/b/c', ...store]), /a\/b\/c\/second\n$/);
  assert.match(await homefsOk(['diff', h.ref, ...store]), /^A +\S+ B  a\/b\/c\/second$/m, 'diff: HEAD (with the log) against its parent');
  const pulled = path.join(h.root, 'pulled');
  await homefsOk(['pull', h.ref, pulled, ...store]);
  assert.equal(readFileSync(path.join(pulled, 'a/b/c/second'), 'utf8'), 'logged, not sealed');
  const du = JSON.parse(await homefsOk(['du', h.ref, '--json', ...store])) as { homes: Array<{ snapshot: string; logicalBytes: number }> };
  const seg = /log segment (\d+)/.exec(log)?.[1];
  assert.ok(seg !== undefined);
  assert.equal(du.homes[0]?.logicalBytes, 'sealed'.length + 'logged, not sealed'.length + 'chained'.length, 'du counts the logged files');
  const verified = JSON.parse(await homefsOk(['verify', h.ref, '--full', '--json', ...store])) as { blocks: number; problems: unknown[] };
  assert.deepEqual(verified.problems, [], 'verify finds the logged block in its segment');
  assert.ok(verified.blocks >= 3, 'verify checks the logged blocks too');
  const loc = JSON.parse(await homefsOk(['locality', h.ref, '--cache-dir', h.hostDirs('host1').cache, '--json', ...store])) as { blocks: number; snapshot: string };
  assert.equal(loc.snapshot, du.homes[0]?.snapshot, 'locality and du look at the same (logged) snapshot');
  assert.equal(loc.blocks, 3, 'locality counts the logged blocks');
  const ro = await h.mount({ host: 'reader', mnt: h.mountpoint('ro'), extra: ['--read-only'] });
  assert.equal(readFileSync(path.join(ro, 'a/b/c/second'), 'utf8'), 'logged, not sealed', 'a read-only mount shows the log');
  await h.sleep(ro);
  await homefsOk(['fork', h.ref, 'acme/forked', ...store]);
  assert.equal(await homefsOk(['cat', 'acme/forked', 'a/b/c/second', ...store]), 'logged, not sealed', 'the fork holds it as an ordinary snapshot');

  await h.kill9(mnt);
  const mnt2 = await h.mount({ host: 'host2', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.equal(readFileSync(path.join(mnt2, 'a/b/c/second'), 'utf8'), 'logged, not sealed', 'replayed on a fresh host');
  assert.equal(readFileSync(path.join(mnt2, 'a/third'), 'utf8'), 'chained');
  const after = await homefsOk(['log', h.ref, ...store]);
  assert.doesNotMatch(after, /log segment/, 'the replay advanced HEAD to the segment');
  await h.sleep(mnt2);
});

const burst = new TestHome('acme', 'burst');
after(() => burst.cleanup());

test('an fsync right after an unpack larger than a segment is a segment that leaves fresh names out; a fresh host has the fsync’d file', async () => {
  // Nothing stored in the background and no protection runs: the unpack's 24 MiB are all pending at the fsync.
  const mnt = await burst.mount({ extra: ['--no-write-behind', '--protect-interval', '0'] });
  await writeFsync(`${mnt}/first`, 'sealed'); // (a new home's first fsync seals: the log follows a HEAD)
  await shOk(`mkdir ${mnt}/unpack && python3 -c 'import sys\nfor i in range(10, 34): open(f"{sys.argv[1]}/f{i}", "w").write((f"{i}\\n" * 349526)[:1048576])' ${mnt}/unpack`);
  await writeFsync(`${mnt}/note`, 'fsynced after the unpack');
  const store = ['--store', burst.storeUrl];
  assert.match((await homefsOk(['log', burst.ref, ...store])).split('\n')[0] ?? '', /log segment/, 'the fsync went to the log: no seal uploaded the unpack');
  await burst.kill9(mnt);
  const mnt2 = await burst.mount({ host: 'host2', mnt: burst.mountpoint('fresh'), extra: ['--takeover'] });
  assert.equal(readFileSync(path.join(mnt2, 'note'), 'utf8'), 'fsynced after the unpack', 'the fsync’d file is there');
  const kept = readdirSync(path.join(mnt2, 'unpack'));
  assert.ok(kept.length < 24, `fresh files nobody fsync'd were left out (${kept.length} of 24 kept)`);
  for (const f of kept) {
    assert.equal(readFileSync(path.join(mnt2, 'unpack', f), 'utf8'), `${f.slice(1)}\n`.repeat(349526).slice(0, 1048576), `${f} is whole`);
  }
  await burst.sleep(mnt2);
});
