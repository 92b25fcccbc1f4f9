/**
 * The latency proxy of `bench/run --rtt` (bench/lib/latencyproxy.ts) as a process for shell benchmarks:
 * prints the port it listens on, and on SIGUSR1 writes the requests since the last SIGUSR1, by method, as
 * one JSON line to `<countsFile>` (bench/pushpull-ab.sh: the store requests of each step).
 *
 *   node dist/bench/counting-proxy.js <upstreamHost:port> <delayMs> <countsFile>
 */
import { writeFileSync } from 'node:fs';
import { LatencyProxy } from './lib/latencyproxy.js';

const [target, delay, countsFile] = process.argv.slice(2);
const [host, port] = (target ?? '').split(':');
if (!host || !port || delay === undefined || !countsFile) {
  console.error('usage: counting-proxy <upstreamHost:port> <delayMs> <countsFile>');
  process.exit(2);
}
const proxy = new LatencyProxy(host, Number(port), Number(delay));
let seen = 0;
process.on('SIGUSR1', () => {
  const byMethod: Record<string, number> = {};
  for (const s of proxy.spans.slice(seen)) byMethod[s.method] = (byMethod[s.method] ?? 0) + 1;
  const total = proxy.spans.length - seen;
  seen = proxy.spans.length;
  writeFileSync(countsFile, JSON.stringify({ total, ...byMethod }) + '\n');
});
process.on('SIGTERM', () => void proxy.stop().then(() => process.exit(0)));
void proxy.start().then(() => console.log(proxy.port));
