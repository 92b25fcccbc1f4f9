/**
 * Scenario 1, fresh-host wake: a host with nothing cached brings the agent's home back and the agent
 * starts working (first `cat`, `ls -R`, `git status`, a build reading 5 % of the bytes). homefs mounts
 * with new, empty --cache-dir and --state-dir; the peers restore everything first (restic restore, tar x)
 * or mount the backup (restic mount). Time to mount, time to first byte, bytes pulled vs bytes touched.
 */
import { join } from 'node:path';
import type { Ctx } from '../lib/context.js';
import { cell, fmtBytes, fmtMs, fmtRatio, fmtSpeedup } from '../lib/format.js';
import { homefsMount, homefsSleep, homefsStatus, restic, resticMount, unmount } from '../lib/peers.js';
import type { Scenario, Section } from '../lib/report.js';
import { bash, dropCaches, q } from '../lib/sh.js';
import { Samples, alternate, minFinite } from '../lib/stats.js';
import { firstCat, work } from './workload.js';

const PEERS = ['homefs', 'restic restore', 'tar x', 'restic mount'];

export const wake: Scenario = {
  name: 'wake',
  title: '1. Fresh-host wake',
  async run(ctx: Ctx): Promise<Section> {
    const p = await ctx.pushedAgent();
    const m = p.manifest;
    const s = new Samples();
    await alternate(ctx.sizes.rounds, PEERS, s, async (peer, r) => {
      const dir = await ctx.fresh(`wake-r${r}-${peer.replace(' ', '-')}`);
      const list = join(dir, 'build.list');
      await dropCaches();
      const t0 = Date.now();
      let home: string;
      let mountMs: number;
      let pulled = m.bytes;
      if (peer === 'homefs') {
        home = join(dir, 'mnt');
        mountMs = await homefsMount({ ref: p.ref, mnt: home, store: p.store, state: join(dir, 'state'), cache: join(dir, 'cache') });
      } else if (peer === 'restic restore') {
        mountMs = (await restic(p.resticRepo, ['restore', 'latest', '--target', join(dir, 'r')])).ms;
        home = join(dir, 'r'); // backed up as '.', so restored at the target's top
      } else if (peer === 'tar x') {
        await bash(`mkdir -p ${q(join(dir, 'x'))}`);
        mountMs = (await bash(`tar -C ${q(join(dir, 'x'))} -xf ${q(p.tarFile)}`)).ms;
        home = join(dir, 'x');
      } else {
        mountMs = await resticMount(p.resticRepo, join(dir, 'mnt'));
        home = join(dir, 'mnt', 'snapshots', 'latest');
        pulled = NaN;
      }
      try {
        const catMs = await firstCat(home, m);
        const ttfb = Date.now() - t0;
        const w = await work(home, m, list);
        s.add(peer, 'mount', mountMs);
        s.add(peer, 'ttfb', ttfb);
        s.add(peer, 'cat', catMs);
        s.add(peer, 'ls', w.lsMs);
        s.add(peer, 'git', w.gitMs);
        s.add(peer, 'build', w.buildMs);
        s.add(peer, 'total', Date.now() - t0);
        if (peer === 'homefs') pulled = (await homefsStatus(home)).bytesFetched;
        s.add(peer, 'pulled', pulled);
      } finally {
        if (peer === 'homefs') s.add(peer, 'sleep', await homefsSleep(home));
        if (peer === 'restic mount') await unmount(join(dir, 'mnt'));
      }
    }, (msg) => ctx.log(msg));
    const touched = (await import('node:fs')).statSync(join(p.root, m.smallFile)).size + m.buildBytes;
    const rows = PEERS.map((peer) => {
      if (s.failed.has(peer)) return [peer, `failed: ${s.failed.get(peer)}`, '', '', '', '', '', '', ''];
      const pulled = s.median(peer, 'pulled');
      return [peer, cell(s.get(peer, 'mount'), fmtMs), cell(s.get(peer, 'ttfb'), fmtMs), cell(s.get(peer, 'ls'), fmtMs),
        cell(s.get(peer, 'git'), fmtMs), cell(s.get(peer, 'build'), fmtMs), cell(s.get(peer, 'total'), fmtMs),
        Number.isFinite(pulled) ? fmtBytes(pulled) : 'n/a (lazy)', Number.isFinite(pulled) ? fmtRatio(pulled / touched) : 'n/a'];
    });
    const h = s.median('homefs', 'ttfb');
    const best = minFinite(s.median('restic restore', 'ttfb'), s.median('tar x', 'ttfb'));
    const ht = s.median('homefs', 'total');
    const bt = minFinite(s.median('restic restore', 'total'), s.median('tar x', 'total'));
    const sleepMs = s.get('homefs', 'sleep');
    return {
      name: 'wake', title: this.title,
      intro: `Agent home of ${m.files.toLocaleString('en-US')} files, ${fmtBytes(m.bytes)}; the build reads ${m.buildFiles.length} files, ${fmtBytes(m.buildBytes)} (5 %); bytes touched = the small file + the build = ${fmtBytes(touched)}. Page cache dropped before each run. "mount" = homefs mount / restic restore / tar x / restic mount; "first byte" = from the start until the first \`cat\` returned; "total" = until the build finished. homefs: empty --cache-dir and --state-dir each round; \`homefs sleep\` afterwards took ${cell(sleepMs, fmtMs)}.`,
      tables: [{ caption: 'Fresh-host wake', columns: ['system', 'mount/restore', 'first byte', 'ls -R', 'git status', 'build 5 %', 'total', 'bytes pulled', 'pulled / touched'], rows }],
      charts: [{ file: 'wake.svg', title: 'Fresh-host wake', unit: 'seconds', log: true, labels: ['first byte', 'total'],
        series: PEERS.map((peer) => ({ name: peer, values: [s.median(peer, 'ttfb') / 1000, s.median(peer, 'total') / 1000] })) }],
      headlines: [
        { text: `wake, time to first byte: homefs ${fmtMs(h)} vs best restore ${fmtMs(best)} → ${fmtSpeedup(best / h)}`, slowdown: h / best },
        { text: `wake, start to end of the 5 % build: homefs ${fmtMs(ht)} vs best restore ${fmtMs(bt)} → ${fmtSpeedup(bt / ht)}; pulled ${fmtBytes(s.median('homefs', 'pulled'))} of ${fmtBytes(m.bytes)} (${fmtRatio(s.median('homefs', 'pulled') / touched)} of touched)`, slowdown: ht / bt },
        { text: `wake vs restic mount (the other lazy peer): first byte ${fmtMs(h)} vs ${fmtMs(s.median('restic mount', 'ttfb'))}, to end of build ${fmtMs(ht)} vs ${fmtMs(s.median('restic mount', 'total'))} → ${fmtSpeedup(s.median('restic mount', 'total') / ht)}`,
          slowdown: ht / s.median('restic mount', 'total') },
      ],
      notes: [],
    };
  },
};
