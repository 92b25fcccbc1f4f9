#!/usr/bin/env python3
"""
FUSE requests as the kernel saw them (its fuse:fuse_request_send / fuse_request_end tracepoints, Linux 6.16+):
per client process, when its first request was sent and its last answered, how many, their summed and
largest latency, from a trace recorded with `trace_clock` mono. A request waits in this latency for the
daemon's event loop as well as for its answer, so a loop held by background work shows here, not in the
daemon's own metrics. bench/move-ab.sh records one per move with FTRACE=1.

    bench/fusetrace.py TRACE T0 [SECONDS] [COMM]

T0: the session's start (Unix seconds, as move-ab.sh prints it); requests sent within SECONDS after it
(default 5) count; COMM: also list each request of the processes whose name starts with it.
"""
import re
import sys
import time
from collections import defaultdict

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): fuse_request_(send|end): connection (\d+) req (\d+)(?: opcode \d+ \((\w+)\))?')


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    offset = time.time() - time.monotonic()  # mono trace stamps to Unix time (no clock step in between)
    t0 = float(sys.argv[2]) - offset
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    comm = sys.argv[4] if len(sys.argv) > 4 else None
    sent = {}
    done = []
    with open(sys.argv[1]) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            who, _pid, ts, kind, conn, req, op = m.groups()
            at = float(ts) - t0
            if kind == 'send':
                sent[(conn, req)] = (at, op, who)
            elif (conn, req) in sent:
                start, op, who = sent.pop((conn, req))
                if 0 <= start <= window:
                    done.append((start, at, op, who))
    done.sort()
    per = defaultdict(lambda: [float('inf'), 0.0, 0, 0.0, 0.0])
    for start, end, _op, who in done:
        p = per[who]
        p[0] = min(p[0], start)
        p[1] = max(p[1], end)
        p[2] += 1
        p[3] += end - start
        p[4] = max(p[4], end - start)
    for who, (first, last, n, total, worst) in sorted(per.items(), key=lambda kv: kv[1][0]):
        print(f'{who:16} first sent {first:.3f} s, last answered {last:.3f} s, {n} requests, {total * 1000:.0f} ms in all, longest {worst * 1000:.1f} ms')
    if comm:
        for start, end, op, who in done:
            if who.startswith(comm):
                print(f'  {start:.4f} {end:.4f} {(end - start) * 1000:8.2f} ms {op} {who}')


if __name__ == '__main__':
    main()
