/**
 * `bench/run --rtt MS[,MS…]`: homefs and its peers over a real S3 store (the test Ceph RGW) with MS of
 * added round-trip time per request (bench/lib/latencyproxy.ts), all of them behind the same proxy. At each
 * latency, on a fresh prefix of the bucket: first sync (homefs push vs restic backup), `find` over a home
 * that was pushed and never mounted, pull of the whole home (homefs pull vs restic restore), the agent
 * resumes on an empty host (mount → cat → git status → grep -r; homefs, restic restore + work, restic
 * mount, rclone mount of the home as plain files) and move (the same on a second empty host after a
 * session on the first did that work). Every step starts with the page cache dropped; rounds alternate.
 */
import { join } from 'node:path';
import type { Ctx } from '../lib/context.js';
import type { LatencyProxy, RequestSpan } from '../lib/latencyproxy.js';
import { HOMEFS_BIN, homefsMount, homefsPush, homefsSleep, homefsStatus, rcloneMount, rcloneS3Env, restic, resticMount, unmount } from '../lib/peers.js';
import { s3Urls, storeRequestCounts, type CephS3 } from '../lib/s3env.js';
import { bash, dropCaches, q, run } from '../lib/sh.js';
import { Samples } from '../lib/stats.js';
import { RESUME, resume } from './workload.js';

/** A peer's find over a lazy mount is stopped after this long and reported as "> limit". */
export const FIND_LIMIT_MS = 90_000;
const REF = 'bench/agent';
const FIND_REF = 'bench/find'; // a fork of REF that nothing ever mounts before the find step

export interface WakeProfile {
  rtt: number;
  wallMs: number;
  spans: RequestSpan[];
  from: number;
  to: number;
  byOp: Record<string, number>;
}

/** The steps `--steps` can pick (`push` is the first sync, which always runs: every other step reads what it stored). */
export const RTT_STEPS = ['push', 'find', 'pull', 'wake', 'move'] as const;
export type RttStep = (typeof RTT_STEPS)[number];

export interface RttRun {
  s: Samples; // peer key `${system}@${rtt}`
  /** The steps to measure (bench/run --steps); all when undefined. */
  steps?: ReadonlySet<RttStep>;
  expected: { files: number; grepLines: number };
  profiles: WakeProfile[];
}

const key = (system: string, rtt: number): string => `${system}@${rtt}`;

/** The failure key of one step (what rttreport looks up): `${system}@${rtt}#${step}`. */
export const failKey = (system: string, rtt: number, stepName: string): string => `${key(system, rtt)}#${stepName}`;

/**
 * Runs one measured step; a failure is recorded for that system, latency and step, and the run goes on.
 * A step is skipped when the first sync it reads from failed at this latency.
 */
async function step(ctx: Ctx, s: Samples, system: string, rtt: number, stepName: string, fn: () => Promise<void>): Promise<void> {
  const k = failKey(system, rtt, stepName);
  const source = failKey(system.startsWith('restic') ? 'restic' : system === 'rclone mount' ? 'rclone' : 'homefs', rtt, 'firstsync');
  if (s.failed.has(source)) {
    s.fail(k, 'its first sync failed');
    return;
  }
  ctx.log(`  ${rtt} ms: ${system} ${stepName}`);
  try {
    await dropCaches();
    await fn();
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    ctx.log(`  ${k} failed: ${why}`);
    s.fail(k, why);
  }
}

async function countEntries(dir: string, timeoutMs: number): Promise<{ ms: number; entries: number; done: boolean }> {
  const r = await bash(`find -H ${q(dir)} | wc -l`, { timeoutMs, allowFail: true }); // -H: restic's snapshots/latest is a symlink
  return { ms: r.ms, entries: Number(r.stdout.trim()), done: r.code === 0 && r.ms < timeoutMs };
}

