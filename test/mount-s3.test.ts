/**
 * The mounted home on the Ceph S3 store (a real RGW on 127.0.0.1): the agent workloads, kill -9 and a
 * remount on the same state directory, a fresh host taking over, a second mount refused by the lease, and a
 * mount with environment credentials that never loads the AWS SDK (and logs its wake.phases).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestHome, homefs, homefsOk, shOk } from './support/homefs-mount.js';
import { testS3Url } from './support/s3.js';
import { checkWorkloads, gitWorkload, sqliteWorkload, tarWorkload } from './support/workloads.js';

let h: TestHome;
let mnt: string;
before(async () => {
  h = new TestHome('acme', 's3home', await testS3Url());
  // sqlite fsyncs on every commit: the workloads run with --fsync local; the crash test below checks
  // --fsync store on its own mount.
  mnt = await h.mount({ extra: ['--fsync', 'local'] });
});
after(async () => {
  await h.cleanup();
});

test('S3: git, tar round trip and sqlite inside the mount', async () => {
  await gitWorkload(h, mnt);
  await tarWorkload(h, mnt);
  await sqliteWorkload(h, mnt);
});

test('S3: a second read-write mount is refused while the lease is live', async () => {
  const d = h.hostDirs('intruder');
  const r = await homefs(['mount', h.ref, h.mountpoint('intruder'), '--store', h.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /mounted read-write/);
});

test('S3: kill -9, remount on the same state dir, then a fresh host takes over and sees everything', async () => {
  await shOk(`cd ${mnt} && echo before-kill > local.txt`);
  await h.kill9(mnt);
  mnt = await h.mount({ mnt, extra: ['--fsync', 'store'] });
  assert.equal(await shOk(`cat ${mnt}/local.txt`), 'before-kill\n', 'same state dir: everything written before the kill');
  await shOk(`cd ${mnt} && printf fsynced > f.txt && python3 -c "import os; fd=os.open('f.txt', os.O_RDONLY); os.fsync(fd)"`);
  await h.kill9(mnt);
  const fresh = await h.mount({ host: 'fresh', mnt: h.mountpoint('fresh'), extra: ['--takeover'] });
  assert.equal(await shOk(`cat ${fresh}/f.txt ${fresh}/local.txt`), 'fsyncedbefore-kill\n', 'fresh host: every fsync under --fsync store');
  await checkWorkloads(fresh);
  await h.sleep(fresh);
});

test('S3: a mount with environment credentials loads no AWS SDK module (command and daemon), serves, and logs its wake phases', async () => {
  const lean = new TestHome('acme', 'nosdk', h.storeUrl);
  try {
    const trace = path.join(lean.root, 'imports');
    const d = lean.hostDirs('host1');
    const m = lean.mountpoint();
    const tracer = fileURLToPath(new URL('./support/trace-imports.js', import.meta.url));
    await homefsOk(['mount', lean.ref, m, '--store', lean.storeUrl, '--state-dir', d.state, '--cache-dir', d.cache], {
      env: { ...process.env, NODE_OPTIONS: `--import=${tracer}`, HOMEFS_TRACE_IMPORTS: trace },
    });
    lean.mounts.add(m);
    await shOk(`echo lean > ${m}/f.txt`);
    const phases = readFileSync(path.join(d.state, 'daemon.log'), 'utf8').split('\n').filter((l) => l.includes('"wake.phases"')).map((l) => (JSON.parse(l) as { ms: Record<string, number> }).ms);
    assert.equal(phases.length, 1, 'one wake.phases line per wake');
    const ms = phases[0] ?? {};
    assert.deepEqual(Object.keys(ms), ['startup', 'imports', 'services', 'store', 'lease', 'base', 'fuse', 'total']);
    assert.ok(Object.values(ms).every((v) => Number.isInteger(v) && v >= 0), JSON.stringify(ms));
    const parts = Object.entries(ms).filter(([k]) => k !== 'total').reduce((a, [, v]) => a + v, 0);
    assert.ok(Math.abs(parts - (ms.total ?? 0)) <= 8, `the phases add up to the total: ${JSON.stringify(ms)}`);
    await lean.sleep(m);
    await new Promise((r) => setTimeout(r, 300)); // the daemon writes its trace as it exits
    const lines = readFileSync(trace, 'utf8').split('\n').filter(Boolean);
    assert.ok(new Set(lines.map((l) => l.split(' ')[0])).size >= 2, 'the command and the daemon both traced');
    assert.ok(lines.some((l) => l.endsWith('/src/store/s3lean.js')), 'the s3 store was loaded');
    assert.deepEqual(lines.filter((l) => l.includes('@aws-sdk')).slice(0, 3), [], 'no @aws-sdk module');
    assert.equal(await shOk(`${process.execPath} ${path.resolve(fileURLToPath(import.meta.url), '../../../bin/homefs')} cat ${lean.ref} f.txt --store '${lean.storeUrl}'`), 'lean\n');
  } finally {
    await lean.cleanup();
  }
});
