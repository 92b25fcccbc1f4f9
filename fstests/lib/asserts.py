"""Assertion and file helpers shared by the checks: errno expectations, small file I/O, running a
function as another (non-root) user in a forked child, and a subprocess wrapper with a time limit."""
import errno
import os
import subprocess

NOBODY = 65534


def eq(a, b, what=''):
    if a != b:
        raise AssertionError(f'{what}: expected {b!r}, got {a!r}' if what else f'expected {b!r}, got {a!r}')


def true(v, what):
    if not v:
        raise AssertionError(what)


def errname(n):
    return errno.errorcode.get(n, str(n)) if n else 'success'


def expect_errno(want, fn, *args, what=''):
    """Call fn(*args) and require it to fail with errno `want` (an int or a tuple of accepted ints)."""
    wants = want if isinstance(want, tuple) else (want,)
    try:
        fn(*args)
    except OSError as e:
        if e.errno in wants:
            return e
        raise AssertionError(f'{what or fn.__name__}: expected {"/".join(errname(w) for w in wants)}, '
                             f'got {errname(e.errno)} ({e})')
    raise AssertionError(f'{what or fn.__name__}: expected {"/".join(errname(w) for w in wants)}, it succeeded')


def write(path, data=b'', mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def as_user(fn, uid=NOBODY, gid=NOBODY, groups=()):
    """Run fn() in a forked child with the given credentials; return 0 if it succeeded, else its errno.

    fn may return an int (used as the result) or raise OSError."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            try:
                res = fn()
                code = res if isinstance(res, int) else 0
            except OSError as e:
                code = e.errno or 255
            os.write(w, str(code).encode())
        except BaseException as e:  # noqa: BLE001
            try:
                os.write(w, f'X{type(e).__name__}: {e}'.encode())
            except OSError:
                pass
        finally:
            os._exit(0)
    os.close(w)
    out = b''
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    s = out.decode()
    if s.startswith('X') or not s:
        raise AssertionError(f'child as uid {uid} failed: {s[1:] or "no result"}')
    return int(s)


def user_errno(want, fn, uid=NOBODY, gid=NOBODY, what=''):
    got = as_user(fn, uid, gid)
    if got != want:
        raise AssertionError(f'{what} as uid {uid}: expected {errname(want)}, got {errname(got)}')


def sh(cmd, cwd=None, timeout=300, env=None, check=True, input=None):
    """Run a command (list, or string via bash); return CompletedProcess. Raise with its output on failure."""
    shell = isinstance(cmd, str)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    try:
        p = subprocess.run(['bash', '-c', cmd] if shell else cmd, cwd=cwd, env=full_env, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, input=input)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f'{cmd if shell else " ".join(cmd)}: timed out after {timeout}s') from e
    if check and p.returncode != 0:
        tail = (p.stderr or p.stdout or b'').decode(errors='replace').strip().splitlines()[-3:]
        raise AssertionError(f'{cmd if shell else " ".join(cmd)}: exit {p.returncode}: {" / ".join(tail)}')
    return p
