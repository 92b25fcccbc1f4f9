/**
 * A mount that keeps its records in memory under `--max-records` (inodes/trim.ts), through the kernel: a
 * walk of a home ten times larger than the budget lists it whole and the records come down under the
 * budget while the kernel keeps what it was told; a second walk is served from the kernel's caches; files
 * read back the same with the same inode numbers (the records the requests need come back); changes in
 * directories that were dropped and loaded again survive a sleep and a fresh host.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { TestHome, sh, shOk } from './support/homefs-mount.js';

let h: TestHome;
const BUDGET = 60;

before(async () => {
  h = new TestHome('acme', 'trim');
  // 24 directories, each with 12 files and a subdirectory of 4: 24 × 18 + 1 = 433 entries.
  await shOk(`mkdir -p ${h.root}/src && cd ${h.root}/src && python3 - <<'PY'
import os
for d in range(24):
    os.makedirs(f"d{d:02}/sub", exist_ok=True)
    for f in range(12):
        with open(f"d{d:02}/f{f:02}.txt", "w") as fh: fh.write(f"file {d} {f}\\n" * (f + 1))
    for f in range(4):
        with open(f"d{d:02}/sub/s{f}.txt", "w") as fh: fh.write(f"sub {d} {f}\\n")
PY`);
  await shOk(`${process.execPath} ${path.resolve('bin/homefs')} push ${h.root}/src ${h.ref} --store ${h.storeUrl}`);
});
after(async () => {
  await h.cleanup();
});

interface Memory { records: number; loadsDropped: number; remembered: number }

async function memory(mnt: string): Promise<Memory> {
  return (await h.status(mnt)).memory as Memory;
}

/** Polls until the records are under the budget (the trim waits for loads to age and for the kernel's forgets). */
async function underBudget(mnt: string): Promise<Memory> {
  let m = await memory(mnt);
  for (let i = 0; i < 100 && m.records > BUDGET; i++) {
    await new Promise((r) => setTimeout(r, 200));
    m = await memory(mnt);
  }
  return m;
}

const listing = (dir: string): Promise<string> => shOk(`cd ${dir} && find . \\( -type f -printf 'f %s %p\\n' \\) -o -printf '%y %p\\n' | sort`);
const sums = (dir: string): Promise<string> => shOk(`cd ${dir} && find . -type f -print0 | sort -z | xargs -0 sha256sum`);

test('records stay under --max-records; a second walk costs no load; everything reads back the same, with the same numbers', async () => {
  const mnt = await h.mount({ host: 'a', mnt: h.mountpoint('a'), extra: ['--max-records', String(BUDGET)] });
  // A process working in a directory whose entries the kernel holds: getcwd keeps working while the trim runs.
  const go = path.join(h.root, 'go');
  const worker = sh(`cd ${mnt}/d05/sub && cat * > /dev/null && python3 - <<'PY'
import os, time
failed = 0
while not os.path.exists('${go}'):
    try: os.getcwd()
    except OSError: failed += 1
    time.sleep(0.02)
print(failed, os.getcwd())
PY`, { timeoutMs: 90_000 });
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await listing(mnt), await listing(`${h.root}/src`));
  const inos = await shOk(`cd ${mnt} && find . -printf '%i %p\\n' | sort -k2`);
  const m = await underBudget(mnt);
  assert.ok(m.records <= BUDGET, `records ${m.records} > ${BUDGET}`);
  assert.ok(m.loadsDropped > 0 && m.remembered > 0, JSON.stringify(m));
  assert.equal(await listing(mnt), await listing(`${h.root}/src`), 'the second walk');
  const again = await memory(mnt);
  assert.ok(again.loadsDropped === m.loadsDropped && again.records === m.records, `the second walk loaded nothing: ${JSON.stringify(again)} after ${JSON.stringify(m)}`);
  assert.equal(await sums(mnt), await sums(`${h.root}/src`));
  assert.equal(await shOk(`cd ${mnt} && find . -printf '%i %p\\n' | sort -k2`), inos, 'inode numbers survive a drop and a reload');
  writeFileSync(go, '');
  const w = await worker;
  assert.equal(w.code, 0, w.stderr);
  assert.equal(w.stdout.trim(), `0 ${mnt}/d05/sub`, 'getcwd failed that many times while the trim ran');
  await h.sleep(mnt);
});

test('changes in dropped and reloaded directories reach a fresh host', async () => {
  const mnt = await h.mount({ host: 'b', mnt: h.mountpoint('b'), extra: ['--max-records', String(BUDGET)] });
  await shOk(`find ${mnt} > /dev/null`);
  await underBudget(mnt);
  await shOk(`cd ${mnt} && echo changed >> d03/f01.txt && echo new > d05/sub/new.txt && mv d07/f02.txt d20/moved.txt && rm d11/sub/s3.txt && mkdir d13/sub/deeper && echo x > d13/sub/deeper/x`);
  const dropped = (await memory(mnt)).loadsDropped;
  // Opening every file brings the records back (the kernel still lists everything from its own caches), and the
  // trim drops them again around the changes, whose own loads stay.
  await shOk(`find ${mnt} -type f -exec cat {} + > /dev/null`);
  for (let i = 0; i < 50 && (await memory(mnt)).loadsDropped === dropped; i++) await new Promise((r) => setTimeout(r, 200));
  assert.ok((await memory(mnt)).loadsDropped > dropped);
  const want = await sums(mnt);
  assert.match(want, /d20\/moved.txt/);
  assert.doesNotMatch(want, /d11\/sub\/s3.txt|d07\/f02.txt/);
  await h.sleep(mnt);
  const fresh = await h.mount({ host: 'c', mnt: h.mountpoint('fresh') });
  assert.equal(await sums(fresh), want);
  assert.equal(await shOk(`tail -1 ${fresh}/d03/f01.txt`), 'changed\n');
  await h.sleep(fresh);
});
