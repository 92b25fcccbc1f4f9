"""Store faults: lib/proxy.py sits between the homefs daemon and the S3 endpoint (HOMEFS_TEST_S3_URL) and
injects latency, 503 SlowDown, connection resets, a hung request and a wrong response body. Asserts:
reads retry and then fail with EIO in bounded time, no corrupted byte is ever served, seals retry, fsync
under --fsync store fails instead of lying, the daemon never exits on its own, and everything recovers
when the faults stop. `faults.proxy_selftest` first proves each fault against a local HTTP server, so a
failure below is the daemon's, not the proxy's."""
import errno
import http.client
import os
import random
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lib.asserts import eq, read, true, write
from lib.harness import check
from lib.homefs import BIN
from lib.proxy import FaultProxy, endpoint_of, rewrite_url

MIB = 1 << 20
READ_BOUND = 90  # seconds an uncached read may take to fail with EIO while the store is down


@check('faults.proxy_selftest')
def _(t):
    body = os.urandom(5000)

    class H(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self):
            n = int(self.headers['Content-Length'])
            got = self.rfile.read(n)
            self.send_response(200 if got == body else 400)
            self.send_header('Content-Length', '0')
            self.end_headers()

    up = ThreadingHTTPServer(('127.0.0.1', 0), H)
    threading.Thread(target=up.serve_forever, daemon=True).start()
    px = FaultProxy('127.0.0.1', up.server_address[1]).start()

    def req(method, path, data=None, timeout=5):
        c = http.client.HTTPConnection('127.0.0.1', px.port, timeout=timeout)
        try:
            c.request(method, path, body=data)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()
    try:
        eq(req('GET', '/o'), (200, body), 'pass-through GET')
        eq(req('PUT', '/o', body)[0], 200, 'pass-through PUT body intact')
        px.add('slowdown', 'GET', '/o', times=1)
        s, b = req('GET', '/o')
        eq(s, 503, 'slowdown status')
        true(b'SlowDown' in b, 'slowdown body')
        px.add('wrong_body', 'GET', '/o', times=1)
        s, b = req('GET', '/o')
        true(s == 200 and len(b) == len(body) and b != body, 'wrong_body keeps status and length, changes bytes')
        px.add('reset', 'GET', '/o', times=1)
        try:
            req('GET', '/o')
            raise AssertionError('reset answered')
        except (ConnectionError, http.client.RemoteDisconnected):
            pass
        px.add('latency', 'GET', '/o', times=1, seconds=0.3)
        t0 = time.monotonic()
        req('GET', '/o')
        true(time.monotonic() - t0 >= 0.3, 'latency applied')
        px.add('hang', 'GET', '/o', times=1)
        try:
            req('GET', '/o', timeout=0.5)
            raise AssertionError('hung request answered')
        except TimeoutError:
            pass
        px.clear()
        eq(req('GET', '/o'), (200, body), 'recovered after clear')
    finally:
        px.stop()
        up.shutdown()


