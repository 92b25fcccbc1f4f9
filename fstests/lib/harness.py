"""The fstests check registry and runner loop.

A check is a plain function decorated with @check('area.name', needs=...). It receives a Ctx whose `d`
is a fresh, empty directory inside the filesystem under test, and fails by raising (AssertionError from
the helpers in lib/asserts.py, or any exception). Checks never run inside the process that serves the
mount: the runner is its own python3 process and the daemon is started through the homefs CLI.

`needs` names what a check requires beyond a mounted directory:
  'cli'     the homefs CLI is built (push/pull/verify work without a mount)
  'homefs'  the runner manages homefs mounts itself (no --mountpoint): crash, faults, hostile input
  's3'      an S3 endpoint (HOMEFS_TEST_S3_URL) to put the fault proxy in front of
  'full'    too slow for --quick
A check whose needs are unmet is reported as skipped with the reason, except that in a full run an
unmet 's3' is a failure (the full suite must not silently shrink).
"""
import os
import shutil
import signal
import threading
import time
import traceback

_REGISTRY = []
CLI_MAIN = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(
    os.environ.get('HOMEFS_BIN') or os.path.join(os.path.dirname(__file__), '..', '..', 'bin', 'homefs')))),
    'dist', 'src', 'cli', 'main.js')


class Skip(Exception):
    """Raised by a check to report itself skipped (with the reason as message)."""


class CheckTimeout(Exception):
    pass


def check(name, needs=(), timeout=60):
    def deco(fn):
        _REGISTRY.append(Check(name, fn, tuple(needs), timeout))
        return fn
    return deco


class Check:
    def __init__(self, name, fn, needs, timeout):
        self.name = name
        self.fn = fn
        self.needs = needs
        self.timeout = timeout


def registry():
    return list(_REGISTRY)


class Ctx:
    """What a check sees: its own directory `d` in the mount, the mount root, mode flags and the env."""

    def __init__(self, runner, name, d):
        self.runner = runner
        self.name = name
        self.d = d
        self.mnt = runner.mnt
        self.quick = runner.quick
        self.seed = runner.seed
        self.env = runner.env          # HomefsEnv or None
        self.scratch = os.path.join(runner.scratch, name.replace('/', '_'))
        os.makedirs(self.scratch, exist_ok=True)
        self.timeout = None  # set by the runner: the check's time limit in seconds

    def p(self, *parts):
        return os.path.join(self.d, *parts)

    def log(self, msg):
        print(f'     {self.name}: {msg}', flush=True)


class Runner:
    def __init__(self, mnt, quick, seed, env, scratch, only, s3_url, can_manage):
        self.mnt = mnt
        self.quick = quick
        self.seed = seed
        self.env = env
        self.scratch = scratch
        self.only = only
        self.s3_url = s3_url
        self.can_manage = can_manage
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []
        self.base = os.path.join(mnt, f'fstests.{os.getpid()}') if mnt else None
        self.on_hang = None  # callable invoked by the watchdog when a check is stuck in the kernel

    def unmet(self, c):
        for n in c.needs:
            if n == 'homefs' and not self.can_manage:
                return 'needs the runner to manage homefs mounts (run without --mountpoint)'
            if n == 's3' and not self.s3_url:
                return 'needs an S3 endpoint: HOMEFS_TEST_S3_URL is unset'
            if n == 'cli' and not os.path.exists(CLI_MAIN):
                return 'needs the homefs CLI built (npx tsc -p .)'
            if n == 'full' and self.quick:
                return 'full run only'
        return None

    def run(self, checks):
        if self.base:
            os.makedirs(self.base, exist_ok=True)
        for c in checks:
            if self.only and not any(pat in c.name for pat in self.only.split(',')):
                continue
            reason = self.unmet(c)
            if reason:
                if 's3' in c.needs and not self.s3_url and not self.quick:
                    self._fail(c.name, reason, 0.0)
                else:
                    self.skipped += 1
                    print(f'skip {c.name}: {reason}', flush=True)
                continue
            self._run_one(c)
        if self.base and self.failed == 0:
            shutil.rmtree(self.base, ignore_errors=True)

    def _run_one(self, c):
        d = os.path.join(self.base, c.name) if self.base else None
        if d:
            os.makedirs(d, exist_ok=False)
        ctx = Ctx(self, c.name, d)
        limit = c.timeout * (1 if self.quick else 4)
        ctx.timeout = limit
        t0 = time.monotonic()
        done = threading.Event()
        watchdog = threading.Thread(target=self._watch, args=(c.name, limit, done), daemon=True)

        def on_alarm(signum, frame):
            raise CheckTimeout(f'timed out after {limit}s')

        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)
        watchdog.start()
        try:
            c.fn(ctx)
        except Skip as e:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self.skipped += 1
            print(f'skip {c.name}: {e}', flush=True)
            return
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 -- any error is a failed check, reported with its line
            signal.setitimer(signal.ITIMER_REAL, 0)
            self._fail(c.name, _describe(e), time.monotonic() - t0)
            return
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            done.set()
        dt = time.monotonic() - t0
        self.passed += 1
        print(f'ok   {c.name} ({dt:.2f}s)', flush=True)
        if d:
            shutil.rmtree(d, ignore_errors=True)

    def _watch(self, name, limit, done):
        # The alarm cannot interrupt a syscall stuck in an uninterruptible FUSE wait; if the check is still
        # running well after its alarm, abort the FUSE connection so the kernel returns ENOTCONN.
        if done.wait(limit + 30):
            return
        print(f'FAIL {name}: stuck in the kernel {limit + 30}s; aborting the FUSE connection', flush=True)
        if self.on_hang:
            self.on_hang()

    def _fail(self, name, msg, dt):
        self.failed += 1
        self.failures.append((name, msg))
        print(f'FAIL {name} ({dt:.2f}s): {msg}', flush=True)


def _describe(e):
    if isinstance(e, AssertionError):
        msg = str(e) or 'assertion failed'
    else:
        msg = f'{type(e).__name__}: {e}'
    tb = traceback.extract_tb(e.__traceback__)
    here = [f for f in tb if '/fstests/' in f.filename and '/lib/' not in f.filename]
    if here:
        f = here[-1]
        msg += f'  [{os.path.basename(f.filename)}:{f.lineno}]'
    return msg.replace('\n', ' | ')


def summary(r):
    line = f'{r.passed} passed, {r.failed} failed'
    if r.skipped:
        line += f', {r.skipped} skipped'
    return line

