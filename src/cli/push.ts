/**
 * `homefs push <dir> <org>/<home>`: snapshot a plain directory as the home's new HEAD (excludes from
 * HOMEFS_EXCLUDES / COVEY_HOME_EXCLUDES or the defaults). Prints the snapshot id; `--json` prints the
 * whole result. On a TTY, a push that runs over a second shows progress on stderr. Paths it cannot read
 * are named on stderr and left out; the snapshot is still committed, and the exit code is 5 (incomplete).
 */
import type { Command } from 'commander';
import { lstat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { defaults, excludePatterns } from '../config.js';
import { FileStore } from '../store/file.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit-codes.js';
import { progressBar, type Progress } from '../util/progress.js';
import { pushDirectory, type PushProgress } from '../transfer/push.js';
import { parseHomeRef } from '../util/names.js';
import { formatBytes, parallelOption, transferCommand, withStore } from './store-option.js';

interface Options {
  store?: string;
  json?: boolean;
  xattrs: boolean;
  rehash?: boolean;
  parallel?: string;
  pack: boolean;
}

/** Push's counters on the shared progress bar: entries while scanning, then files with bytes hashed. */
function showProgress(bar: Progress, p: PushProgress): void {
  if (p.phase === 'scan') bar.update('scanning entries', p.files, 0);
  else if (p.phase === 'content') {
    bar.update('push files', p.files, p.filesTotal, `${formatBytes(p.bytesHashed)} hashed, ${formatBytes(p.bytesUploaded)} uploaded (${p.blocksNew} new blocks)`);
  } else bar.update(p.phase === 'trees' ? 'writing trees' : 'done', p.files, p.filesTotal);
}

/** The same checks as pushDirectory's, before the store is opened (and maybe created) for nothing. */
async function requireDirectory(dir: string): Promise<void> {
  let st;
  try {
    st = await lstat(dir);
  } catch {
    throw new UserError(`cannot push ${dir}: no such directory`);
  }
  if (!st.isDirectory()) throw new UserError(`cannot push ${dir}: not a directory`);
}

export function register(program: Command): void {
  transferCommand(program, 'push', 'snapshot a directory as the new HEAD of <org>/<home> (prints the snapshot id); exit 5 if paths it could not read were left out', [
    ['<dir>', 'directory to snapshot'],
    ['<home>', '<org>/<home>'],
  ], defaults.push.parallelism)
    .option('--no-xattrs', 'do not read extended attributes')
    .option('--no-pack', 'do not write the push pack (then pull, and cold reads on a fresh host, fetch block by block)')
    .option('--rehash', 'read and hash every file, even those unchanged since HEAD (same size, mtime, ctime)')
    .action(async (dir: string, ref: string, opts: Options) => {
      const { org, home } = parseHomeRef(ref, false);
      const parallelism = parallelOption(opts.parallel);
      await requireDirectory(dir);
      const progress = progressBar();
      const res = await withStore(opts.store, { write: true, create: true }, (store) => {
        const excludes = [...excludePatterns()];
        const inside = store instanceof FileStore ? relative(resolve(dir), store.root) : '..';
        if (inside === '') throw new UserError(`cannot push ${dir}: it is the store itself`);
        // A file store inside the pushed directory (the default store under ~/.local/share) is never pushed.
        if (!inside.startsWith('..') && !isAbsolute(inside)) excludes.push('/' + inside.replace(/[\\*?[]/g, '\\$&') + '/');
        return pushDirectory(dir, store, org, home, {
          excludes, xattrs: opts.xattrs, rehash: opts.rehash === true, ...(opts.pack ? {} : { pushPack: false }), onProgress: (p) => showProgress(progress, p), ...(parallelism ? { parallelism } : {}),
        });
      }).finally(() => progress.stop());
      for (const u of res.unreadable) {
        process.stderr.write(`homefs: cannot read ${join(dir, u.path)}: ${u.reason}; ${u.dir ? 'its entries are' : 'it is'} left out of the snapshot\n`);
      }
      if (res.pushPack?.error !== undefined) process.stderr.write(`homefs: the push pack was not written (a pull fetches block by block): ${res.pushPack.error}\n`);
      if (res.unreadable.length > 0) process.exitCode = ExitCode.incomplete;
      if (opts.json) {
        process.stdout.write(JSON.stringify({ home: `${org}/${home}`, ...res }) + '\n');
        return;
      }
      process.stdout.write(res.snapshot + '\n');
      process.stderr.write(
        `pushed ${org}/${home} generation ${res.gen}: ${res.files} files, ${res.dirs} dirs, ${formatBytes(res.bytes)}; ` +
          `${res.blocksNew} of ${res.blocks} blocks new (${formatBytes(res.bytesUploaded)} uploaded), ${res.filesReused} files unchanged since HEAD, in ${res.seconds.toFixed(2)} s` +
          (res.excluded ? `; ${res.excluded} excluded` : '') +
          (res.skipped ? `; ${res.skipped} sockets skipped` : '') +
          (res.vanished ? `; ${res.vanished} files deleted while pushing, left out` : '') +
          (res.unreadable.length ? `; INCOMPLETE: ${res.unreadable.length} unreadable paths left out (named above)` : '') +
          '\n',
      );
    });
}
