/**
 * Scenario 6, the steady-state FUSE cost: the same workloads on native disk, bindfs
 * (C libfuse loopback, the FUSE floor), homefs and rclone mount (--vfs-cache-mode full over a local
 * remote). Sequential write+fsync and read (cold, warm), 4 KiB random reads, create/stat/delete of 10,000
 * files, `tar x` of 5,000 files, `git clone` of and `git status` in a 20,000-file repository, `npm ci` from a
 * local cache, sqlite with 1,000 transactions (the full run's sizes; --quick scales some down, see Sizes). "Cold" = page cache dropped, and for homefs a new mount
 * with an empty cache and state dir after `homefs sleep`; for rclone, a remount with an empty VFS cache.
 */
import { join } from 'node:path';
import type { Ctx } from '../lib/context.js';
import { fixtures } from '../lib/fixtures.js';
import { cell, fmtBytes, fmtMs, fmtNum as n, fmtRatio } from '../lib/format.js';
import { bindfsMount, homefsMount, homefsSleep, rcloneMount, unmount } from '../lib/peers.js';
import type { Scenario, Section } from '../lib/report.js';
import { bash, dropCaches, fsops, q, run } from '../lib/sh.js';
import { Samples, alternate } from '../lib/stats.js';

const PEERS = ['native', 'bindfs', 'homefs', 'rclone'];

interface Target {
  root: string;
  makeCold(): Promise<void>;
  close(): Promise<void>;
}

async function open(peer: string, dir: string, store: string, r: number, seqBytes: number): Promise<Target> {
  const cold = async (): Promise<void> => void (await dropCaches());
  if (peer === 'native') {
    const root = join(dir, 'native');
    await bash(`mkdir -p ${q(root)}`);
    return { root, makeCold: cold, close: async () => {} };
  }
  if (peer === 'bindfs') {
    const root = join(dir, 'mnt');
    await bash(`mkdir -p ${q(join(dir, 'src'))}`);
    await bindfsMount(join(dir, 'src'), root);
    return { root, makeCold: cold, close: () => unmount(root) };
  }
  if (peer === 'rclone') {
    const root = join(dir, 'mnt');
    await bash(`mkdir -p ${q(join(dir, 'remote'))}`);
    await rcloneMount(join(dir, 'remote'), root, join(dir, 'vfs'));
    return {
      root,
      makeCold: async () => {
        // rclone's fsync returns before the upload; wait until the remote holds the file, or the
        // remount with an empty VFS cache would not see it.
        await bash(`for i in $(seq 600); do [ "$(stat -c %s ${q(join(dir, 'remote', 'big.bin'))} 2>/dev/null)" = ${seqBytes} ] && exit 0; sleep 0.1; done; exit 1`);
        await unmount(root);
        await bash(`rm -rf ${q(join(dir, 'vfs'))}`);
        await dropCaches();
        await rcloneMount(join(dir, 'remote'), root, join(dir, 'vfs'));
      },
      close: () => unmount(root),
    };
  }
  const root = join(dir, 'mnt');
  let gen = 0;
  const mount = (): Promise<number> =>
    homefsMount({ ref: `bench/tools-r${r}`, mnt: root, store, state: join(dir, `state${gen}`), cache: join(dir, `cache${gen}`) });
  await mount();
  return {
    root,
    makeCold: async () => {
      await homefsSleep(root);
      gen++;
      await dropCaches();
      await mount();
    },
    close: async () => void (await homefsSleep(root)),
  };
}

