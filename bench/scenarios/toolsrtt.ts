/**
 * `bench/run --rtt MS[,MS…] --tools`: scenario 6's tool workloads (tar x of 5,000 files, git clone, npm ci,
 * sqlite with 1,000 transactions) plus a `git commit` row, with homefs over the test Ceph RGW behind
 * bench/lib/latencyproxy.ts at each added round-trip time, side by side with native disk and bindfs (which
 * use no store, so they run once per round). homefs mounts a new, empty home per round and latency with
 * the default --fsync store: every fsync is in the store before it returns. Returns the Markdown block.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { Ctx } from '../lib/context.js';
import { fixtures, type Fixtures } from '../lib/fixtures.js';
import { cell, fmtMs, fmtNum, fmtRatio } from '../lib/format.js';
import { LatencyProxy } from '../lib/latencyproxy.js';
import { bindfsMount, homefsMount, homefsSleep, unmount } from '../lib/peers.js';
import { tableMd } from '../lib/report.js';
import { purge } from '../lib/rttrun.js';
import { startCeph, s3Urls } from '../lib/s3env.js';
import { bash, dropCaches, q, run } from '../lib/sh.js';
import { Samples } from '../lib/stats.js';

/** The issue's sqlite size, whatever the preset. */
const SQLITE_TX = 1_000;
/** `git commit`s timed per run (one changed file each; the median is reported). */
const COMMITS = 5;

const STEPS: Array<[string, string]> = [
  ['tarx', 'tar x of 5,000 files'],
  ['clone', 'git clone'],
  ['commit', '`git commit` of one changed file (median of 5)'],
  ['npmci', 'npm ci, 150 packages / 3,000 files, local cache'],
  ['sqlite', `sqlite, ${fmtNum(SQLITE_TX)} transactions (one insert each)`],
];

/** Runs the workloads in `root`; every step's wall time (ms) goes to `add`, a failure to `fail`. */
async function workloads(root: string, fx: Fixtures, add: (step: string, ms: number) => void, fail: (step: string, why: string) => void): Promise<void> {
  const step = async (name: string, fn: () => Promise<number>): Promise<void> => {
    try {
      add(name, await fn());
    } catch (e) {
      fail(name, e instanceof Error ? e.message : String(e));
    }
  };
  const repo = join(root, 'repo');
  await step('tarx', async () => (await bash(`mkdir ${q(join(root, 'tar'))} && tar -C ${q(join(root, 'tar'))} -xf ${q(fx.tar5k)}`)).ms);
  await step('clone', async () => (await run('git', ['clone', '-q', '--no-hardlinks', fx.repo, repo])).ms);
  await step('commit', async () => {
    const ms: number[] = [];
    for (let i = 0; i < COMMITS; i++) {
      await bash(`echo ${i} >> ${q(join(repo, 'COMMIT_BENCH'))} && git -C ${q(repo)} add COMMIT_BENCH`);
      ms.push((await run('git', ['-C', repo, '-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-qm', `bench ${i}`])).ms);
    }
    return ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)] ?? NaN;
  });
  await step('npmci', async () => {
    await bash(`mkdir ${q(join(root, 'npm'))} && cp ${q(fx.npmProject)}/package*.json ${q(join(root, 'npm'))}/`);
    return (await run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--cache', fx.npmCache], { cwd: join(root, 'npm') })).ms;
  });
  await step('sqlite', async () => {
    const sq = await run('sqlite3', [join(root, 'db.sqlite')], { input: readFileSync(fx.sqlScript, 'utf8') });
    if (sq.stdout.trim() !== 'ok') throw new Error(`sqlite integrity_check: ${sq.stdout.slice(0, 100)}`);
    return sq.ms;
  });
}

