"""Run a function in N forked worker processes at once (so the kernel sees truly concurrent callers) and
collect each worker's return value or its exception text."""
import os
import pickle
import time
import traceback


def parallel(n, fn, timeout=120):
    """fn(i) runs in child i; returns [result_i]; raises AssertionError listing any worker that failed."""
    kids = []
    for i in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                out = ('ok', fn(i))
            except BaseException as e:  # noqa: BLE001
                out = ('err', f'{type(e).__name__}: {e} @ {traceback.extract_tb(e.__traceback__)[-1].lineno}')
            try:
                data = pickle.dumps(out)
            except Exception as e:  # noqa: BLE001
                data = pickle.dumps(('err', f'unpicklable result: {e}'))
            with os.fdopen(w, 'wb') as f:
                f.write(data)
            os._exit(0)
        os.close(w)
        kids.append((pid, r))
    results, errors = [], []
    deadline = time.monotonic() + timeout
    for i, (pid, r) in enumerate(kids):
        with os.fdopen(r, 'rb') as f:
            data = f.read()
        while True:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        if not data:
            errors.append(f'worker {i}: died without a result')
            results.append(None)
            continue
        kind, val = pickle.loads(data)
        if kind == 'err':
            errors.append(f'worker {i}: {val}')
            results.append(None)
        else:
            results.append(val)
    if errors:
        raise AssertionError('; '.join(errors[:4]))
    return results
