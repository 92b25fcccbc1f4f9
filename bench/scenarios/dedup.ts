/**
 * Scenario 4, dedup across agents: 10 homes that share their toolchain, npm cache and node_modules
 * (byte-identical, as on one base image) and each have their own checkout and remainder, stored one after
 * the other in one homefs store, one restic repository, and as 10 tar archives. Store bytes / logical
 * bytes, and what storing the 10th home added. Byte counts are deterministic, so this runs one round.
 */
import { join } from 'node:path';
import { agentHome, type HomeManifest } from '../lib/agenthome.js';
import type { Ctx } from '../lib/context.js';
import { fmtBytes, fmtMs, fmtRatio } from '../lib/format.js';
import { homefsPush, restic, storeBytes } from '../lib/peers.js';
import type { Scenario, Section } from '../lib/report.js';
import { bash, q } from '../lib/sh.js';

const HOMES = 10;

export const dedup: Scenario = {
  name: 'dedup',
  title: '4. Dedup across agents',
  async run(ctx: Ctx): Promise<Section> {
    const scale = ctx.sizes.dedupScale;
    const base = join(ctx.inputs, `dedup-s${scale}`);
    const homes: { root: string; m: HomeManifest }[] = [];
    ctx.log(`  generating ${HOMES} homes (scale ${scale})`);
    for (let i = 0; i < HOMES; i++) {
      const root = join(base, `home${i}`);
      homes.push({ root, m: await agentHome(root, scale, `dedup${i}`, i === 0 ? undefined : join(base, 'home0')) });
    }
    const store = join(await ctx.fresh('dedup-store'), 'store');
    const repo = join(await ctx.fresh('dedup-restic'), 'repo');
    await restic(repo, ['init']);
    const repo0 = await storeBytes(repo);
    const h = { up: [] as number[], ms: [] as number[], store: 0 };
    const r = { up: [] as number[], ms: [] as number[], store: 0 };
    let tarBytes = 0;
    let tar10 = 0;
    let logical = 0;
    for (const [i, home] of homes.entries()) {
      ctx.log(`  home ${i + 1}/${HOMES}`);
      logical += home.m.bytes;
      const p = await homefsPush(home.root, `bench/agent-${i}`, store);
      h.up.push(p.json.bytesUploaded ?? NaN);
      h.ms.push(p.r.ms);
      const before = await storeBytes(repo);
      r.ms.push((await restic(repo, ['backup', '--host', `h${i}`, '.'], { cwd: home.root })).ms);
      r.up.push((await storeBytes(repo)) - before);
      tar10 = Number((await bash(`tar -C ${q(home.root)} -cf - . | wc -c`)).stdout.trim());
      tarBytes += tar10;
    }
    h.store = await storeBytes(store);
    r.store = (await storeBytes(repo)) - repo0;
    const last = HOMES - 1;
    const rows = [
      ['homefs', fmtBytes(h.store), fmtRatio(h.store / logical), fmtBytes(h.up[last] ?? NaN), fmtBytes(homes[last]?.m.bytes ?? NaN), fmtMs(h.ms[last] ?? NaN)],
      ['restic', fmtBytes(r.store), fmtRatio(r.store / logical), fmtBytes(r.up[last] ?? NaN), fmtBytes(homes[last]?.m.bytes ?? NaN), fmtMs(r.ms[last] ?? NaN)],
      ['tar (one archive per home)', fmtBytes(tarBytes), fmtRatio(tarBytes / logical), fmtBytes(tar10), fmtBytes(homes[last]?.m.bytes ?? NaN), '–'],
    ];
    const unique = (homes[last]?.m.bytes ?? NaN) - (homes[last]?.m.sharedBytes ?? NaN);
    return {
      name: 'dedup', title: this.title,
      intro: `${HOMES} homes of ${fmtBytes(homes[0]?.m.bytes ?? NaN)} each (logical total ${fmtBytes(logical)}); each has ${fmtBytes(unique)} of its own (checkout sources, git objects, top-level remainder), the rest is shared. One sample (byte counts are deterministic; the times are single runs).`,
      tables: [{ caption: 'Stored bytes for 10 agent homes', columns: ['system', 'stored', 'stored / logical', 'added by the 10th home', '10th home logical', '10th home time'], rows }],
      charts: [{ file: 'dedup.svg', title: `Stored bytes for ${HOMES} homes`, unit: 'MiB', labels: ['all homes', '10th home added'],
        series: [{ name: 'homefs', values: [h.store / 2 ** 20, (h.up[last] ?? NaN) / 2 ** 20] }, { name: 'restic', values: [r.store / 2 ** 20, (r.up[last] ?? NaN) / 2 ** 20] },
          { name: 'tar', values: [tarBytes / 2 ** 20, tar10 / 2 ** 20] }] }],
      headlines: [{ text: `dedup: 10 homes stored in ${fmtRatio(h.store / logical)} of their logical size (restic ${fmtRatio(r.store / logical)}, tar ${fmtRatio(tarBytes / logical)}); 10th home uploaded ${fmtBytes(h.up[last] ?? NaN)} (its unique part: ${fmtBytes(unique)})`, slowdown: h.store / r.store }],
      notes: [],
    };
  },
};
