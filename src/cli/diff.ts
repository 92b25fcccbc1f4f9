/**
 * `homefs diff <org>/<home>[@a] [@b]`: what changed between two snapshots, one path a line
 * (`A`/`D`/`M`, size, path). Without snapshots: HEAD against its parent (the last seal's changes); with
 * `@a` only: a against HEAD; with both: a against b.
 */
import type { Command } from 'commander';
import { liveHead } from '../fsynclog/homelog.js';
import { ObjectStore } from '../format/objects.js';
import { diffTrees, summarize, type Change } from '../ops/diff.js';
import { UserError } from '../util/errors.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, exitQuietlyOnEpipe, formatBytes, withStore } from './store-option.js';

const MARK: Record<Change['change'], string> = { added: 'A', removed: 'D', modified: 'M' };

function sizeText(c: Change): string {
  if (c.kind === 'dir') return '-';
  if (c.change === 'modified') return `${formatBytes(c.oldSize ?? 0)} -> ${formatBytes(c.size ?? 0)}`;
  return formatBytes(c.change === 'added' ? (c.size ?? 0) : (c.oldSize ?? 0));
}

export function register(program: Command): void {
  addStoreOption(
    program
      .command('diff')
      .description('paths added (A), removed (D) and modified (M) between two snapshots of a home')
      .argument('<home>', '<org>/<home>[@<a>]: without @a, HEAD against its parent; with @a only, a against HEAD')
      .argument('[b]', '@<snapshot> to compare against instead of HEAD'),
  )
    .option('--json', 'print one JSON object per change, then a summary object')
    .action(async (ref: string, bArg: string | undefined, o: { store?: string; json?: boolean }) => {
      exitQuietlyOnEpipe();
      const r = parseHomeRef(ref);
      const bSnap = bArg === undefined ? undefined : bArg.replace(/^@/, '');
      if (bSnap !== undefined && !/^[0-9a-f]{6,64}$/.test(bSnap)) throw new UserError(`invalid snapshot '${bArg}': expected @ and 6-64 lowercase hex digits`);
      const out = await withStore(o.store, {}, async (store) => {
        // HEAD here is the home's current state: with what was fsync'd since, from its log (homelog.ts).
        const live = await liveHead(new ObjectStore(store, r.org), r.home);
        const objects = live.objects;
        if (live.snapshot === null) throw new UserError(`home ${r.org}/${r.home} has no snapshots in ${store.url}`);
        const head = { snapshot: live.snapshot };
        let a: string | null;
        let b: string;
        if (r.snapshot === undefined) {
          b = head.snapshot;
          a = (await objects.getSnapshot(b)).parent;
        } else {
          a = await objects.resolveSnapshot(r.snapshot);
          b = bSnap === undefined ? head.snapshot : await objects.resolveSnapshot(bSnap);
        }
        const rootA = a === null ? null : (await objects.getSnapshot(a)).root;
        const rootB = (await objects.getSnapshot(b)).root;
        const changes: Change[] = [];
        for await (const c of diffTrees(objects, rootA, rootB)) changes.push(c);
        return { from: a, to: b, changes };
      });
      const summary = summarize(out.changes);
      if (o.json) {
        for (const c of out.changes) process.stdout.write(JSON.stringify(c) + '\n');
        process.stdout.write(JSON.stringify({ summary: { from: out.from, to: out.to, ...summary } }) + '\n');
        return;
      }
      for (const c of out.changes) process.stdout.write(`${MARK[c.change]} ${sizeText(c).padStart(12)}  ${c.path}${c.kind === 'dir' ? '/' : ''}\n`);
      process.stderr.write(
        `${out.from ? out.from.slice(0, 12) : '(empty)'} -> ${out.to.slice(0, 12)}: ${summary.added} added, ${summary.removed} removed, ${summary.modified} modified ` +
          `(+${formatBytes(summary.bytesAdded)}, -${formatBytes(summary.bytesRemoved)})\n`,
      );
    });
}
