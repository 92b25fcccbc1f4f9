/**
 * `homefs log <org>/<home>`: the home's history, newest first (one line per HEAD generation).
 */
import type { Command } from 'commander';
import { listHistory } from '../format/heads.js';
import { liveHead } from '../fsynclog/homelog.js';
import { ObjectStore } from '../format/objects.js';
import { UsageError, UserError } from '../util/errors.js';
import { mapLimit } from '../util/concurrency.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, exitQuietlyOnEpipe, formatBytes, withStore } from './store-option.js';

interface Options {
  store?: string;
  json?: boolean;
  limit: string;
}

export function register(program: Command): void {
  addStoreOption(
    program
      .command('log')
      .description('list the snapshots of <org>/<home>, newest first')
      .argument('<home>', '<org>/<home>'),
  )
    .option('--json', 'print one JSON object per line')
    .option('-n, --limit <n>', 'at most this many generations', '50')
    .action(async (ref: string, opts: Options) => {
      exitQuietlyOnEpipe();
      const { org, home } = parseHomeRef(ref, false);
      const limit = Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`invalid --limit '${opts.limit}': expected a positive integer`);
      const rows = await withStore(opts.store, {}, async (store) => {
        const history = await listHistory(store, org, home, limit);
        if (history.length === 0) throw new UserError(`home ${org}/${home} has no snapshots in ${store.url}`);
        const live = await liveHead(new ObjectStore(store, org), home);
        const objects = live.objects;
        const rows = await mapLimit(history, 16, async (h) => ({ gen: h.gen, id: h.snapshot, log: null as number | null, ...(await objects.getSnapshot(h.snapshot)) }));
        // What was fsync'd since HEAD (the newest log segment), on top, marked by its sequence number.
        const s = live.segment;
        return s ? [{ gen: s.gen, id: s.snapshot, log: s.seq, ...(await objects.getSnapshot(s.snapshot)) }, ...rows] : rows;
      });
      for (const r of rows) {
        if (opts.json) {
          const rootAttrs = r.rootAttrs ? { ...r.rootAttrs, mtimeNs: r.rootAttrs.mtimeNs.toString() } : undefined;
          process.stdout.write(JSON.stringify({ ...r, rootAttrs }) + '\n');
        } else {
          process.stdout.write(
            `${r.log === null ? String(r.gen).padStart(5) : '  log'}  ${r.id.slice(0, 12)}  ${r.time}  ${r.host}  ${r.stats.files} files  ${formatBytes(r.stats.bytes)}  ${r.reason ?? ''}${r.log === null ? '' : ` (fsync'd, log segment ${r.log}, not sealed yet)`}\n`,
          );
        }
      }
    });
}
