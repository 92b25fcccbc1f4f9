/**
 * `homefs du <org>[/<home>]`: per home, logical bytes, unique bytes and bytes shared with other homes
 * (each home's HEAD); per org, the deduplicated total and what the store holds.
 */
import type { Command } from 'commander';
import { ObjectStore } from '../format/objects.js';
import { orgUsage } from '../ops/du.js';
import { parseHomeRef, validateName } from '../util/names.js';
import { addStoreOption, formatBytes, withStore } from './store-option.js';

export function register(program: Command): void {
  addStoreOption(
    program
      .command('du')
      .description('logical, unique and shared bytes of the homes of an org (HEADs), and the store total')
      .argument('<target>', '<org> or <org>/<home>'),
  )
    .option('--json', 'print the result as one JSON object')
    .action(async (target: string, o: { store?: string; json?: boolean }) => {
      const ref = target.includes('/') ? parseHomeRef(target, false) : { org: validateName('org', target), home: undefined };
      const r = await withStore(o.store, {}, (store) => orgUsage(store, new ObjectStore(store, ref.org), ref.home));
      if (o.json) {
        process.stdout.write(JSON.stringify(r) + '\n');
        return;
      }
      process.stdout.write(`${'LOGICAL'.padStart(10)} ${'UNIQUE'.padStart(10)} ${'SHARED'.padStart(10)} ${'FILES'.padStart(8)}  HOME\n`);
      for (const h of r.homes) {
        process.stdout.write(
          `${formatBytes(h.logicalBytes).padStart(10)} ${formatBytes(h.uniqueBytes).padStart(10)} ${formatBytes(h.sharedBytes).padStart(10)} ${String(h.files).padStart(8)}  ${h.home}\n`,
        );
      }
      if (ref.home === undefined) {
        process.stdout.write(
          `${r.org}: ${formatBytes(r.logicalBytes)} logical in ${r.homes.length} homes, ${formatBytes(r.dedupedBytes)} deduplicated; ` +
            `store holds ${formatBytes(r.storeBytes)} in ${r.storeObjects} objects (history included)\n`,
        );
      }
    });
}
