/**
 * The driver of `bench/run --rtt MS[,MS…]`: starts (or reuses) the test Ceph, stores the agent home once as
 * plain files for rclone (directly, untimed), then for each round and each latency puts a fresh
 * LatencyProxy in front of RGW and runs bench/scenarios/rtt.ts on its own prefix of the bucket. Every
 * prefix it wrote is deleted afterwards (the test Ceph keeps objects in RAM), and every proxy stopped,
 * also on failure. Returns the Markdown of docs/benchmarks.md's "Over a real store (--rtt)" block.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { Ctx } from './context.js';
import { fmtBytes, fmtNum } from './format.js';
import { LatencyProxy } from './latencyproxy.js';
import { rcloneS3Env } from './peers.js';
import { tableMd } from './report.js';
import { rttTable, whereTimeGoes } from './rttreport.js';
import { startCeph, stopOwnCeph, s3Urls, type CephS3 } from './s3env.js';
import { bash, q, run } from './sh.js';
import { Samples } from './stats.js';
import { expectedResults, failKey, rttRound, FIND_LIMIT_MS, type RttRun, type RttStep } from '../scenarios/rtt.js';
import { RESUME } from '../scenarios/workload.js';

/** Parses `--rtt 0,20` into [0, 20]; throws on anything but non-negative integers. */
export function parseRtts(arg: string): number[] {
  const xs = arg.split(',').map((x) => x.trim());
  if (xs.some((x) => !/^\d+$/.test(x))) throw new Error(`--rtt takes milliseconds as whole numbers, comma-separated (e.g. 0,20), not '${arg}'`);
  return [...new Set(xs.map(Number))];
}

/** Deletes everything under `path` of the bucket (directly, not through a proxy). */
export async function purge(c: CephS3, path: string): Promise<void> {
  const env = rcloneS3Env('bs', s3Urls(c, c.port, '').endpoint);
  // bounded: if the cluster went away (it is shared), there is nothing left to delete
  await run('rclone', ['purge', `bs:${c.bucket}/${path}`, '--config', '/dev/null', '--checkers', '32', '--log-level', 'ERROR',
    '--retries', '1', '--low-level-retries', '2', '--contimeout', '5s'], { env, allowFail: true, timeoutMs: 300_000 });
}

/** The home as plain files in the bucket, for rclone mount; an empty directory gets a `.keep` file (S3 has no directories). */
async function storePlain(ctx: Ctx, c: CephS3, root: string, dest: string): Promise<void> {
  const copy = join(ctx.work, 'run', 'plain');
  await bash(`rm -rf ${q(copy)} && mkdir -p ${q(join(ctx.work, 'run'))} && cp -al ${q(root)} ${q(copy)} && find ${q(copy)} -type d -empty -exec touch {}/.keep \\;`);
  const env = rcloneS3Env('bs', s3Urls(c, c.port, '').endpoint);
  await run('rclone', ['copy', copy, `bs:${dest}`, '--config', '/dev/null', '--transfers', '32', '--checkers', '32', '--log-level', 'ERROR'], { env, timeoutMs: 1_800_000 });
  await bash(`rm -rf ${q(copy)}`);
}

/**
 * With `ownCeph`, the run starts a private test Ceph under <work>/ceph and stops it at the end: the shared
 * one is stopped by any test/run-all that started it, which loses every object of a running benchmark.
 */
export async function runRtt(ctx: Ctx, rtts: number[], command: string, note: string | undefined, ownCeph = false, steps?: ReadonlySet<RttStep>): Promise<string> {
  const ownDir = ownCeph ? join(ctx.work, 'ceph') : undefined;
  try {
    return await runOn(ctx, rtts, command, note, await startCeph(ctx.repo, ownDir), ownCeph, steps);
  } finally {
    if (ownDir) await stopOwnCeph(ctx.repo, ownDir);
  }
}

