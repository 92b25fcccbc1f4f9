/**
 * The ways a host mounts a home without the homefs CLI: `mount -t fuse.homefs` and an fstab entry through
 * the installed mount helper (/sbin/mount.fuse.homefs), with --quota shown by `df` and enforced as ENOSPC,
 * metrics over the control socket, the final seal on `umount`; the helper's option errors; and the systemd
 * unit passing `systemd-analyze verify`. The test always installs this checkout's helper (one left in /sbin
 * by another checkout may point at a CLI that is gone) and leaves /sbin as found: a helper that was there is
 * put back, one that was not is removed. Every mount is torn down on every exit path.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forceUnmount, isMounted } from './support/fuse-mount-helpers.js';

const BIN = fileURLToPath(new URL('../../bin/homefs', import.meta.url));
const UNIT = fileURLToPath(new URL('../../mount-helper/homefs@.service', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

const homefs = (args: string[]): Promise<Run> => run(process.execPath, [BIN, ...args]);

async function ok(r: Promise<Run>, what: string): Promise<string> {
  const x = await r;
  assert.equal(x.code, 0, `${what}: ${x.stderr}${x.stdout}`);
  return x.stdout;
}

/** The pid of the daemon serving the state directory (its pid file). */
function daemonPid(stateDir: string): number {
  return Number.parseInt(readFileSync(join(stateDir, 'daemon.pid'), 'utf8'), 10);
}

/** Waits until the daemon `pid` has exited (after umount it seals, then exits). */
async function waitForExit(pid: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`homefs daemon ${pid} still running 60 s after umount`);
}

test('mount -t fuse.homefs and an fstab entry mount and unmount a home; quota, metrics, final seal', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-ops-mount-'));
  const mnt = join(work, 'mnt');
  const previous = existsSync('/sbin/mount.homefs') ? readFileSync('/sbin/mount.homefs') : undefined;
  const hadFuseHelper = existsSync('/sbin/mount.fuse.homefs');
  try {
    await mkdir(mnt);
    const store = `file://${join(work, 'store')}`;
    const src = join(work, 'src');
    await mkdir(src);
    await writeFile(join(src, 'hello.txt'), 'hello from the store\n');
    await ok(homefs(['push', src, 'acme/agent1', '--store', store]), 'push');
    await ok(homefs(['install-helper']), 'install-helper');
    assert.ok(existsSync('/sbin/mount.homefs') && existsSync('/sbin/mount.fuse.homefs'));

    const opts = `store=${store},cache_dir=${join(work, 'cache')},state_dir=${join(work, 'state')}`;
    await ok(run('mount', ['-t', 'fuse.homefs', 'acme/agent1', mnt, '-o', `${opts},_netdev,nofail,quota=4M,fuse_spin_us=20,fuse_idle_poll_us=20,log_level=debug`]), 'mount -t fuse.homefs');
    assert.ok(isMounted(mnt));
    assert.match(readFileSync('/proc/self/mounts', 'utf8'), new RegExp(`^homefs:acme/agent1 ${mnt} fuse\\.homefs `, 'm'));
    assert.equal(await ok(run('cat', [join(mnt, 'hello.txt')]), 'cat'), 'hello from the store\n');
    const df = await ok(run('df', ['-B1', '--output=size', mnt]), 'df');
    assert.equal(df.trim().split('\n')[1]?.trim(), String(4 * 1024 * 1024), 'df shows the quota');
    const dd = await run('dd', ['if=/dev/zero', `of=${join(mnt, 'too-big')}`, 'bs=1M', 'count=5']);
    assert.notEqual(dd.code, 0, 'writing past the quota fails');
    assert.match(dd.stderr, /No space left on device/);
    await ok(run('rm', [join(mnt, 'too-big')]), 'rm');
    await ok(run('sh', ['-c', `echo written through mount -t > ${join(mnt, 'note.txt')}`]), 'write');
    const metrics = await ok(homefs(['status', mnt, '--metrics']), 'status --metrics');
    assert.match(metrics, /^# TYPE homefs_seals_total counter$/m);
    const text = await ok(homefs(['status', mnt]), 'status');
    assert.match(text, /^state +(active|parked)$/m);
    assert.doesNotMatch(text, /\[object Object\]/, 'nested status fields print as JSON');
    assert.match(metrics, /^process_start_time_seconds\{org="acme",home="agent1"\} [0-9]+$/m);

    const pid1 = daemonPid(join(work, 'state'));
    await ok(run('umount', [mnt]), 'umount');
    assert.equal(isMounted(mnt), false);
    await waitForExit(pid1);
    assert.equal(await ok(homefs(['cat', 'acme/agent1', 'note.txt', '--store', store]), 'cat note'), 'written through mount -t\n');
    assert.equal((await homefs(['cat', 'acme/agent1', 'too-big', '--store', store])).code, 1, 'the removed file is not in the snapshot');

    // An fstab entry (mount(8) reads the options from the table; _netdev/nofail/noauto are its business).
    const fstab = join(work, 'fstab');
    await writeFile(fstab, `# test table\nacme/agent1  ${mnt}  fuse.homefs  ${opts},_netdev,nofail,noauto,allow_other  0  0\n`);
    await ok(run('mount', ['-T', fstab, mnt]), 'mount -T fstab');
    assert.ok(isMounted(mnt));
    assert.match(readFileSync('/proc/self/mounts', 'utf8'), new RegExp(`^homefs:acme/agent1 ${mnt} fuse\\.homefs \\S*allow_other`, 'm'));
    assert.equal(await ok(run('cat', [join(mnt, 'note.txt')]), 'cat via fstab mount'), 'written through mount -t\n');
    await ok(run('sh', ['-c', `echo via fstab >> ${join(mnt, 'note.txt')}`]), 'append');
    const pid2 = daemonPid(join(work, 'state'));
    await ok(run('umount', [mnt]), 'umount fstab mount');
    await waitForExit(pid2);
    assert.equal(await ok(homefs(['cat', 'acme/agent1', 'note.txt', '--store', store]), 'cat note'), 'written through mount -t\nvia fstab\n');

    // Option errors: one line from the helper, nothing mounted.
    for (const [o, re] of [[`${opts},bogus`, /mount\.homefs: unknown option 'bogus'/], [`${opts},quota`, /option 'quota' needs a value/]] as const) {
      const bad = await run('mount', ['-t', 'fuse.homefs', 'acme/agent1', mnt, '-o', o]);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, re);
      assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
      assert.equal(isMounted(mnt), false);
    }
    const badHome = await run('mount', ['-t', 'fuse.homefs', 'Acme/agent1', mnt, '-o', opts]);
    assert.notEqual(badHome.code, 0);
    assert.match(badHome.stderr, /^homefs: invalid org name 'Acme'/m);
  } finally {
    forceUnmount(mnt);
    await homefs(['uninstall-helper']);
    if (previous) {
      await writeFile('/sbin/mount.homefs', previous, { mode: 0o755 });
      if (hadFuseHelper) await symlink('mount.homefs', '/sbin/mount.fuse.homefs');
    }
    await rm(work, { recursive: true, force: true });
  }
  assert.equal(existsSync('/sbin/mount.homefs'), previous !== undefined, '/sbin left as found');
  assert.equal(existsSync('/sbin/mount.fuse.homefs'), previous !== undefined && hadFuseHelper, '/sbin left as found');
});

