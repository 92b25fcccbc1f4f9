/**
 * `homefs verify <org>/<home> | --org ORG [--full]`: every object referenced by the retained history is
 * present (and trees/snapshots intact); --full re-hashes every block. Prints each damaged path; exits 4
 * (damage found) if anything is wrong, and 3 if the store cannot be reached, so the two never look alike.
 */
import type { Command } from 'commander';
import { ObjectStore } from '../format/objects.js';
import { verifyHomes } from '../ops/verify.js';
import { listHomes, requireHome } from '../ops/refs.js';
import { UsageError, UserError } from '../util/errors.js';
import { parseHomeRef, validateName } from '../util/names.js';
import { ExitCode } from '../util/exit-codes.js';
import { progressBar } from '../util/progress.js';
import { addStoreOption, formatBytes, withStore } from './store-option.js';

interface Options {
  store?: string;
  org?: string;
  full?: boolean;
  json?: boolean;
}

export function register(program: Command): void {
  addStoreOption(
    program
      .command('verify')
      .description('check that every object the retained snapshots reference is present and intact; exit 4 on damage')
      .argument('[home]', '<org>/<home> (or use --org for every home of an org)'),
  )
    .option('--org <org>', 'verify every home of this org')
    .option('--full', 'also fetch and re-hash every block')
    .option('--json', 'print the result (with every problem) as one JSON object')
    .action(async (ref: string | undefined, o: Options) => {
      if ((ref === undefined) === (o.org === undefined)) throw new UsageError('give either <org>/<home> or --org ORG');
      const target = ref !== undefined ? parseHomeRef(ref, false) : { org: validateName('org', o.org ?? ''), home: undefined };
      const progress = progressBar({ format: (n) => (n > 100_000 ? formatBytes(n) : String(n)) });
      const r = await withStore(o.store, {}, async (store) => {
        let homes: string[];
        if (target.home !== undefined) {
          await requireHome(store, target.org, target.home);
          homes = [target.home];
        } else {
          homes = await listHomes(store, target.org);
          if (homes.length === 0) throw new UserError(`org ${target.org} has no homes in ${store.url}`);
        }
        return verifyHomes(store, new ObjectStore(store, target.org), homes, { full: !!o.full, onProgress: (p, d, t) => progress.update(`verify ${p}`, d, t) });
      }).finally(() => progress.stop());
      if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
      else {
        for (const p of r.problems) process.stdout.write(`${p.problem} ${p.object} ${p.home}: ${p.path} (${p.key}; ${p.source})\n`);
        process.stdout.write(
          `${r.problems.length === 0 ? 'ok' : `${r.problems.length} problems`}: ${r.homes.length} homes, ${r.snapshots} snapshots, ${r.trees} trees, ` +
            `${r.blocks} blocks (${formatBytes(r.blockBytes)})${r.full ? `, ${formatBytes(r.bytesHashed)} re-hashed` : ''} in ${r.seconds.toFixed(2)} s\n`,
        );
      }
      if (r.problems.length > 0) process.exitCode = ExitCode.damage;
    });
}
