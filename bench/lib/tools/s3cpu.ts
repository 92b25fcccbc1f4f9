/**
 * CPU per store request of the S3 client, by hand (docs/decisions/0045-s3-sdk-lean-middleware.md):
 *
 *   node dist/bench/lib/tools/s3cpu.js <s3 url> [requests=2000] [in flight=64]
 *
 * Puts 64 small objects (4 KiB, as trees and small files are) under the URL's prefix, then GETs them round
 * robin, `requests` in all, twice per client configuration, alternating: the SDK with its default middleware
 * and S3Store's lean stack. Prints wall time and process CPU (all threads) per request for each.
 */
import { randomBytes } from 'node:crypto';
import { S3Store, parseS3Url } from '../../../src/store/s3.js';
import { mapLimit } from '../../../src/util/concurrency.js';

const [url, reqArg, parArg] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: s3cpu <s3 url> [requests] [in flight]\n');
  process.exit(2);
}
const n = Number(reqArg ?? 2000);
const par = Number(parArg ?? 64);
const keys = Array.from({ length: 64 }, (_, i) => `s3cpu/${i}`);
const setup = new S3Store(parseS3Url(new URL(url)));
await mapLimit(keys, 16, (k) => setup.put(k, randomBytes(4096)));
await setup.close();
for (const round of [1, 2]) {
  for (const lean of [false, true]) {
    const s = new S3Store(parseS3Url(new URL(url)), { lean });
    await mapLimit(keys, par, (k) => s.get(k)); // warm the connections
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await mapLimit(Array.from({ length: n }, (_, i) => keys[i % keys.length] ?? ''), par, (k) => s.get(k));
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(c0);
    process.stdout.write(`round ${round} ${lean ? 'lean   ' : 'default'}: ${(wall / n * 1000).toFixed(0)} µs wall, ${((cpu.user + cpu.system) / n).toFixed(0)} µs CPU per GET\n`);
    await s.close();
  }
}