class S3Home:
    """A home on the S3 test endpoint behind a fresh FaultProxy, with a unique prefix per check."""

    def __init__(self, t, tag):
        self.t, self.env = t, t.env
        s3 = t.runner.s3_url
        self.proxy = FaultProxy(*endpoint_of(s3)).start()
        prefix = f'fstests-{os.getpid()}-{tag}-{random.randrange(1 << 30)}'
        self.direct = rewrite_url(s3, prefix_suffix=prefix)
        self.url = rewrite_url(s3, port=self.proxy.port, prefix_suffix=prefix)
        self.home = f'fstests/{tag}'
        self.mnts = []

    def push(self, files, extra=()):
        src = os.path.join(self.t.scratch, 'push-src')
        os.makedirs(src, exist_ok=True)
        for name, data in files.items():
            write(os.path.join(src, name), data)
        p = subprocess.run([BIN, 'push', src, self.home, '--store', self.direct, *extra], capture_output=True, timeout=300)
        eq(p.returncode, 0, f'homefs push: {p.stderr.decode().strip()}')

    def mount(self, fsync='store', extra=()):
        cache, state, mnt = self.env.fresh_dirs(self.home.split('/')[1])
        self.env.mount(self.home, mnt, cache, state, store_url=self.url, extra=('--fsync', fsync, '--takeover', *extra))
        self.mnts.append(mnt)
        self.pid = int(self.env.status(mnt)['pid'])
        return mnt

    def alive(self):
        try:
            os.kill(self.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def close(self):
        self.proxy.clear()
        try:
            for m in self.mnts:
                if m in self.env.active:
                    self.env.sleep(m, timeout=180)
        finally:
            self.proxy.stop()


def _timed_read(path):
    t0 = time.monotonic()
    try:
        return read(path), None, time.monotonic() - t0
    except OSError as e:
        return None, e, time.monotonic() - t0


def _files(n=4, size=300000):
    return {f'f{i}': random.Random(i).randbytes(size + i) for i in range(n)}


@check('faults.baseline_through_proxy', needs=('homefs', 's3'), timeout=180)
def _(t):
    h = S3Home(t, 'baseline')
    try:
        files = _files()
        h.push(files)
        mnt = h.mount()
        for n, d in files.items():
            eq(read(os.path.join(mnt, n)), d, f'{n} through the proxy')
        write(os.path.join(mnt, 'new'), b'new data')
        h.env.sync(mnt)
        true(h.proxy.count('PUT', 'blocks') >= 1, 'the seal uploaded through the proxy')
    finally:
        h.close()
    eq(h.env.verify(h.home, h.direct).returncode, 0, 'store verifies')


@check('faults.latency', needs=('homefs', 's3'), timeout=300)
def _(t):
    h = S3Home(t, 'latency')
    try:
        files = _files()
        h.push(files)
        h.proxy.add('latency', seconds=0.3)
        mnt = h.mount()
        for n, d in files.items():
            eq(read(os.path.join(mnt, n)), d, f'{n} with 300 ms latency')
        write(os.path.join(mnt, 'slow'), b'x' * 100000)
        h.env.sync(mnt, timeout=200)
    finally:
        h.close()


@check('faults.slowdown_read_retries', needs=('homefs', 's3'), timeout=180)
def _(t):
    h = S3Home(t, 'slowdown')
    try:
        files = _files()
        h.push(files)
        mnt = h.mount()
        h.proxy.add('slowdown', 'GET', '/blocks/', times=3)
        data, err, dt = _timed_read(os.path.join(mnt, 'f0'))
        true(err is None, f'read with 3 SlowDowns failed: {err}')
        eq(data, files['f0'], 'content after SlowDown retries')
    finally:
        h.close()


def _outage(t, tag, action):
    """The store answers every block GET with `action`: uncached reads fail with EIO in bounded time,
    cached files stay readable, the daemon stays up, and reads work again once the fault stops."""
    h = S3Home(t, tag)
    try:
        files = _files()
        h.push(files)
        mnt = h.mount()
        eq(read(os.path.join(mnt, 'f0')), files['f0'], 'cached before the outage')
        h.proxy.add(action, 'GET', '/blocks/')
        data, err, dt = _timed_read(os.path.join(mnt, 'f1'))
        if data is not None:
            true(data == files['f1'], f'{action}: a wrong byte was served')
            raise AssertionError(f'{action} on every block GET, yet the uncached read succeeded')
        eq(err.errno, errno.EIO, f'{action}: errno of the failed read')
        true(dt <= READ_BOUND, f'{action}: the read took {dt:.0f}s to fail (bound {READ_BOUND}s)')
        eq(read(os.path.join(mnt, 'f0')), files['f0'], 'cached file readable during the outage')
        true(h.alive(), 'the daemon exited during the outage')
        h.proxy.clear()
        eq(read(os.path.join(mnt, 'f1')), files['f1'], 'uncached read after the store came back')
        eq(h.env.status(mnt)['pid'], h.pid, 'same daemon')
    finally:
        h.close()


@check('faults.outage_slowdown_eio', needs=('homefs', 's3'), timeout=240)
def _(t):
    _outage(t, 'outage503', 'slowdown')


@check('faults.outage_resets_eio', needs=('homefs', 's3'), timeout=240)
def _(t):
    _outage(t, 'outagerst', 'reset')


@check('faults.hung_request', needs=('homefs', 's3'), timeout=240)
def _(t):
    h = S3Home(t, 'hang')
    try:
        files = _files()
        h.push(files)
        mnt = h.mount()
        h.proxy.add('hang', 'GET', '/blocks/', times=1)
        data, err, dt = _timed_read(os.path.join(mnt, 'f2'))
        true(dt <= READ_BOUND, f'a read behind one hung request took {dt:.0f}s (bound {READ_BOUND}s)')
        if err is not None:
            eq(err.errno, errno.EIO, 'errno')
            eq(read(os.path.join(mnt, 'f2')), files['f2'], 'retry after the hung request')
        else:
            eq(data, files['f2'], 'content after the hung request was abandoned')
        true(h.alive(), 'daemon alive')
    finally:
        h.close()


@check('faults.wrong_body_never_served', needs=('homefs', 's3'), timeout=240)
def _(t):
    h = S3Home(t, 'wrongbody')
    try:
        files = _files()
        h.push(files)
        mnt = h.mount()
        h.proxy.add('wrong_body', 'GET', '/blocks/')
        data, err, dt = _timed_read(os.path.join(mnt, 'f3'))
        if data is not None:
            raise AssertionError('a block with a wrong body was served' if data != files['f3']
                                 else 'read succeeded although every block GET returned a wrong body')
        eq(err.errno, errno.EIO, 'errno of a read of corrupt data')
        true(dt <= READ_BOUND, f'took {dt:.0f}s')
        h.proxy.clear()
        eq(read(os.path.join(mnt, 'f3')), files['f3'], 'correct data once the store is honest again')
    finally:
        h.close()


@check('faults.seal_retries', needs=('homefs', 's3'), timeout=300)
def _(t):
    h = S3Home(t, 'sealretry')
    try:
        mnt = h.mount()
        data = os.urandom(2 * MIB)
        write(os.path.join(mnt, 'd'), data)
        h.proxy.add('slowdown', 'PUT', None, times=3)
        h.proxy.add('reset', 'PUT', None, times=2)
        h.env.sync(mnt, timeout=240)
        true(h.alive(), 'daemon alive')
    finally:
        h.close()
    eq(h.env.verify(h.home, h.direct).returncode, 0, 'store verifies after retried seal')


@check('faults.fsync_store_fails_not_lies', needs=('homefs', 's3'), timeout=400)
def _(t):
    h = S3Home(t, 'fsyncfail')
    try:
        mnt = h.mount('store')
        p = os.path.join(mnt, 'precious')
        h.proxy.add('slowdown', 'PUT', None)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, b'must not be acknowledged while the store is down')
            t0 = time.monotonic()
            try:
                os.fsync(fd)
                raise AssertionError('fsync under --fsync store succeeded while every PUT failed')
            except OSError as e:
                eq(e.errno, errno.EIO, 'fsync errno while the store refuses writes')
            true(time.monotonic() - t0 <= 240, 'fsync took too long to fail')
            true(h.alive(), 'daemon alive after the failed fsync')
            h.proxy.clear()
            os.fsync(fd)  # the store is back: now it must succeed
        finally:
            os.close(fd)
        h.env.sleep(mnt, timeout=240)
        mnt2 = h.mount()
        eq(read(os.path.join(mnt2, 'precious')), b'must not be acknowledged while the store is down',
           'fsynced data on a fresh host')
    finally:
        h.close()


