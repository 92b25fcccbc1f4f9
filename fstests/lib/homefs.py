"""Driving homefs through its CLI, the way an operator would: mount (daemon in the background), sync,
sleep, status, verify, push/pull, and a kill -9 of the daemon for the crash matrix. All paths live under
one temporary base directory that the runner removes at the end.

Every mount this module makes is remembered so that `teardown_all` can unmount it on any exit path."""
import json
import os
import signal
import subprocess
import time

from . import mounts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# HOMEFS_BIN runs a different build (e.g. a frozen copy while others rebuild dist/ in this checkout).
BIN = os.environ.get('HOMEFS_BIN') or os.path.join(ROOT, 'bin', 'homefs')


class HomefsError(AssertionError):
    pass


class HomefsEnv:
    def __init__(self, base, store_url=None):
        self.base = base
        self.store_dir = os.path.join(base, 'store')
        os.makedirs(self.store_dir, exist_ok=True)
        self.store_url = store_url or f'file://{self.store_dir}'
        self.active = set()
        self._n = 0

    def fresh_dirs(self, tag):
        """A new (cache, state, mountpoint) triple: a 'host' of its own."""
        self._n += 1
        d = os.path.join(self.base, f'host{self._n}-{tag}')
        out = tuple(os.path.join(d, x) for x in ('cache', 'state', 'mnt'))
        for x in out:
            os.makedirs(x, exist_ok=True)
        return out

    def cli(self, *args, timeout=120, check=True, env=None):
        # fstests/run --fuse-passthrough MODE: every mount takes it (the suite runs on either write path).
        mode = os.environ.get('HOMEFS_FSTESTS_PASSTHROUGH')
        if mode and args and args[0] == 'mount' and '--fuse-passthrough' not in args:
            args = (*args, '--fuse-passthrough', mode)
        # fstests/run --max-records N: every mount keeps at most N records in memory (a small N drops and
        # reloads directories all through the suite).
        records = os.environ.get('HOMEFS_FSTESTS_MAX_RECORDS')
        if records and args and args[0] == 'mount' and '--max-records' not in args:
            args = (*args, '--max-records', records)
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        try:
            p = subprocess.run([BIN, *args], capture_output=True, timeout=timeout, env=full_env,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise HomefsError(f'homefs {" ".join(args)}: no answer within {timeout}s') from e
        if check and p.returncode != 0:
            err = (p.stderr or p.stdout).decode(errors='replace').strip().splitlines()
            raise HomefsError(f'homefs {" ".join(args)}: exit {p.returncode}: {" / ".join(err[-3:])}')
        return p

    def mount(self, home, mnt, cache, state, store_url=None, extra=(), timeout=60, check=True):
        p = self.cli('mount', home, mnt, '--store', store_url or self.store_url, '--cache-dir', cache,
                     '--state-dir', state, '--allow-other', *extra, timeout=timeout, check=check)
        if p.returncode == 0:
            self.active.add(mnt)
            if not mounts.is_mounted(mnt):
                raise HomefsError(f'homefs mount {home} {mnt} exited 0 but nothing is mounted there')
        return p

    def status(self, mnt):
        p = self.cli('status', mnt, '--json', timeout=30)
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            raise HomefsError(f'homefs status --json: not JSON: {p.stdout[:200]!r}') from e

    def sync(self, mnt, timeout=120):
        return self.cli('sync', mnt, timeout=timeout).stdout.decode().strip()

    def sleep(self, mnt, timeout=120):
        self.cli('sleep', mnt, timeout=timeout)
        if not mounts.wait_unmounted(mnt, 10):
            raise HomefsError(f'homefs sleep {mnt} exited 0 but the mount is still there')
        self.active.discard(mnt)

    def verify(self, home, store_url=None, timeout=300):
        return self.cli('verify', home, '--store', store_url or self.store_url, timeout=timeout, check=False)

    def kill9(self, mnt):
        """kill -9 the daemon serving mnt, wait for it to die, and clear the dead mount."""
        pid = int(self.status(mnt)['pid'])
        os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)
        self.unmount(mnt)
        return pid

    def unmount(self, mnt):
        ok = mounts.force_unmount(mnt)
        self.active.discard(mnt)
        if not ok:
            raise HomefsError(f'could not unmount {mnt}')

    def teardown_all(self):
        """Best-effort: sleep each live mount, then force whatever is left. Returns the mounts that stuck."""
        stuck = []
        for mnt in list(self.active):
            try:
                if mounts.is_mounted(mnt):
                    self.cli('sleep', mnt, timeout=60, check=False)
            except HomefsError:
                pass
            if not mounts.force_unmount(mnt):
                stuck.append(mnt)
            self.active.discard(mnt)
        return stuck
