/**
 * What a first touch of fresh memory costs here (not a test): a 20 MiB Buffer filled in 64 KiB copies, the
 * first time (every page faults in) and again (no faults), with glibc's malloc told not to ask for huge pages
 * and told to ask (`glibc.malloc.hugetlb=0` / `=1`: each in a child process, as GLIBC_TUNABLES is read at
 * start), the figures behind docs/decisions/0089-huge-pages-for-received-bytes.md. The host's setting is
 * printed first: with `never`, both rows are the same.
 *
 * Run: npx tsc -p . && node dist/bench/firsttouch.js [rounds=5]
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MiB = 1024 * 1024;
const rounds = Number(process.argv[2] ?? 5);

if (process.env.FIRSTTOUCH_CHILD) {
  const src = Buffer.alloc(64 * 1024, 7);
  const first: number[] = [];
  const again: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const b = Buffer.allocUnsafe(20 * MiB);
    let t = performance.now();
    for (let at = 0; at < b.length; at += src.length) src.copy(b, at);
    first.push(performance.now() - t);
    t = performance.now();
    for (let at = 0; at < b.length; at += src.length) src.copy(b, at);
    again.push(performance.now() - t);
  }
  const median = (xs: number[]): string => (xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number).toFixed(1);
  console.log(`${process.env.GLIBC_TUNABLES}: 20 MiB first touch median ${median(first)} ms, again ${median(again)} ms (${rounds} rounds)`);
} else {
  let thp = 'unknown';
  try {
    thp = readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8').trim();
  } catch {
    // not Linux, or no THP
  }
  console.log(`transparent_hugepage/enabled: ${thp}`);
  for (const tunable of ['glibc.malloc.hugetlb=0', 'glibc.malloc.hugetlb=1']) {
    const r = spawnSync(process.execPath, [process.argv[1] ?? '', String(rounds)], { env: { ...process.env, FIRSTTOUCH_CHILD: '1', GLIBC_TUNABLES: tunable }, encoding: 'utf8' });
    process.stdout.write(r.stdout || r.stderr);
  }
}
