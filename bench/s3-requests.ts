/**
 * S3 request benchmark (not a test): client CPU per object request through the SDK path (S3Store) and the
 * signed-here path (LeanS3Store, store/s3lean.ts), against the test Ceph (test/support/ceph.sh start; its
 * exports in the environment). N objects of SIZE bytes, 64 in flight: PUT, create-only PUT of existing
 * objects (412), GET. Prints wall time and this process's CPU per request. The figures go into
 * docs/decisions/0039-s3-requests-without-the-sdk.md.
 *
 * Run: npx tsc -p . && eval "$(test/support/ceph.sh start)" && node dist/bench/s3-requests.js [N=3000] [SIZE=37000]
 */
import { randomBytes } from 'node:crypto';
import { parseS3Url, S3Store } from '../src/store/s3.js';
import { LeanS3Store } from '../src/store/s3lean.js';
import type { Store } from '../src/store/store.js';
import { mapLimit } from '../src/util/concurrency.js';

const n = Number(process.argv[2] ?? 3000);
const size = Number(process.argv[3] ?? 37000);
const base = process.env.HOMEFS_TEST_S3_URL;
if (!base) throw new Error('HOMEFS_TEST_S3_URL is unset: eval "$(test/support/ceph.sh start)" first');
const data = Array.from({ length: n }, () => randomBytes(size));

async function measure(label: string, store: Store, op: (key: string, d: Buffer) => Promise<unknown>): Promise<void> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await mapLimit(data, 64, (d, i) => op(`bench/o${i}`, d));
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  process.stdout.write(`${label.padEnd(24)} wall ${(ms / 1000).toFixed(2)} s, client CPU ${((c.user + c.system) / 1000 / n).toFixed(3)} ms per request (${store.constructor.name})\n`);
}

for (const kind of ['sdk', 'lean'] as const) {
  const url = new URL(base);
  url.pathname = `${url.pathname}-s3req-${kind}-${process.pid}`;
  const loc = parseS3Url(url);
  const store = kind === 'sdk' || loc.endpoint === undefined ? new S3Store(loc) : new LeanS3Store({ ...loc, endpoint: loc.endpoint });
  try {
    await measure(`${kind} PUT`, store, (k, d) => store.put(k, d));
    await measure(`${kind} create-only PUT (412)`, store, (k, d) => store.putIfAbsent(k, d));
    await measure(`${kind} GET`, store, (k) => store.get(k));
  } finally {
    await mapLimit(data, 64, (_, i) => store.delete(`bench/o${i}`));
    await store.close();
  }
}