@check('faults.log_parked_costs_no_requests', needs=('homefs', 's3'), timeout=240)
def _(t):
    """The fsync log costs nothing while the home is parked: with fsync'd segments pending and no
    seal due (--idle-seal 1h), a parked mount sends the store nothing but its lease renewals."""
    h = S3Home(t, 'logparked')
    try:
        mnt = h.mount('store', extra=('--park-after', '1s', '--idle-seal', '1h'))
        for i in range(4):  # the first seals (a new home has no log yet), the others go to the log
            fd = os.open(os.path.join(mnt, f'f{i}'), os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, random.Random(i).randbytes(3000 + i))
            os.fsync(fd)
            os.close(fd)
        lg = subprocess.run([BIN, 'log', h.home, '--store', h.direct], capture_output=True, timeout=60)
        true(b"fsync'd, log segment" in lg.stdout, f'fsyncs went to the log: {lg.stdout.decode()[:300]}')
        # Write-behind stores the fsync'd files' blocks soon after (their own upload, not the log's cost):
        # the window opens once its backlog is empty, still before the park.
        t_wb = time.monotonic()
        while (h.env.status(mnt).get('protection') or {}).get('backlogFiles', 0) != 0:
            true(time.monotonic() < t_wb + 30, 'write-behind did not drain its backlog within 30 s')
            time.sleep(0.05)
        t0 = time.monotonic()  # the window starts before the park: parking must not send anything either
        while h.env.status(mnt)['state'] != 'parked':
            true(time.monotonic() < t0 + 60, 'the mount did not park within 60 s of its last request')
            time.sleep(0.2)
        time.sleep(max(0.0, t0 + 15 - time.monotonic()))  # longer than one lease renewal period (TTL / 3)
        eq(h.env.status(mnt)['state'], 'parked', 'still parked after the window')
        reqs = h.proxy.requests_since(t0)
        lease = [r for r in reqs if r[1].split('?')[0].endswith('/LEASE')]
        true(lease, f'the proxy saw the lease renewals in the window (it saw {len(reqs)} requests)')
        eq([r for r in reqs if r not in lease], [], 'requests other than the lease while parked with a pending log')
    finally:
        h.close()