export const tools: Scenario = {
  name: 'tools',
  title: '6. Steady-state FUSE cost for agent tools',
  async run(ctx: Ctx): Promise<Section> {
    const z = ctx.sizes;
    const fx = await fixtures(ctx.inputs, z.gitFiles, z.sqliteTx);
    const seq = ctx.sizes.seqBytes;
    const store = await ctx.fresh('tools-store');
    const s = new Samples();
    const add = (peer: string, op: string, ms: number): void => s.add(peer, op, ms);
    const opFailures: string[] = [];
    const failedOps = new Set<string>();
    await alternate(ctx.sizes.rounds, PEERS, s, async (peer, r) => {
      const dir = await ctx.fresh(`tools-r${r}-${peer}`);
      const t = await open(peer, dir, store, r, seq);
      const step = async (op: string, fn: () => Promise<number>): Promise<void> => {
        try {
          add(peer, op, await fn());
        } catch (e) {
          const why = (e instanceof Error ? e.message : String(e)).replaceAll('\n', ' ').replaceAll('|', '/').slice(0, 200);
          opFailures.push(`${peer}, round ${r + 1}, ${op}: ${why}`);
          failedOps.add(`${peer}/${op}`);
          ctx.log(`  ${peer} ${op} failed: ${why}`);
        }
      };
      try {
        const big = join(t.root, 'big.bin');
        await step('seqwrite', async () => (await fsops('seqwrite', big, String(seq))).ms ?? NaN);
        await t.makeCold();
        await step('seqreadCold', async () => (await fsops('seqread', big)).ms ?? NaN);
        await step('seqreadWarm', async () => (await fsops('seqread', big)).ms ?? NaN);
        await step('randread', async () => (await fsops('randread', big, '20000')).ms ?? NaN);
        let meta: Record<string, number> = {};
        await step('create', async () => (meta = await fsops('meta', join(t.root, 'meta'), String(z.metaFiles))).createMs ?? NaN);
        if (meta.statMs !== undefined) add(peer, 'stat', meta.statMs);
        if (meta.deleteMs !== undefined) add(peer, 'delete', meta.deleteMs);
        await step('tarx', async () => (await bash(`mkdir ${q(join(t.root, 'tar'))} && tar -C ${q(join(t.root, 'tar'))} -xf ${q(fx.tar5k)}`)).ms);
        await step('clone', async () => (await run('git', ['clone', '-q', '--no-hardlinks', fx.repo, join(t.root, 'repo')])).ms);
        await step('gitstatus1', async () => (await run('git', ['-C', join(t.root, 'repo'), 'status', '--porcelain'])).ms);
        await step('gitstatus2', async () => (await run('git', ['-C', join(t.root, 'repo'), 'status', '--porcelain'])).ms);
        await step('npmci', async () => {
          await bash(`mkdir ${q(join(t.root, 'npm'))} && cp ${q(fx.npmProject)}/package*.json ${q(join(t.root, 'npm'))}/`);
          return (await run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--cache', fx.npmCache], { cwd: join(t.root, 'npm') })).ms;
        });
        await step('sqlite', async () => {
          const sq = await run('sqlite3', [join(t.root, 'db.sqlite')], { input: (await import('node:fs')).readFileSync(fx.sqlScript, 'utf8') });
          if (sq.stdout.trim() !== 'ok') throw new Error(`sqlite integrity_check: ${sq.stdout.slice(0, 100)}`);
          return sq.ms;
        });
      } finally {
        const tc = Date.now();
        await t.close();
        if (peer === 'homefs') add(peer, 'sleep', Date.now() - tc);
      }
    }, (m) => ctx.log(m));
    const mb = seq / 2 ** 20;
    const ops: [string, string][] = [
      ['seqwrite', `sequential write + fsync ${fmtBytes(seq)}`],
      ['seqreadCold', `sequential read ${fmtBytes(seq)}, cold`],
      ['seqreadWarm', `sequential read ${fmtBytes(seq)}, warm`],
      ['randread', '20,000 random 4 KiB reads, warm'],
      ['create', `create ${n(z.metaFiles)} files (100 B)`],
      ['stat', `stat ${n(z.metaFiles)} files`],
      ['delete', `delete ${n(z.metaFiles)} files`],
      ['tarx', 'tar x of 5,000 files'],
      ['clone', `git clone, ${n(z.gitFiles)} files`],
      ['gitstatus1', `git status, ${n(z.gitFiles)} files, first`],
      ['gitstatus2', `git status, ${n(z.gitFiles)} files, again`],
      ['npmci', 'npm ci, 150 packages / 3,000 files, local cache'],
      ['sqlite', `sqlite, ${n(z.sqliteTx)} transactions`],
    ];
    const rows = ops.map(([k, label]) => {
      const row = [label, ...PEERS.map((p) => (s.failed.has(p) ? 'failed' : `${cell(s.get(p, k), fmtMs)}${failedOps.has(`${p}/${k}`) ? ' + FAILED (see notes)' : ''}`))];
      row.push(fmtRatio(s.median('homefs', k) / s.median('native', k)), fmtRatio(s.median('homefs', k) / s.median('bindfs', k)));
      return row;
    });
    const thr = (p: string, k: string): string => `${(mb / (s.median(p, k) / 1000)).toFixed(0)} MiB/s`;
    rows.push(['→ throughput write / cold / warm', ...PEERS.map((p) => `${thr(p, 'seqwrite')} / ${thr(p, 'seqreadCold')} / ${thr(p, 'seqreadWarm')}`), '', '']);
    rows.push(['→ random 4 KiB reads', ...PEERS.map((p) => `${(20000 / (s.median(p, 'randread') / 1000)).toFixed(0)} IOPS`), '', '']);
    const failures = [...[...s.failed].map(([p, why]) => `${p} could not run: ${why}`), ...opFailures.map((x) => `Failed: ${x}`)];
    const ratios = ops.map(([k, label]) => ({ k, label, r: s.median('homefs', k) / s.median('native', k), rb: s.median('homefs', k) / s.median('bindfs', k) }))
      .filter((x) => Number.isFinite(x.rb));
    const worst = [...ratios].sort((a, b) => b.rb - a.rb)[0];
    const geo = Math.exp(ratios.reduce((a, x) => a + Math.log(x.rb), 0) / Math.max(1, ratios.length));
    return {
      name: 'tools', title: this.title,
      intro: `Each round mounts a new, empty home on each system and runs the workloads in this order. homefs uses the default --fsync store (every fsync waits for a seal committed in the file:// store). Final \`homefs sleep\` after the workloads: ${cell(s.get('homefs', 'sleep'), fmtMs)}. The seal latency after one change in a 100k-file home is in scenario 2.`,
      tables: [{ caption: 'Steady-state cost (wall time; lower is better)', columns: ['workload', ...PEERS, 'homefs / native', 'homefs / bindfs'], rows }],
      charts: [{ file: 'tools.svg', title: 'Steady-state workloads, time relative to native', unit: '× native', log: true,
        labels: ops.map(([, l]) => l), series: PEERS.map((p) => ({ name: p, values: ops.map(([k]) => s.median(p, k) / s.median('native', k)) })) }],
      headlines: [
        { text: `steady state: homefs is ${fmtRatio(geo)} bindfs's time (geometric mean over ${ratios.length} workloads)`, slowdown: geo },
        ...(worst ? [{ text: `steady state, worst workload vs bindfs: ${worst.label} ${fmtRatio(worst.rb)} (vs native ${fmtRatio(worst.r)})`, slowdown: worst.rb }] : []),
      ],
      notes: failures,
    };
  },
};
