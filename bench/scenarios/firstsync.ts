/**
 * Scenario 3, first sync of a grown home: `homefs push` of the whole agent home into an empty store, against
 * `restic backup` into a new repository and `tar c` into an archive. Files/s, MB/s and peak RSS. Caches are
 * dropped before each run, so the home is read from disk as after a long-running sandbox.
 */
import { join } from 'node:path';
import type { Ctx } from '../lib/context.js';
import { cell, fmtBytes, fmtMs, fmtNum, fmtRatio, fmtSpeedup } from '../lib/format.js';
import { homefsPush, restic, storeBytes } from '../lib/peers.js';
import type { Scenario, Section } from '../lib/report.js';
import { bash, dropCaches, q, run } from '../lib/sh.js';
import { Samples, alternate } from '../lib/stats.js';

const PEERS = ['homefs push', 'restic backup', 'tar c'];

export const firstsync: Scenario = {
  name: 'firstsync',
  title: '3. First sync of a grown home',
  async run(ctx: Ctx): Promise<Section> {
    const { root, manifest } = await ctx.agent();
    const s = new Samples();
    let last = { store: '', repo: '', tar: '' };
    await alternate(ctx.sizes.rounds, PEERS, s, async (peer, r) => {
      const dir = join(ctx.work, 'run', `firstsync-r${r}`);
      await bash(`mkdir -p ${q(dir)}`);
      await dropCaches();
      let ms: number;
      let rss: number;
      let stored: number;
      if (peer === 'homefs push') {
        const store = join(dir, 'store');
        await bash(`rm -rf ${q(store)}`);
        const { r: res } = await homefsPush(root, 'bench/agent', store);
        ms = res.ms; rss = res.rssKiB ?? NaN; stored = await storeBytes(store);
        last.store = store;
      } else if (peer === 'restic backup') {
        const repo = join(dir, 'restic');
        await bash(`rm -rf ${q(repo)}`);
        await restic(repo, ['init']);
        const res = await restic(repo, ['backup', '--host', 'a', '.'], { rss: true, cwd: root });
        ms = res.ms; rss = res.rssKiB ?? NaN; stored = await storeBytes(repo);
        last.repo = repo;
      } else {
        const tar = join(dir, 'home.tar');
        const res = await run('tar', ['-C', root, '-cf', tar, '.'], { rss: true });
        ms = res.ms; rss = res.rssKiB ?? NaN; stored = await storeBytes(tar);
        last.tar = tar;
      }
      s.add(peer, 'ms', ms);
      s.add(peer, 'rss', rss * 1024);
      s.add(peer, 'stored', stored);
    }, (m) => ctx.log(m));
    if (last.store && last.repo && last.tar) {
      ctx.setPushed({ root, manifest, store: last.store, ref: 'bench/agent', resticRepo: last.repo, tarFile: last.tar });
    }
    const rows = PEERS.map((p) => {
      const t = s.get(p, 'ms');
      if (s.failed.has(p)) return [p, `failed: ${s.failed.get(p)}`, '', '', '', '', ''];
      return [p, cell(t, fmtMs), fmtNum((manifest.files / t.median) * 1000), fmtNum(manifest.bytes / 1e6 / (t.median / 1000), 1),
        cell(s.get(p, 'rss'), fmtBytes), fmtBytes(s.median(p, 'stored')), fmtRatio(t.median / s.median('homefs push', 'ms'))];
    });
    const h = s.median('homefs push', 'ms');
    const rb = s.median('restic backup', 'ms');
    return {
      name: 'firstsync', title: this.title,
      intro: `The whole generated agent home (${fmtNum(manifest.files)} files, ${fmtBytes(manifest.bytes)}) into an empty store, repository or archive; page cache dropped before each run; ${ctx.sizes.rounds} rounds alternating the peers.`,
      tables: [{ caption: 'First sync', columns: ['system', 'wall time', 'files/s', 'MB/s', 'peak RSS', 'stored', 'time vs homefs'], rows }],
      charts: [{ file: 'firstsync.svg', title: 'First sync of the agent home', unit: 'seconds', labels: ['wall time'],
        series: PEERS.map((p) => ({ name: p, values: [s.median(p, 'ms') / 1000] })) }],
      headlines: [{ text: `first sync: homefs push ${fmtMs(h)} vs restic backup ${fmtMs(rb)} → ${fmtSpeedup(rb / h)}`, slowdown: h / rb }],
      notes: [],
    };
  },
};
