/**
 * `homefs mount` as a non-root user (nobody), through real mounts: one that works (mount, write, read,
 * sleep, the data sealed), and failures before the mount is live that must return at once with the
 * daemon's one-line reason and a non-zero exit, leaving no daemon, no pid lock and no lease behind.
 *
 * Whether nobody may open /dev/fuse is decided per test, without touching the machine's /dev/fuse (other
 * tests use it concurrently): the scenario runs in a private mount namespace (`unshare --mount`) where a
 * fresh device node for the same device (10:229) is bind-mounted over /dev/fuse, mode 0600 root (the
 * machine as first reported) or 0666; /etc/fuse.conf is replaced there too, so that --allow-other fails in
 * fusermount3 itself whatever the host's configuration. Everything mounted in the namespace goes away with
 * it; a daemon left behind by a failed run is found by its command line and killed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, run } from './support/homefs-mount.js';

const NOBODY = 65534;

function scenario(work: string): string {
  const mnt = join(work, 'mnt');
  const as = `setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups env HOME=${work}`;
  const homefs = `${as} timeout 30 ${process.execPath} ${BIN}`;
  const args = `--store file://${work}/store --state-dir ${work}/state --cache-dir ${work}/cache`;
  // [-]-foreground: the pattern must not match pgrep's own command line
  // A daemon that reported (or finished its sleep) exits right after: wait up to 10 s for that, no more.
  const daemon = `pgrep -f -- '${mnt} .*[-]-foreground'`;
  const leftovers = (tag: string): string => `
    for i in $(seq 100); do ${daemon} >/dev/null || break; sleep 0.1; done
    echo "${tag}.daemons $(${daemon} | wc -l)"
    echo "${tag}.pidlock $(test -e ${work}/state/daemon.pid && echo present || echo absent)"
    echo "${tag}.lease $(test -e ${work}/store/acme/homes/agent/LEASE && echo present || echo absent)"`;
  return `
    mknod ${work}/dev/closed c 10 229 && chmod 600 ${work}/dev/closed
    mknod ${work}/dev/open c 10 229 && chmod 666 ${work}/dev/open
    printf '# user_allow_other is not set\\n' > ${work}/fuse.conf
    mount --bind ${work}/fuse.conf /etc/fuse.conf
    mount --bind ${work}/dev/closed /dev/fuse
    set +e
    out=$(${homefs} mount acme/agent ${mnt} ${args} 2>&1); echo "closed.rc $?"; echo "closed.out $out"
    ${leftovers('closed')}
    out=$(${homefs} mount acme/agent ${mnt} ${args} --foreground 2>&1 >/dev/null); echo "fg.rc $?"; echo "fg.out $out"
    ${leftovers('fg')}
    umount /dev/fuse && mount --bind ${work}/dev/open /dev/fuse
    out=$(${homefs} mount acme/agent ${mnt} ${args} --allow-other 2>&1); echo "allow.rc $?"; echo "allow.out $out"
    ${leftovers('allow')}
    set -e
    echo "mount.out $(${homefs} mount acme/agent ${mnt} ${args})"
    ${as} sh -c 'echo hello > ${mnt}/note.txt'
    echo "read $(${as} cat ${mnt}/note.txt)"
    echo "owner $(${as} stat -c %u ${mnt}/note.txt)"
    ${homefs} sleep ${mnt} >/dev/null
    ${leftovers('slept')}
    echo "sealed $(${homefs} cat acme/agent note.txt --store file://${work}/store)"
  `;
}

/** Pids of homefs daemons whose command line names `mnt`. */
async function daemonsOf(mnt: string): Promise<number[]> {
  const pids: number[] = [];
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const argv = (await readFile(`/proc/${d}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (argv.includes(mnt) && argv.includes('--foreground') && argv.includes(BIN)) pids.push(Number(d));
  }
  return pids;
}

function field(out: string, key: string): string {
  const line = out.split('\n').find((l) => l.startsWith(`${key} `) || l === key);
  return line === undefined ? `<no ${key} in output>` : line.slice(key.length + 1);
}

test('mount as a non-root user: works with /dev/fuse open to it; failures return at once with the reason', async () => {
  const work = await mkdtemp(join(tmpdir(), 'homefs-nonroot-'));
  try {
    await chmod(work, 0o755);
    await mkdir(join(work, 'mnt'));
    await mkdir(join(work, 'dev'), { mode: 0o755 });
    await chown(work, NOBODY, NOBODY);
    await chown(join(work, 'mnt'), NOBODY, NOBODY);
    // From a file, so that pgrep in it sees the daemon's command line and not the script's text
    await writeFile(join(work, 'scenario.sh'), scenario(work));
    const r = await run('unshare', ['--mount', '--propagation', 'private', 'bash', '-euo', 'pipefail', join(work, 'scenario.sh')], { timeoutMs: 180_000 });
    assert.equal(r.code, 0, `scenario failed:\n${r.stdout}\n${r.stderr}`);
    const out = r.stdout;

    // /dev/fuse 0600 root: caught before the kernel is asked; the reason names the device and the fix.
    assert.equal(field(out, 'closed.rc'), '1', out);
    const devFuse = `homefs: cannot mount: /dev/fuse is not readable and writable by this user (uid ${NOBODY}); give it mode 0666 (the usual) or run as root, and in a container pass --device /dev/fuse`;
    assert.equal(field(out, 'closed.out'), devFuse);
    // The same in the foreground: one line on stderr (the log on stdout has it as an event), no stack trace.
    assert.equal(field(out, 'fg.rc'), '1', out);
    assert.equal(field(out, 'fg.out'), devFuse);
    // --allow-other without user_allow_other: fusermount3 refuses inside the native mount call.
    assert.equal(field(out, 'allow.rc'), '1', out);
    assert.match(field(out, 'allow.out'), /homefs: cannot mount on .*\/mnt: mount failed \(allow_other needs user_allow_other in \/etc\/fuse\.conf for a non-root user; add it, or drop --allow-other\)$/);
    for (const tag of ['closed', 'fg', 'allow']) {
      assert.equal(field(out, `${tag}.daemons`), '0', `${tag}: no daemon left running`);
      assert.equal(field(out, `${tag}.pidlock`), 'absent', `${tag}: pid lock released`);
      assert.equal(field(out, `${tag}.lease`), 'absent', `${tag}: lease released`);
    }

    // /dev/fuse open to the user: mount, write, read and sleep all work, and the file is sealed.
    assert.match(field(out, 'mount.out'), /^mounted acme\/agent at /);
    assert.equal(field(out, 'read'), 'hello');
    assert.equal(field(out, 'owner'), String(NOBODY));
    assert.equal(field(out, 'slept.daemons'), '0');
    assert.equal(field(out, 'slept.lease'), 'absent');
    assert.equal(field(out, 'sealed'), 'hello');
  } finally {
    // A scenario that died half-way (or a daemon that hung, the bug this tests) may have left daemons
    // serving this test's mountpoint, and with them the namespace: kill exactly those.
    for (const pid of await daemonsOf(join(work, 'mnt'))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await rm(work, { recursive: true, force: true });
  }
});
