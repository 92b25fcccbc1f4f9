/**
 * Scenario 5, moving between hosts twice: wake on host A (empty cache), work, sleep; wake on host B
 * (empty cache and state); wake on A again (its cache and state dir kept, so the cache is warm while HEAD
 * has moved on). Hosts are simulated by separate --cache-dir/--state-dir pairs against one store. Per
 * visit: `homefs locality` of the host before waking, wake (mount) time, the agent workload, bytes pulled
 * from the store, sleep time.
 */
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Ctx } from '../lib/context.js';
import { cell, fmtBytes, fmtMs } from '../lib/format.js';
import { homefsLocality, homefsMount, homefsSleep, homefsStatus } from '../lib/peers.js';
import { Prng } from '../lib/prng.js';
import type { Scenario, Section } from '../lib/report.js';
import { dropCaches } from '../lib/sh.js';
import { Samples, alternate } from '../lib/stats.js';
import { firstCat, work } from './workload.js';

const VISITS = ['A (empty cache)', 'B (empty cache)', 'A again (warm cache)'];

export const move: Scenario = {
  name: 'move',
  title: '5. Moving between hosts twice',
  async run(ctx: Ctx): Promise<Section> {
    const p = await ctx.pushedAgent();
    const s = new Samples();
    const problems = new Set<string>();
    await alternate(ctx.sizes.rounds, ['homefs'], s, async (_peer, r) => {
      const dir = await ctx.fresh(`move-r${r}`);
      const hosts = { A: join(dir, 'hostA'), B: join(dir, 'hostB') };
      for (const [i, visit] of VISITS.entries()) {
        const host = i === 1 ? hosts.B : hosts.A;
        const mnt = join(dir, `mnt${i}`);
        // what a scheduler would see before placing the home here (before the cache drop: it reads trees)
        const loc = await homefsLocality(p.ref, p.store, join(host, 'cache'));
        s.add(visit, 'locality', loc.ratio * 100);
        s.add(visit, 'cached', loc.bytesCached);
        await dropCaches();
        const t0 = Date.now();
        const wakeMs = await homefsMount({ ref: p.ref, mnt, store: p.store, state: join(host, 'state'), cache: join(host, 'cache') });
        try {
          await firstCat(mnt, p.manifest);
          s.add(visit, 'ttfb', Date.now() - t0);
          const w = await work(mnt, p.manifest, join(dir, 'build.list'));
          s.add(visit, 'work', w.lsMs + w.gitMs + w.buildMs);
          s.add(visit, 'pulled', (await homefsStatus(mnt)).bytesFetched);
          s.add(visit, 'wake', wakeMs);
          // the agent's own work: 20 new 64 KiB notes
          const rng = new Prng(`move/${r}/${i}`);
          try {
            mkdirSync(join(mnt, 'notes', `visit-${r}-${i}`), { recursive: true });
            for (let k = 0; k < 20; k++) writeFileSync(join(mnt, 'notes', `visit-${r}-${i}`, `n${k}.txt`), rng.text(64 * 1024));
          } catch (e) {
            problems.add(`round ${r + 1}, visit ${visit}: writing notes failed: ${e instanceof Error ? e.message : String(e)}`);
          }
        } finally {
          s.add(visit, 'sleep', await homefsSleep(mnt));
        }
      }
    }, (m) => ctx.log(m));
    const failed = s.failed.get('homefs');
    const pct = (x: number): string => `${x.toFixed(1)} %`;
    const rows = VISITS.map((v) => [v, `${cell(s.get(v, 'locality'), pct)}, ${fmtBytes(s.median(v, 'cached'))}`,
      cell(s.get(v, 'wake'), fmtMs), cell(s.get(v, 'ttfb'), fmtMs), cell(s.get(v, 'work'), fmtMs),
      cell(s.get(v, 'pulled'), fmtBytes), cell(s.get(v, 'sleep'), fmtMs)]);
    const warm = s.median(VISITS[2] as string, 'pulled');
    const cold = s.median(VISITS[1] as string, 'pulled');
    return {
      name: 'move', title: this.title,
      intro: `The agent home of ${fmtBytes(p.manifest.bytes)}; each visit runs the wake workload (first cat, ls -R, git status, build reading ${fmtBytes(p.manifest.buildBytes)}), writes 20 notes of 64 KiB and sleeps. Page cache dropped before each wake. "homefs locality" = \`homefs locality --cache-dir <host's cache> --json\` run just before the wake: the share (and bytes) of HEAD's data already in that host's block cache.`,
      tables: [{ caption: 'Wake, work and sleep per visit', columns: ['visit', 'homefs locality before wake', 'wake (mount)', 'first byte', 'ls -R + git status + build', 'pulled from store', 'sleep'], rows }],
      charts: [],
      headlines: failed ? [{ text: `move between hosts: failed: ${failed}`, slowdown: NaN }] : [{
        text: `${problems.size ? `(BUG: writes failed on ${problems.size} warm-host visit(s), see notes) ` : ''}move: back on a warm host pulls ${fmtBytes(warm)} vs ${fmtBytes(cold)} on an empty one (locality before waking ${s.median(VISITS[2] as string, 'locality').toFixed(1)} % vs ${s.median(VISITS[1] as string, 'locality').toFixed(1)} %); wake ${fmtMs(s.median(VISITS[2] as string, 'ttfb'))} vs ${fmtMs(s.median(VISITS[1] as string, 'ttfb'))} to first byte`,
        slowdown: NaN,
      }],
      notes: [...(failed ? [`homefs could not complete the move: ${failed}`] : []), ...[...problems].map((x) => `**Bug:** ${x}`)],
    };
  },
};
