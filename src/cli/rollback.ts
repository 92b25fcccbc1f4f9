/**
 * `homefs rollback <org>/<home> <snapshot>`: a new HEAD generation whose content is that old snapshot.
 * History is never rewritten. Put a mounted home to sleep first (its next seal would be a conflict).
 */
import type { Command } from 'commander';
import { rollbackHome } from '../ops/rollback.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, withStore } from './store-option.js';

export function register(program: Command): void {
  addStoreOption(
    program
      .command('rollback')
      .description('make an old snapshot of <org>/<home> current again as a NEW generation (prints its id)')
      .argument('<home>', '<org>/<home>')
      .argument('<snapshot>', 'snapshot id or unique prefix (6+ hex digits), see homefs log'),
  )
    .option('--json', 'print the result as one JSON object')
    .action(async (ref: string, snap: string, o: { store?: string; json?: boolean }) => {
      const { org, home } = parseHomeRef(ref, false);
      const r = await withStore(o.store, { write: true }, (store) => rollbackHome(store, org, home, snap));
      if (o.json) {
        process.stdout.write(JSON.stringify(r) + '\n');
        return;
      }
      process.stdout.write(r.snapshot + '\n');
      process.stderr.write(`rolled ${r.home} back to ${r.to.slice(0, 12)} as generation ${r.gen} (previous HEAD ${r.previous.slice(0, 12)} stays in the history)\n`);
    });
}