/** One latency, one round: everything on its own prefix of the bucket, through `proxy`. */
export async function rttRound(ctx: Ctx, c: CephS3, proxy: LatencyProxy, prefix: string, plain: string, run_: RttRun): Promise<void> {
  const { s, expected } = run_;
  const wants = (st: RttStep): boolean => run_.steps === undefined || run_.steps.has(st);
  const rtt = proxy.delayMs;
  const { root } = await ctx.agent();
  const u = s3Urls(c, proxy.port, prefix);
  const rclone = rcloneS3Env('bs', u.endpoint);
  const dir = await ctx.fresh(`rtt-${rtt}`);
  const add = (system: string, metric: string, v: number): void => s.add(key(system, rtt), metric, v);
  const requestsDuring = async (system: string, metric: string, fn: () => Promise<void>): Promise<void> => {
    const n0 = proxy.requests;
    await fn();
    add(system, `${metric}.requests`, proxy.requests - n0);
  };

  await step(ctx, s, 'homefs', rtt, 'firstsync', () => requestsDuring('homefs', 'firstsync', async () => add('homefs', 'firstsync', (await homefsPush(root, REF, u.homefs)).r.ms)));
  await step(ctx, s, 'restic', rtt, 'firstsync', () => requestsDuring('restic', 'firstsync', async () => {
    await restic(u.restic, ['init'], { cacheDir: join(dir, 'restic-cache-backup') });
    add('restic', 'firstsync', (await restic(u.restic, ['backup', '--host', 'a', '.'], { cwd: root, cacheDir: join(dir, 'restic-cache-backup') })).ms);
  }));
  if (wants('find')) await run(HOMEFS_BIN, ['fork', REF, FIND_REF, '--store', u.homefs], { allowFail: true }); // no fork: the find step fails on its own

  // find over the whole home, never mounted before
  if (wants('find')) await step(ctx, s, 'homefs', rtt, 'find', async () => {
    const t0 = Date.now();
    const mnt = join(dir, 'find-mnt');
    await homefsMount({ ref: FIND_REF, mnt, store: u.homefs, state: join(dir, 'find-state'), cache: join(dir, 'find-cache') });
    try {
      const f = await countEntries(mnt, 600_000);
      if (f.entries !== expected.files) throw new Error(`find listed ${f.entries} entries, the home has ${expected.files}`);
      add('homefs', 'find', Date.now() - t0);
      add('homefs', 'find.entries', f.entries);
    } finally {
      await homefsSleep(mnt);
    }
  });
  for (const peer of wants('find') ? ['restic mount', 'rclone mount'] : []) {
    await step(ctx, s, peer, rtt, 'find', async () => {
      const t0 = Date.now();
      const mnt = join(dir, `find-${peer.replace(' ', '-')}`);
      const home = peer === 'restic mount' ? join(mnt, 'snapshots', 'latest') : mnt;
      if (peer === 'restic mount') await resticMount(u.restic, mnt, join(dir, 'restic-cache-find'));
      else await rcloneMount(`bs:${plain}`, mnt, join(dir, 'rclone-cache-find'), rclone);
      try {
        const f = await countEntries(home, FIND_LIMIT_MS);
        add(peer, 'find', f.done ? Date.now() - t0 : Infinity);
        if (f.done) add(peer, 'find.entries', f.entries);
      } finally {
        await unmount(mnt);
      }
    });
  }

  // pull of the whole home
  if (wants('pull')) await step(ctx, s, 'homefs', rtt, 'pull', () => requestsDuring('homefs', 'pull', async () => add('homefs', 'pull', (await run(HOMEFS_BIN, ['pull', REF, join(dir, 'pulled'), '--store', u.homefs], { timeoutMs: 1_800_000 })).ms)));
  if (wants('pull')) await step(ctx, s, 'restic', rtt, 'pull', () => requestsDuring('restic', 'pull', async () => add('restic', 'pull', (await restic(u.restic, ['restore', 'latest', '--target', join(dir, 'restored')], { cacheDir: join(dir, 'restic-cache-restore') })).ms)));
  await bash(`rm -rf ${q(join(dir, 'pulled'))} ${q(join(dir, 'restored'))}`);

  // the agent resumes on an empty host (host A), then on another empty host after A did that work
  for (const [label, host] of ([['wake', 'hostA'], ['move', 'hostB']] as const).filter(([l]) => wants(l) || (l === 'wake' && wants('move')))) {
    await step(ctx, s, 'homefs', rtt, label, async () => {
      const mnt = join(dir, `${host}-mnt`);
      const n0 = proxy.requests;
      const from = proxy.now();
      const t0 = Date.now();
      await homefsMount({ ref: REF, mnt, store: u.homefs, state: join(dir, host, 'state'), cache: join(dir, host, 'cache') });
      add('homefs', `${label}.mount`, Date.now() - t0);
      try {
        const r = await resume(mnt, t0);
        const to = proxy.now();
        if (r.grepLines !== expected.grepLines) throw new Error(`grep found ${r.grepLines} lines, the home has ${expected.grepLines}`);
        add('homefs', `${label}.cat`, r.catEnd);
        add('homefs', `${label}.git`, r.gitEnd);
        add('homefs', `${label}.grep`, r.grepEnd);
        add('homefs', `${label}.requests`, proxy.requests - n0);
        const st = await homefsStatus(mnt);
        add('homefs', `${label}.pulled`, st.bytesFetched);
        add('homefs', `${label}.touched`, (st.hotset as { touchedBytes?: number } | undefined)?.touchedBytes ?? NaN);
        const metrics = await run(HOMEFS_BIN, ['status', mnt, '--metrics']);
        const byOp = storeRequestCounts(metrics.stdout);
        add('homefs', `${label}.getRequests`, byOp.get ?? NaN);
        if (label === 'wake') run_.profiles.push({ rtt, wallMs: r.grepEnd, spans: proxy.spans.filter((x) => x.start >= from && x.start < to), from, to, byOp });
      } finally {
        await homefsSleep(mnt);
      }
    });
  }
  for (const peer of wants('wake') ? ['restic restore', 'restic mount', 'rclone mount'] : []) {
    await step(ctx, s, peer, rtt, 'wake', async () => {
      const n0 = proxy.requests;
      const t0 = Date.now();
      const where = join(dir, `wake-${peer.replace(' ', '-')}`);
      let home = where;
      if (peer === 'restic restore') await restic(u.restic, ['restore', 'latest', '--target', where], { cacheDir: join(dir, 'restic-cache-wake1') });
      else if (peer === 'restic mount') {
        await resticMount(u.restic, where, join(dir, 'restic-cache-wake2'));
        home = join(where, 'snapshots', 'latest');
      } else await rcloneMount(`bs:${plain}`, where, join(dir, 'rclone-cache-wake'), rclone);
      add(peer, 'wake.mount', Date.now() - t0);
      try {
        const r = await resume(home, t0);
        if (r.grepLines !== expected.grepLines) throw new Error(`grep found ${r.grepLines} lines, the home has ${expected.grepLines}`);
        add(peer, 'wake.cat', r.catEnd);
        add(peer, 'wake.git', r.gitEnd);
        add(peer, 'wake.grep', r.grepEnd);
        add(peer, 'wake.requests', proxy.requests - n0);
      } finally {
        if (peer !== 'restic restore') await unmount(where);
      }
    });
  }
  await bash(`rm -rf ${q(dir)}`);
}

/** The expected results of find and grep, from the generated home itself. */
export async function expectedResults(root: string): Promise<RttRun['expected']> {
  const files = Number((await bash(`find -H ${q(root)} | wc -l`)).stdout.trim());
  const grepLines = Number((await bash(`{ grep -r ${q(RESUME.pattern)} ${q(join(root, RESUME.sources))} || [ $? = 1 ]; } | wc -l`)).stdout.trim());
  return { files, grepLines };
}
