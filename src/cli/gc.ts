/**
 * `homefs gc [--org ORG] [--grace DURATION] [--keep N] [--dry-run]`: retention (newest N generations per
 * home) then mark and sweep of unreferenced blocks and trees older than the grace period. Safe while other
 * hosts seal (ops/gc.ts says why). Without --org, every org in the store.
 */
import type { Command } from 'commander';
import { defaults } from '../config.js';
import { gcOrg, type GcResult } from '../ops/gc.js';
import { listOrgs } from '../ops/refs.js';
import { UsageError } from '../util/errors.js';
import { validateName } from '../util/names.js';
import { progressBar } from '../util/progress.js';
import { parseDuration } from '../util/units.js';
import { addStoreOption, formatBytes, withStore } from './store-option.js';

interface Options {
  store?: string;
  org?: string;
  grace: string;
  keep: string;
  fenceWait: string;
  dryRun?: boolean;
  json?: boolean;
}

export function register(program: Command): void {
  addStoreOption(
    program
      .command('gc')
      .description('delete store objects no retained snapshot references (older than --grace); reports bytes freed'),
  )
    .option('--org <org>', 'only this org (default: every org in the store)')
    .option('--grace <duration>', 'keep unreferenced objects younger than this (covers seals in flight)', '24h')
    .option('--keep <n>', 'snapshots of history kept per home; older generations are pruned first', String(defaults.historyKeep))
    .option('--fence-wait <duration>', 'wait between announcing the gc and marking, so commits in flight land first (docs/operations.md)', '3m')
    .option('--dry-run', 'report what would be pruned and deleted, delete nothing')
    .option('--json', 'print one JSON object per org')
    .action(async (o: Options) => {
      const graceMs = parseDuration('--grace', o.grace);
      const waitMs = parseDuration('--fence-wait', o.fenceWait);
      const keep = Number(o.keep);
      if (!Number.isInteger(keep) || keep < 1) throw new UsageError(`invalid --keep '${o.keep}': expected a positive integer`);
      if (o.org !== undefined) validateName('org', o.org);
      const progress = progressBar();
      const results: GcResult[] = await withStore(o.store, {}, async (store) => {
        const orgs = o.org !== undefined ? [o.org] : await listOrgs(store);
        const out: GcResult[] = [];
        for (const org of orgs) out.push(await gcOrg(store, org, { graceMs, keep, dryRun: !!o.dryRun, fence: { waitMs }, onProgress: (p, d, t) => progress.update(`gc ${org} ${p}`, d, t) }));
        return out;
      }).finally(() => progress.stop());
      for (const r of results) {
        if (o.json) {
          process.stdout.write(JSON.stringify(r) + '\n');
          continue;
        }
        const verb = r.dryRun ? 'would free' : 'freed';
        process.stdout.write(
          `${r.org}: ${verb} ${formatBytes(r.bytesFreed)} (${r.deletedObjects} objects) of ${formatBytes(r.scannedBytes)} (${r.scannedObjects} objects); ` +
            `${r.homes} homes, ${r.roots} snapshots marked, ${r.prunedGenerations} old generations ${r.dryRun ? 'to prune' : 'pruned'}, ` +
            `${r.youngUnreferenced} unreferenced objects within the grace period kept${r.rescued ? `, ${r.rescued} rescued by concurrent seals` : ''}${r.refreshed ? `, ${r.refreshed} rewritten during gc kept` : ''}${r.pushPacksDeleted ? `, ${r.pushPacksDeleted} push packs of pruned snapshots ${r.dryRun ? 'to delete' : 'deleted'}` : ''}${r.uploadsAborted ? `, ${r.uploadsAborted} unfinished uploads ${r.dryRun ? 'to abort' : 'aborted'}` : ''} (${r.seconds.toFixed(2)} s)\n`,
        );
      }
    });
}