@check('faults.store_outage_mid_log', needs=('homefs', 's3'), timeout=400)
def _(t):
    """The fsync log across a store outage: fsyncs logged before it survive, the fsync during it
    fails with EIO (never a lie), the next one after it succeeds, and a fresh host after kill -9 sees all
    that was acknowledged."""
    h = S3Home(t, 'logoutage')
    try:
        mnt = h.mount('store')
        acked = {}
        for i in range(3):  # the first seals (a new home has no log yet), the others go to the log
            name, data = f'before{i}', random.Random(i).randbytes(5000 + i)
            fd = os.open(os.path.join(mnt, name), os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            acked[name] = data
        lg = subprocess.run([BIN, 'log', h.home, '--store', h.direct], capture_output=True, timeout=60)
        true(b"fsync'd, log segment" in lg.stdout, f'fsyncs went to the log: {lg.stdout.decode()[:300]}')
        h.proxy.add('slowdown', 'PUT', None)
        fd = os.open(os.path.join(mnt, 'during'), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, b'written during the outage')
            try:
                os.fsync(fd)
                raise AssertionError('fsync succeeded while every PUT failed')
            except OSError as e:
                eq(e.errno, errno.EIO, 'fsync errno while the store refuses writes')
            true(h.alive(), 'daemon alive after the failed fsync')
            h.proxy.clear()
            os.fsync(fd)
            acked['during'] = b'written during the outage'
        finally:
            os.close(fd)
        os.kill(h.pid, signal.SIGKILL)
        end = time.monotonic() + 10
        while h.alive() and time.monotonic() < end:
            time.sleep(0.02)
        h.env.unmount(mnt)
        mnt2 = h.mount()
        for name, data in acked.items():
            eq(read(os.path.join(mnt2, name)), data, f'{name} on a fresh host after kill -9')
    finally:
        h.close()
