/**
 * The latency proxy of `bench/run --rtt` on its own, for measuring by hand (e.g. a daemon under --cpu-prof):
 *
 *   node dist/bench/lib/tools/rttproxy.js <upstream port on 127.0.0.1> <delay ms> [port file]
 *
 * Prints the port it listens on (127.0.0.1 only; also written to the port file if given), and on SIGINT or
 * SIGTERM a JSON summary of the requests it saw (count, by method, busy time, mean and max in flight),
 * then exits. With RTTPROXY_LOG=<file>, every request also goes to that file, one JSON line each
 * ({ start, firstByte, method, target }, ms since the proxy started), for a per-request timeline.
 */
import { writeFileSync } from 'node:fs';
import { LatencyProxy, concurrency } from '../latencyproxy.js';

const [upstream, delay, portFile] = process.argv.slice(2);
if (!upstream || !/^\d+$/.test(upstream) || !delay || !/^\d+$/.test(delay)) {
  process.stderr.write('usage: rttproxy <upstream port on 127.0.0.1> <delay ms> [port file]\n');
  process.exit(2);
}
const proxy = new LatencyProxy('127.0.0.1', Number(upstream), Number(delay));
await proxy.start();
process.stdout.write(`${proxy.port}\n`);
if (portFile) writeFileSync(portFile, `${proxy.port}\n`);
const done = async (): Promise<void> => {
  const byMethod: Record<string, number> = {};
  for (const s of proxy.spans) byMethod[s.method] = (byMethod[s.method] ?? 0) + 1;
  const from = proxy.spans[0]?.start ?? 0;
  const to = proxy.now();
  process.stdout.write(`${JSON.stringify({ ...concurrency(proxy.spans, from, to), byMethod, firstToLastMs: to - from })}\n`);
  const log = process.env.RTTPROXY_LOG;
  if (log) writeFileSync(log, proxy.spans.map((s) => JSON.stringify(s)).join('\n') + '\n');
  await proxy.stop();
  process.exit(0);
};
process.on('SIGINT', () => void done());
process.on('SIGTERM', () => void done());
