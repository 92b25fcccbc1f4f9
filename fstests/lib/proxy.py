"""A fault-injecting HTTP proxy to put between the homefs daemon and an S3 endpoint (loopback only).

Requests are forwarded verbatim (headers incl. Host, so SigV4 signatures stay valid; bodies raw, chunked
or not). Rules, changed at run time by the checks, decide per request what happens instead:

  latency(s)      wait s seconds, then forward
  slowdown        answer 503 with an S3 `SlowDown` error body
  reset           close the client connection with a TCP reset, answer nothing
  hang            hold the request open, answer nothing, until the proxy stops (or `release()`)
  wrong_body      forward, but flip bytes in the response body (same length, same headers)

A rule matches on method and a substring of the path (e.g. GET + '/blocks/') and fires `times` times
(None: until removed), after letting the first `after` matching requests through untouched. The proxy counts requests by (method, kind) so checks can wait for "uploads in
flight" before killing the daemon."""
import http.client
import socket
import struct
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
            b'<Message>Please reduce your request rate.</Message></Error>')


class Rule:
    def __init__(self, action, method=None, path=None, times=None, seconds=0.0, after=0):
        self.action, self.method, self.path, self.times, self.seconds = action, method, path, times, seconds
        self.fired = 0
        self.passed, self.after = 0, after

    def matches(self, method, path):
        return ((self.method is None or self.method == method) and (self.path is None or self.path in path)
                and (self.times is None or self.fired < self.times))

    def let_through(self):
        """True (and counted) while the first `after` matching requests pass untouched."""
        if self.passed < self.after:
            self.passed += 1
            return True
        return False


class FaultProxy:
    def __init__(self, upstream_host, upstream_port):
        self.up = (upstream_host, upstream_port)
        self.rules = []
        self.lock = threading.Lock()
        self.counts = {}
        self.log = []
        self.released = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *a):
                pass

            def _body(self):
                te = self.headers.get('Transfer-Encoding', '')
                if 'chunked' in te.lower():
                    raw = b''
                    while True:
                        line = self.rfile.readline()
                        raw += line
                        n = int(line.split(b';')[0].strip() or b'0', 16)
                        if n == 0:
                            while True:
                                t = self.rfile.readline()
                                raw += t
                                if t in (b'\r\n', b'\n', b''):
                                    return raw
                        raw += self.rfile.read(n + 2)
                n = int(self.headers.get('Content-Length') or 0)
                return self.rfile.read(n) if n else b''

            def _handle(self):
                body = self._body()
                rule = proxy._take(self.command, self.path)
                proxy._count(self.command, self.path)
                if rule is not None:
                    if rule.action == 'latency':
                        time.sleep(rule.seconds)
                    elif rule.action == 'slowdown':
                        self.send_response(503, 'Slow Down')
                        self.send_header('Content-Type', 'application/xml')
                        self.send_header('Content-Length', str(len(SLOWDOWN)))
                        self.end_headers()
                        self.wfile.write(SLOWDOWN)
                        return
                    elif rule.action == 'reset':
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
                        self.close_connection = True
                        return
                    elif rule.action == 'hang':
                        proxy.released.wait()
                        self.close_connection = True
                        return
                conn = http.client.HTTPConnection(*proxy.up, timeout=120)
                try:
                    conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    for k, v in self.headers.items():
                        conn.putheader(k, v)
                    conn.endheaders()
                    if body:
                        conn.send(body)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                if rule is not None and rule.action == 'wrong_body' and data:
                    data = bytes(b ^ 0x5A for b in data[:64]) + data[64:]
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in ('transfer-encoding', 'connection', 'content-length'):
                        self.send_header(k, v)
                if self.command != 'HEAD':
                    self.send_header('Content-Length', str(len(data)))
                elif resp.getheader('Content-Length'):
                    self.send_header('Content-Length', resp.getheader('Content-Length'))
                self.end_headers()
                if self.command != 'HEAD':
                    self.wfile.write(data)

            def do_GET(self):
                self._handle()

            do_PUT = do_POST = do_HEAD = do_DELETE = do_GET

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 256  # the listen backlog: a daemon opens up to 128 connections at once

            def handle_error(self, request, client_address):
                pass  # a client that went away mid-request is part of the game

        self.server = Server(('127.0.0.1', 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def add(self, action, method=None, path=None, times=None, seconds=0.0, after=0):
        r = Rule(action, method, path, times, seconds, after)
        with self.lock:
            self.rules.append(r)
        return r

    def clear(self):
        with self.lock:
            self.rules = []
        self.released.set()
        self.released = threading.Event()

    def _take(self, method, path):
        with self.lock:
            for r in self.rules:
                if r.matches(method, path):
                    if r.let_through():
                        return None
                    r.fired += 1
                    return r
        return None

    def _count(self, method, path):
        kind = 'blocks' if '/blocks/' in path else 'meta' if '/meta/' in path else 'homes' if '/homes/' in path else 'other'
        with self.lock:
            self.counts[(method, kind)] = self.counts.get((method, kind), 0) + 1
            self.log.append((time.monotonic(), method, path))

    def requests_since(self, t0):
        """(method, path) of every request that arrived at or after monotonic time t0."""
        with self.lock:
            return [(m, p) for t, m, p in self.log if t >= t0]

    def count(self, method, kind):
        with self.lock:
            return self.counts.get((method, kind), 0)



def endpoint_of(s3_url):
    """(host, port) of the endpoint= parameter of an s3:// store URL."""
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(s3_url).query)
    ep = urllib.parse.urlsplit(q['endpoint'][0])
    return ep.hostname, ep.port or 80


def rewrite_url(s3_url, port=None, prefix_suffix=None):
    """The same store URL, optionally pointed at 127.0.0.1:port and/or under a sub-prefix."""
    u = urllib.parse.urlsplit(s3_url)
    q = urllib.parse.parse_qs(u.query)
    if port is not None:
        q['endpoint'] = [f'http://127.0.0.1:{port}']
    path = u.path.rstrip('/')
    if prefix_suffix:
        path = f'{path}/{prefix_suffix}'
    query = '&'.join(f'{k}={v[0]}' for k, v in q.items())
    return urllib.parse.urlunsplit((u.scheme, u.netloc, path, query, ''))
