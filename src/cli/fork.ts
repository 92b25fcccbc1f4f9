/**
 * `homefs fork <org>/<home>[@snap] <org>/<new>`: a new home whose HEAD is that snapshot (HEAD when no
 * snapshot is given). O(1): one snapshot object and one generation record; no block is copied.
 */
import type { Command } from 'commander';
import { forkHome } from '../ops/fork.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, withStore } from './store-option.js';

export function register(program: Command): void {
  addStoreOption(
    program
      .command('fork')
      .description('create <org>/<new> whose HEAD is <org>/<home>[@snap] (no data copied; prints the new snapshot id)')
      .argument('<source>', '<org>/<home>[@<snapshot>]')
      .argument('<target>', '<org>/<new-home> (must not exist)'),
  )
    .option('--json', 'print the result as one JSON object')
    .action(async (srcRef: string, dstRef: string, o: { store?: string; json?: boolean }) => {
      const src = parseHomeRef(srcRef);
      const dst = parseHomeRef(dstRef, false);
      const r = await withStore(o.store, { write: true }, (store) => forkHome(store, src, dst));
      if (o.json) {
        process.stdout.write(JSON.stringify(r) + '\n');
        return;
      }
      process.stdout.write(r.snapshot + '\n');
      process.stderr.write(`forked ${r.source}@${r.from.slice(0, 12)} to ${r.target} (generation ${r.gen}) in ${r.ms.toFixed(1)} ms; no data copied\n`);
    });
}
