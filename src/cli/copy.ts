/**
 * `homefs copy [ORG[/HOME]] --to URL`: copies the retained history of homes (blocks, trees, snapshots,
 * HEAD generations, conflict records and the pending log segment) from the store to another one, of any
 * kind, sending only what the target lacks (ops/copy.ts). Without an argument: every org of the store.
 * Exits 4 when a home could not be copied because a source object is damaged or missing (its heads on the
 * target are unchanged), 1 when a home's target copy has diverged.
 */
import type { Command } from 'commander';
import { defaults } from '../config.js';
import { copyHomes, type CopyReport } from '../ops/copy.js';
import { listHomes, listOrgs, requireHome } from '../ops/refs.js';
import { openStore } from '../store/open.js';
import { UsageError, UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit-codes.js';
import { validateName } from '../util/names.js';
import { progressBar } from '../util/progress.js';
import { addParallelOption, addStoreOption, formatBytes, parallelOption, withStore } from './store-option.js';

interface Options {
  store?: string;
  to?: string;
  dryRun?: boolean;
  json?: boolean;
  withHints?: boolean;
  keep?: string;
  parallel?: string;
}

function keepOption(v: string | undefined): number {
  if (v === undefined) return Infinity;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1) throw new UsageError(`invalid --keep '${v}': expected a whole number of generations, at least 1`);
  return n;
}

/** `org` or `org/home` (validated), or every org when absent. */
function parseTarget(ref: string | undefined): { org?: string; home?: string } {
  if (ref === undefined) return {};
  const [org, home, ...rest] = ref.split('/');
  if (rest.length > 0 || org === undefined) throw new UsageError(`invalid '${ref}': expected ORG or ORG/HOME`);
  return { org: validateName('org', org), ...(home !== undefined ? { home: validateName('home', home) } : {}) };
}

export function register(program: Command): void {
  addParallelOption(addStoreOption(
    program
      .command('copy')
      .description('copy the retained history of homes to another store (backup, replication), sending only what it lacks; exit 4 on damage')
      .argument('[target]', 'ORG or ORG/HOME (default: every org in the store)'),
  ), defaults.push.parallelism)
    .requiredOption('--to <url>', 'the store to copy to: file:///path or s3://bucket/prefix')
    .option('--keep <n>', 'copy only the newest N generations of each home (default: all the source retains)')
    .option('--with-hints', 'also copy the hot-set records and packs (hints that make wakes from the target faster)')
    .option('--dry-run', 'read and check everything, count what would be sent, write nothing')
    .option('--json', 'print {"homes","objects","bytes","skipped","seconds"} as one JSON object')
    .action(async (ref: string | undefined, o: Options) => {
      const target = parseTarget(ref);
      const keep = keepOption(o.keep);
      const parallelism = parallelOption(o.parallel) ?? defaults.push.parallelism;
      if (!o.to) throw new UsageError('give the target store with --to URL');
      const progress = progressBar();
      const report = await withStore(o.store, {}, async (src) => {
        if (o.to === src.url) throw new UserError(`--to names the source store itself (${src.url}); copy to another store`);
        const dst = await openStore(o.to as string, { write: !o.dryRun, create: !o.dryRun });
        try {
          const orgs = target.org ? [target.org] : await listOrgs(src);
          const total: CopyReport = { homes: 0, objects: 0, bytes: 0, skipped: 0, seconds: 0, failed: [] };
          for (const org of orgs) {
            let homes: string[];
            if (target.home !== undefined) {
              await requireHome(src, org, target.home);
              homes = [target.home];
            } else homes = await listHomes(src, org);
            if (target.org && homes.length === 0) throw new UserError(`org ${org} has no homes in ${src.url}`);
            const r = await copyHomes(src, dst, org, homes, {
              keep, withHints: !!o.withHints, dryRun: !!o.dryRun, parallelism,
              onProgress: (home, d, t) => progress.update(`copy ${home}`, d, t),
              warn: (m) => process.stderr.write(`homefs: warning: ${m}\n`),
            });
            total.homes += r.homes;
            total.objects += r.objects;
            total.bytes += r.bytes;
            total.skipped += r.skipped;
            total.seconds += r.seconds;
            total.failed.push(...r.failed);
          }
          return total;
        } finally {
          await dst.close();
        }
      }).finally(() => progress.stop());
      for (const f of report.failed) process.stderr.write(`homefs: ${f.home} was not copied: ${f.error}\n`);
      const { homes, objects, bytes, skipped, seconds } = report;
      if (o.json) process.stdout.write(JSON.stringify({ homes, objects, bytes, skipped, seconds }) + '\n');
      else {
        process.stdout.write(`${o.dryRun ? 'would copy' : 'copied'} ${homes - report.failed.length} of ${homes} homes: ${objects} objects (${formatBytes(bytes)}) sent, ${skipped} already there, in ${seconds.toFixed(2)} s\n`);
      }
      if (report.failed.length > 0) process.exitCode = report.failed.some((f) => f.damage) ? ExitCode.damage : ExitCode.userError;
    });
}