test('homefs@.service passes systemd-analyze verify once installed; install/uninstall under a prefix', async () => {
  const root = await mkdtemp(join(tmpdir(), 'homefs-ops-unit-'));
  try {
    const out = await ok(homefs(['install-helper', '--prefix', root, '--systemd']), 'install-helper --systemd');
    const unit = join(root, 'etc/systemd/system/homefs@.service');
    assert.deepEqual(out.trim().split('\n'), [`installed ${root}/sbin/mount.homefs`, `installed ${root}/sbin/mount.fuse.homefs`, `installed ${unit}`]);
    const verify = await run('systemd-analyze', ['verify', unit]);
    assert.equal(verify.code, 0, verify.stderr);
    assert.equal(verify.stderr.trim(), '', 'no warnings');
    const text = readFileSync(unit, 'utf8');
    assert.ok(text.split('\n').includes(`Environment="HOMEFS_NODE=${process.execPath}"`), 'the unit names this node binary');
    assert.match(text, new RegExp(`^ExecStart='${BIN.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}' mount \\$\\{HOMEFS_HOME\\} \\$\\{HOMEFS_MOUNTPOINT\\} --foreground `, 'm'));
    const repo = readFileSync(UNIT, 'utf8');
    for (const line of ['Type=notify', 'NotifyAccess=main', 'Restart=on-failure', 'TimeoutStopSec=5min', 'KillSignal=SIGTERM', 'StandardOutput=journal', 'EnvironmentFile=-/etc/homefs/%i.env', 'Environment=HOMEFS_HOME=%I']) {
      assert.ok(repo.split('\n').includes(line), `unit has ${line}`);
    }
    const helper = readFileSync(join(root, 'sbin/mount.homefs'), 'utf8');
    assert.match(helper, new RegExp(`^HOMEFS_CLI="\\$\\{HOMEFS_CLI:-${BIN.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\}"$`, 'm'));
    const fake = await run(join(root, 'sbin/mount.fuse.homefs'), ['acme/a', '/nonexistent', '-f', '-o', 'store=file:///x,_netdev,rw,defaults,x-systemd.automount']);
    assert.equal(fake.code, 0, `-f (fake) parses and stops: ${fake.stderr}`);
    const removed = await ok(homefs(['uninstall-helper', '--prefix', root]), 'uninstall-helper');
    assert.equal(removed.trim().split('\n').length, 3);
    assert.equal(existsSync(join(root, 'sbin/mount.homefs')) || existsSync(unit), false);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
