/**
 * Scenario 2, sleep/seal cost: time of one seal (`homefs sync` through the control socket) after changing
 * 1 file, 100 files, or writing one large file, in homes of 1×, 4× and 16× the base file count — it must
 * stay flat in home size, because a seal hashes only dirty files — against an incremental `restic backup`
 * of the same change in a native copy of the same home (restic rescans the tree: it grows with the home).
 * The 16× home of the quick run has 100,000 files: its 1-file row is the "seal latency after one
 * change in a 100k-file home".
 */
import { join } from 'node:path';
import { appendFileSync } from 'node:fs';
import { manyFilesHome } from '../lib/agenthome.js';
import type { Ctx } from '../lib/context.js';
import { cell, fmtBytes, fmtMs, fmtNum, fmtRatio, fmtSpeedup } from '../lib/format.js';
import { homefsMount, homefsPush, homefsSleep, homefsSync, restic } from '../lib/peers.js';
import type { Scenario, Section } from '../lib/report.js';
import { bash, fsops, q } from '../lib/sh.js';
import { Samples, alternate } from '../lib/stats.js';

const MULT = [1, 4, 16];
const PEERS = ['homefs', 'restic'];

/** Paths (relative) of the files changed by "change n files" in a home of `files` files. */
function victims(files: number, n: number): string[] {
  const out: string[] = [];
  for (let k = 0; k < n; k++) {
    const i = (k * 7919 + 13) % files;
    const d = Math.floor(i / 100);
    out.push(`d${Math.floor(d / 100)}/e${d % 100}/f${i}.txt`);
  }
  return out;
}

export const seal: Scenario = {
  name: 'seal',
  title: '2. Sleep/seal cost as the home grows',
  async run(ctx: Ctx): Promise<Section> {
    const z = ctx.sizes;
    const store = await ctx.fresh('seal-store');
    const repo = join(await ctx.fresh('seal-restic'), 'repo');
    await restic(repo, ['init']);
    const s = new Samples();
    const pushMs: number[] = [];
    const problems: string[] = [];
    for (const mult of MULT) {
      try {
        await sealSize(mult);
      } catch (e) {
        problems.push(`${fmtNum(z.sealBaseFiles * mult)}-file home: ${e instanceof Error ? e.message : String(e)}`);
        ctx.log(`  seal ${mult}× failed: ${problems[problems.length - 1]}`);
      }
    }
    async function sealSize(mult: number): Promise<void> {
      const files = z.sealBaseFiles * mult;
      const src = join(ctx.inputs, `many-${files}`);
      ctx.log(`  seal: home of ${fmtNum(files)} files (${mult}×): generate, push, restic backup (setup)`);
      await manyFilesHome(src, files);
      const ref = `bench/seal-${mult}x`;
      pushMs.push((await homefsPush(src, ref, store)).r.ms);
      const copy = join(await ctx.fresh(`seal-native-${mult}x`), 'home');
      await bash(`cp -a ${q(src)} ${q(copy)}`);
      await restic(repo, ['backup', '--host', 'a', '.'], { cwd: copy });
      const dir = await ctx.fresh(`seal-homefs-${mult}x`);
      const mnt = join(dir, 'mnt');
      await homefsMount({ ref, mnt, store, state: join(dir, 'state'), cache: join(dir, 'cache') });
      try {
        await alternate(z.rounds, PEERS, s, async (peer, r) => {
          const root = peer === 'homefs' ? mnt : copy;
          const commit = (): Promise<number> =>
            peer === 'homefs' ? homefsSync(mnt) : restic(repo, ['backup', '--host', 'a', '.'], { cwd: copy }).then((x) => x.ms);
          for (const n of [1, 100]) {
            for (const v of victims(files, n)) appendFileSync(join(root, v), `change ${r}\n`);
            s.add(peer, `${n}@${mult}`, await commit());
          }
          const big = join(root, `big-${r}.bin`);
          await fsops('write', big, String(z.sealBigBytes)); // no fsync: with --fsync store it would seal
          s.add(peer, `big@${mult}`, await commit());
          await bash(`rm -f ${q(big)}`);
          await commit();
        }, (m) => ctx.log(m));
      } finally {
        await homefsSleep(mnt);
      }
    }
    const changes: [string, string][] = [['1', '1 file'], ['100', '100 files'], ['big', `${fmtBytes(z.sealBigBytes)} written`]];
    const rows: string[][] = [];
    for (const mult of MULT) {
      for (const [k, label] of changes) {
        const key = `${k}@${mult}`;
        rows.push([`${fmtNum(z.sealBaseFiles * mult)} files (${mult}×)`, label, cell(s.get('homefs', key), fmtMs), cell(s.get('restic', key), fmtMs),
          fmtRatio(s.median('restic', key) / s.median('homefs', key))]);
      }
    }
    const flat = s.median('homefs', '1@16') / s.median('homefs', '1@1');
    const rflat = s.median('restic', '1@16') / s.median('restic', '1@1');
    const h100k = s.median('homefs', '1@16');
    const r100k = s.median('restic', '1@16');
    return {
      name: 'seal', title: this.title,
      intro: `Homes of small files (directories of 100; contents from a pool of 2,000, so pushing the big homes costs hashing, not uploading), pushed once (push took ${pushMs.map((m) => fmtMs(m)).join(' / ')}), then mounted with an empty cache. Each round appends a line to 1 file and seals, to 100 files and seals, writes ${fmtBytes(z.sealBigBytes)} into a new file and seals; restic backs up the same change of a native copy into one repository (incremental, parent snapshot by path). homefs seal = \`sync\` over the control socket (the CLI adds ~0.2 s of node start-up).`,
      tables: [{ caption: 'Seal / incremental backup time', columns: ['home size', 'change', 'homefs seal', 'restic backup', 'restic / homefs'], rows }],
      charts: [{ file: 'seal.svg', title: 'Seal after changing 1 file vs home size', unit: 'seconds', labels: MULT.map((m) => `${fmtNum(z.sealBaseFiles * m)} files`),
        series: PEERS.flatMap((p) => changes.slice(0, 2).map(([k, l]) => ({ name: `${p}, ${l}`, values: MULT.map((m) => s.median(p, `${k}@${m}`) / 1000) }))) }],
      headlines: [
        { text: `seal after 1 change in a ${fmtNum(z.sealBaseFiles * 16)}-file home: homefs ${fmtMs(h100k)} vs restic backup ${fmtMs(r100k)} → ${fmtSpeedup(r100k / h100k)}; growth 1×→16× homefs ${fmtRatio(flat)}, restic ${fmtRatio(rflat)}`, slowdown: flat },
      ],
      notes: [...[...s.failed].map(([p, why]) => `${p} could not run: ${why}`), ...problems.map((x) => `Failed: ${x}`)],
    };
  },
};
