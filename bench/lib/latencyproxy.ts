/**
 * A TCP latency proxy for `bench/run --rtt MS`: listens on 127.0.0.1 and forwards every connection to one
 * upstream (the test Ceph RGW), holding each chunk of client→server data for MS milliseconds before it is
 * forwarded, in order. Server→client data flows back at once. A request/response exchange on a kept-alive
 * connection therefore pays MS once per HTTP request (its request line and headers wait MS; its body chunks
 * wait MS each but overlap, so a body adds MS once, not per chunk), which is what a store one network hop
 * away costs. TCP connection set-up is not delayed (connect() to the proxy answers at once), so a client
 * that opens many connections is not charged the extra handshake round trip it would pay on a real network.
 *
 * The proxy also counts HTTP requests (a client chunk that starts with a request line and follows the
 * server's answer to the previous one, see `startsRequest`) and logs each request's arrival and the time of
 * its response's first byte, so a run can tell how many store requests a step made and how many were in
 * flight at once (`concurrency`).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

const REQUEST_LINE = /^(GET|HEAD|PUT|POST|DELETE|OPTIONS|PATCH) \S+ HTTP\/1\.[01]\r\n/;

/**
 * Whether a client→server chunk starts a new HTTP request: it begins with a request line and it is the
 * first data on the connection or the server has answered since the client last sent (HTTP clients of S3
 * do not pipeline). The first condition keeps a body sent after `100 Continue` (a server answer) from
 * counting; the second keeps a body chunk that happens to start like a request line from counting.
 */
export function startsRequest(chunk: Buffer, serverAnsweredSinceLastSend: boolean): boolean {
  if (!serverAnsweredSinceLastSend) return false;
  return REQUEST_LINE.test(chunk.subarray(0, 1024).toString('latin1'));
}

/**
 * When a chunk that arrived at `now` may be forwarded: `delayMs` after its arrival, and never before the
 * chunk ahead of it on the same connection (data stays in order).
 */
export function releaseTime(now: number, delayMs: number, previousRelease: number): number {
  return Math.max(now + delayMs, previousRelease);
}

/** One request seen by the proxy: arrival and first response byte, in ms since the proxy started. */
export interface RequestSpan {
  start: number;
  firstByte: number;
  method: string;
  /** The request target (path and query), for request logs. */
  target: string;
}

/**
 * From request spans inside a window: the count, the time at least one request was in flight ("busy"),
 * and the mean number in flight while busy (sum of durations / busy time). A mean near 1 with busy close
 * to the window's length means the client waited for one round trip after another.
 */
export function concurrency(spans: readonly RequestSpan[], from: number, to: number): { requests: number; busyMs: number; meanInFlight: number; maxInFlight: number } {
  const inside = spans.filter((s) => s.start >= from && s.start < to).map((s) => ({ a: s.start, b: Math.min(Math.max(s.firstByte, s.start), to) }));
  inside.sort((x, y) => x.a - y.a);
  let busy = 0;
  let sum = 0;
  let curA = -Infinity;
  let curB = -Infinity;
  for (const s of inside) {
    sum += s.b - s.a;
    if (s.a > curB) {
      if (curB > curA) busy += curB - curA;
      curA = s.a;
      curB = s.b;
    } else curB = Math.max(curB, s.b);
  }
  if (curB > curA) busy += curB - curA;
  const events = inside.flatMap((s) => [[s.a, 1], [s.b, -1]] as const).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let cur = 0;
  let max = 0;
  for (const [, d] of events) max = Math.max(max, (cur += d));
  return { requests: inside.length, busyMs: busy, meanInFlight: busy > 0 ? sum / busy : 0, maxInFlight: max };
}

export class LatencyProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly t0 = performance.now();
  readonly spans: RequestSpan[] = [];
  port = 0;

  constructor(readonly upstreamHost: string, readonly upstreamPort: number, readonly delayMs: number) {}

  /** Milliseconds since the proxy was created (the clock of `spans`). */
  now(): number {
    return performance.now() - this.t0;
  }

  get requests(): number {
    return this.spans.length;
  }

  async start(): Promise<void> {
    const server = createServer((client) => this.handle(client));
    this.server = server;
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(0, '127.0.0.1', () => ok());
    });
    const addr = server.address();
    if (addr === null || typeof addr === 'string') throw new Error('latency proxy: no TCP address');
    this.port = addr.port;
  }

  private handle(client: Socket): void {
    const up = connect(this.upstreamPort, this.upstreamHost);
    this.sockets.add(client);
    this.sockets.add(up);
    client.setNoDelay(true);
    up.setNoDelay(true);
    let answered = true; // the server "answered" the empty past: the first request counts
    let open: RequestSpan | undefined;
    let lastRelease = 0;
    const close = (): void => {
      client.destroy();
      up.destroy();
      this.sockets.delete(client);
      this.sockets.delete(up);
    };
    client.on('data', (chunk: Buffer) => {
      const now = this.now();
      if (startsRequest(chunk, answered)) {
        const line = chunk.subarray(0, Math.max(0, chunk.indexOf(0x0d))).toString('latin1').split(' ');
        open = { start: now, firstByte: NaN, method: line[0] ?? '', target: line[1] ?? '' };
        this.spans.push(open);
      }
      answered = false;
      const at = releaseTime(now, this.delayMs, lastRelease);
      lastRelease = at;
      // One queue and one timer per connection: a timer per chunk could fire out of order (Node keeps timers
      // in lists by duration, and fractional durations of one tick land in different lists), which
      // reordered request bodies under load (RGW: XAmzContentSHA256Mismatch).
      queue.push({ at, chunk });
      if (!timer) timer = setTimeout(pump, Math.max(0, at - now));
    });
    const queue: Array<{ at: number; chunk: Buffer }> = [];
    let timer: NodeJS.Timeout | null = null;
    const pump = (): void => {
      timer = null;
      const t = this.now();
      while (queue.length > 0 && (queue[0] as { at: number }).at <= t) {
        const { chunk } = queue.shift() as { chunk: Buffer };
        if (!up.destroyed) up.write(chunk);
      }
      const next = queue[0];
      if (next) timer = setTimeout(pump, Math.max(0, next.at - t));
      else if (ended) up.end();
    };
    let ended = false;
    up.on('data', (chunk: Buffer) => {
      answered = true;
      if (open && Number.isNaN(open.firstByte)) open.firstByte = this.now();
      if (!client.destroyed && !client.write(chunk)) {
        up.pause();
        client.once('drain', () => up.resume());
      }
    });
    // a half-close from the client is forwarded after the data ahead of it
    client.on('end', () => {
      ended = true;
      if (!timer) up.end();
    });
    up.on('end', () => client.end());
    client.on('error', close);
    up.on('error', close);
    client.on('close', () => setTimeout(close, Math.max(0, lastRelease - this.now()) + 5));
    up.on('close', close);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((ok) => server.close(() => ok()));
  }
}
