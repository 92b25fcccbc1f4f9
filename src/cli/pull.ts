/**
 * `homefs pull <org>/<home>[@<snapshot>] <dir>`: materialize a snapshot (HEAD by default) as a new
 * directory, written into a temporary sibling and renamed into place only when complete. On a TTY, a pull
 * that runs over a second shows progress on stderr (util/progress.ts, as push, gc and verify do).
 */
import type { Command } from 'commander';
import { setFlagsFromString } from 'node:v8';
import { defaults } from '../config.js';
import { ObjectStore } from '../format/objects.js';
import { pullSnapshot } from '../transfer/pull.js';
import { resolveHomeSnapshot } from '../transfer/walk.js';
import { parseHomeRef } from '../util/names.js';
import { progressBar } from '../util/progress.js';
import { formatBytes, parallelOption, transferCommand, withStore } from './store-option.js';

interface Options {
  store?: string;
  json?: boolean;
  xattrs: boolean;
  owners?: boolean;
  parallel?: string;
}

export function register(program: Command): void {
  transferCommand(program, 'pull', 'materialize a snapshot of <org>/<home> (HEAD unless @<snapshot>) into a new directory', [
    ['<home>', '<org>/<home>[@<snapshot>]'],
    ['<dir>', 'destination (must not exist, or be an empty directory)'],
  ], defaults.pull.parallelism)
    .option('--no-xattrs', 'do not restore extended attributes')
    .option('--no-owners', 'do not restore owners even when running as root')
    .action(async (ref: string, dir: string, opts: Options) => {
      const { org, home, snapshot } = parseHomeRef(ref);
      // ~1 GB arrives in 4 and 8 MiB bodies, and in as many 64 KiB socket reads: every 64 MiB of them would
      // start a full GC of the heap (~50 MB of the snapshot's entries), back to back for the whole pull.
      // Counted in the heap's global limit instead, they start one now and then (docs/decisions/
      // 0061-pull-external-memory-in-heap-limit.md).
      setFlagsFromString('--external-memory-accounted-in-global-limit');
      const parallelism = parallelOption(opts.parallel);
      const progress = progressBar({ format: formatBytes });
      const res = await withStore(opts.store, {}, async (store) => {
        const { snapshot: id, objects } = await resolveHomeSnapshot(new ObjectStore(store, org), home, snapshot);
        return pullSnapshot(objects.store, org, id, dir, {
          home, xattrs: opts.xattrs, owners: opts.owners === false ? false : undefined, ...(parallelism ? { parallelism } : {}),
          onProgress: (p) => progress.update('pull', p.bytes, p.bytesTotal, `${p.files}/${p.filesTotal} files`),
        });
      }).finally(() => progress.stop());
      if (opts.json) {
        process.stdout.write(JSON.stringify({ home: `${org}/${home}`, ...res }) + '\n');
        return;
      }
      process.stdout.write(
        `pulled ${org}/${home}@${res.snapshot.slice(0, 12)} into ${res.path}: ${res.files} files, ${res.dirs} dirs, ${formatBytes(res.bytes)} in ${res.seconds.toFixed(2)} s` +
          (res.skipped ? ` (${res.skipped} sockets/devices not recreated)` : '') +
          '\n',
      );
    });
}