export async function runToolsRtt(ctx: Ctx, rtts: number[], command: string, note: string | undefined): Promise<string> {
  const t0 = Date.now();
  const load0 = loadavg();
  const c = await startCeph(ctx.repo);
  const fx = await fixtures(ctx.inputs, ctx.sizes.gitFiles, SQLITE_TX);
  const s = new Samples();
  const failures: string[] = [];
  const loads: string[] = [];
  const base = `bench-tools-rtt/${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const peers = ['native', 'bindfs', ...rtts.map((r) => `homefs +${r} ms`)];
  for (let r = 0; r < ctx.sizes.rounds; r++) {
    for (const peer of peers) {
      const dir = await ctx.fresh(`toolsrtt-r${r}-${peer.replace(/[^a-z0-9]+/g, '')}`);
      const l0 = loadavg()[0] ?? NaN;
      ctx.log(`== round ${r + 1}/${ctx.sizes.rounds}: ${peer}`);
      await dropCaches();
      const add = (step: string, ms: number): void => s.add(peer, step, ms);
      const fail = (step: string, why: string): void => {
        failures.push(`${peer}, round ${r + 1}, ${step}: ${why.replaceAll('\n', ' ').replaceAll('|', '/').slice(0, 200)}`);
        ctx.log(`  ${peer} ${step} failed: ${why.slice(0, 200)}`);
      };
      if (peer === 'native') {
        await bash(`mkdir -p ${q(join(dir, 'native'))}`);
        await workloads(join(dir, 'native'), fx, add, fail);
      } else if (peer === 'bindfs') {
        const mnt = join(dir, 'mnt');
        await bash(`mkdir -p ${q(join(dir, 'src'))}`);
        await bindfsMount(join(dir, 'src'), mnt);
        try {
          await workloads(mnt, fx, add, fail);
        } finally {
          await unmount(mnt);
        }
      } else {
        const rtt = Number(/\+(\d+)/.exec(peer)?.[1]);
        const proxy = new LatencyProxy(c.host, c.port, rtt);
        await proxy.start();
        const mnt = join(dir, 'mnt');
        try {
          await homefsMount({ ref: `bench/tools-r${r}-${rtt}`, mnt, store: s3Urls(c, proxy.port, `${base}/r${r}-${rtt}`).homefs, state: join(dir, 'state'), cache: join(dir, 'cache') });
          try {
            await workloads(mnt, fx, add, fail);
          } finally {
            const ts = Date.now();
            await homefsSleep(mnt);
            s.add(peer, 'sleep', Date.now() - ts);
          }
        } finally {
          await proxy.stop();
          await purge(c, `${base}/r${r}-${rtt}`); // the test Ceph keeps objects in RAM
        }
      }
      loads.push(`${peer} r${r + 1}: ${l0.toFixed(1)} → ${(loadavg()[0] ?? NaN).toFixed(1)}`);
    }
  }
  const homefsPeers = peers.filter((p) => p.startsWith('homefs'));
  const rows = STEPS.map(([k, label]) => [
    label, ...peers.map((p) => cell(s.get(p, k), fmtMs)),
    ...homefsPeers.map((p) => fmtRatio(s.median(p, k) / s.median('native', k))),
    ...homefsPeers.map((p) => fmtRatio(s.median(p, k) / s.median('bindfs', k))),
  ]);
  rows.push(['final `homefs sleep`', '', '', ...homefsPeers.map((p) => cell(s.get(p, 'sleep'), fmtMs)), ...homefsPeers.map(() => ''), ...homefsPeers.map(() => '')]);
  const minutes = ((Date.now() - t0) / 60000).toFixed(1);
  return [
    '## Tool workloads over a real store (--rtt --tools)',
    '',
    `Generated by \`${command}\` on ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}; the run took ${minutes} min; ${ctx.sizes.rounds} round(s), median shown (min–max when more than one). homefs: a new, empty home per round and latency on the test Ceph RGW (test/support/ceph.sh) through bench/lib/latencyproxy.ts, default \`--fsync store\` (every fsync, fdatasync and msync is in the store when it returns: one log segment, fsynclog/homelog.ts). native and bindfs use the local disk (no store). The git repository has ${fmtNum(ctx.sizes.gitFiles)} files; git runs with its defaults (\`core.fsync\` unset).`,
    '',
    `Machine: ${cpus()[0]?.model ?? '?'}, ${cpus().length} cores, shared with other engineers' builds and tests: load average (1/5/15 min) ${load0.map((x) => x.toFixed(1)).join(' / ')} at the start, ${loadavg().map((x) => x.toFixed(1)).join(' / ')} at the end; per system (1 min, start → end): ${loads.join('; ')}.${note ? ` Note: ${note}` : ''}`,
    '',
    tableMd({ caption: 'Wall time (lower is better)', columns: ['workload', ...peers, ...homefsPeers.map((p) => `${p} / native`), ...homefsPeers.map((p) => `${p} / bindfs`)], rows }),
    ...(failures.length ? ['', ...failures.map((f) => `- Failed: ${f}`)] : []),
    '',
  ].join('\n');
}
