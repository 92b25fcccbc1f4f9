/**
 * Times what a mount does with a push pack's index (transfer/pushpack.ts): building `PushPackTable` and
 * finding every block in it, against decoding the index into entries and a Map of hex hashes (what mounts
 * did before the table). A synthetic index of N random hashes (default 95,147: the full-size home's pack).
 *
 *   node dist/bench/lib/tools/packtable.js [N] [rounds=4]
 */
import { randomBytes } from 'node:crypto';
import { decodePushPackIndex, PushPackTable, PUSHPACK_HEADER, writePushPackHead } from '../../../src/transfer/pushpack.js';

const n = Number(process.argv[2] ?? 95_147);
const rounds = Number(process.argv[3] ?? 4);
const entries = Array.from({ length: n }, (_, i) => ({ hash: randomBytes(32).toString('hex'), offset: i * 1000, length: 1000 }));
const head = Buffer.alloc(PUSHPACK_HEADER + n * 44);
writePushPackHead(head, '0'.repeat(64), entries, n * 1000);
const ms = (t0: number): string => (performance.now() - t0).toFixed(1);
for (let r = 0; r < rounds; r++) {
  let t0 = performance.now();
  const table = new PushPackTable(head);
  const build = ms(t0);
  t0 = performance.now();
  let found = 0;
  for (const e of entries) if (table.find(e.hash) >= 0) found++;
  const finds = ms(t0);
  t0 = performance.now();
  const where = new Map<string, number>();
  decodePushPackIndex(head).entries.forEach((e, i) => where.set(e.hash, i));
  process.stdout.write(`round ${r + 1}: table ${build} ms, ${found} finds ${finds} ms; entries + Map ${ms(t0)} ms\n`);
}