async function runOn(ctx: Ctx, rtts: number[], command: string, note: string | undefined, c: CephS3, ownCeph: boolean, steps?: ReadonlySet<RttStep>): Promise<string> {
  const t0 = Date.now();
  const load0 = loadavg();
  const { root, manifest } = await ctx.agent();
  const run_: RttRun = { s: new Samples(), expected: await expectedResults(root), profiles: [], ...(steps ? { steps } : {}) };
  const base = `bench-rtt/${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const plain = `${c.bucket}/${base}/plain`;
  const loads: string[] = [];
  try {
    const plainNeeded = !steps || steps.has('find') || steps.has('wake'); // only rclone mount reads it
    if (plainNeeded) ctx.log(`storing the home as plain files for rclone (directly, untimed) under ${plain}`);
    try {
      if (plainNeeded) await storePlain(ctx, c, root, plain);
    } catch (e) {
      for (const rtt of rtts) run_.s.fail(failKey('rclone', rtt, 'firstsync'), e instanceof Error ? e.message : String(e));
    }
    // storePlain's `cp -al` changed every file's ctime: refresh the checkout's git index, as an agent's own
    // `git status` keeps it, so the pushed home's index matches its files (every system gets the same one).
    await bash(`git -C ${q(join(root, RESUME.repo))} update-index -q --refresh || true`);
    for (let r = 0; r < ctx.sizes.rounds; r++) {
      for (const rtt of rtts) {
        const proxy = new LatencyProxy(c.host, c.port, rtt);
        await proxy.start();
        const l0 = loadavg()[0] ?? NaN;
        ctx.log(`== round ${r + 1}/${ctx.sizes.rounds}, +${rtt} ms RTT (proxy on 127.0.0.1:${proxy.port})`);
        try {
          await rttRound(ctx, c, proxy, `${base}/r${r}-${rtt}`, plain, run_);
        } finally {
          await proxy.stop();
          loads.push(`round ${r + 1} at +${rtt} ms: ${l0.toFixed(1)} → ${(loadavg()[0] ?? NaN).toFixed(1)}`);
          if (!ownCeph) await purge(c, `${base}/r${r}-${rtt}`); // a private cluster goes away whole
        }
      }
    }
  } finally {
    if (!ownCeph) await purge(c, base);
  }
  let srcCommit = '?';
  try {
    srcCommit = execFileSync('git', ['-C', ctx.repo, 'log', '-1', '--format=%h %cs', '--', 'src'], { encoding: 'utf8' }).trim();
  } catch {
    /* not a git checkout */
  }
  const minutes = ((Date.now() - t0) / 60000).toFixed(1);
  return [
    '## Over a real store (--rtt)',
    '',
    `**Full-scale run**: src/ at commit ${srcCommit}. Generated by \`${command}\` on ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}; the run took ${minutes} min.`,
    '',
    `The store is the test Ceph RGW (test/support/ceph.sh: one node, memstore, beast with tcp_nodelay) on 127.0.0.1${ownCeph ? ', a private instance started for this run (--own-ceph)' : ''}. Every system reaches it through bench/lib/latencyproxy.ts, a TCP proxy that holds **every client→server chunk** for the given milliseconds before forwarding it (in order; answers flow back at once), so each HTTP request on a kept-alive connection pays the added round trip once; connection set-up is not delayed. "+0 ms" goes through the same proxy with no delay. homefs uses \`s3://…?endpoint=<proxy>\`, restic its s3 backend, rclone mount (--vfs-cache-mode full) reads the home stored as plain files in the bucket (uploaded once, directly; empty directories hold a \`.keep\` file, S3 has no directories).`,
    '',
    `The home: bench/lib/agenthome.ts at scale ${ctx.sizes.scale} (the \`--quick\` preset; the full preset, scale 8, does not fit a run in 25 minutes on 2 cores): ${fmtNum(manifest.files)} files, ${fmtBytes(manifest.bytes)}, ${fmtNum(run_.expected.files)} entries for find. The agent resumes: \`cat ${RESUME.notes}\`, \`git status\` in ${RESUME.repo}, \`grep -r ${RESUME.pattern}\` through ${RESUME.sources}; every system's grep printed the same ${fmtNum(run_.expected.grepLines)} lines as on the original (checked), and homefs's find listed every entry (checked). Each step begins on an empty host (new cache and state dirs, page cache dropped). "move" is a second empty host after the wake on the first one (which did the same work, then slept). A peer's find is stopped after ${FIND_LIMIT_MS / 1000} s ("not done"). ${ctx.sizes.rounds} round(s).`,
    '',
    `Machine: ${cpus()[0]?.model ?? '?'}, ${cpus().length} cores, shared with other engineers' builds and tests: load average (1/5/15 min) ${load0.map((x) => x.toFixed(1)).join(' / ')} at the start, ${loadavg().map((x) => x.toFixed(1)).join(' / ')} at the end; per latency (1 min, start → end): ${loads.join('; ')}.${note ? ` Note: ${note}` : ''}`,
    '',
    tableMd(rttTable(run_.s, rtts)),
    '### Where the time goes (one homefs wake, from the proxy\'s request log)',
    '',
    ...whereTimeGoes(run_),
    '',
  ].join('\n');
}
