/**
 * `homefs push <dir> <org>/<home>`: snapshot a plain directory as the home's new HEAD (excludes from
 * HOMEFS_EXCLUDES / COVEY_HOME_EXCLUDES or the defaults). Prints the snapshot id; `--json` prints the
 * whole result. On a TTY, a push that runs over a second shows progress on stderr.
 */
import type { Command } from 'commander';
import { isAbsolute, relative, resolve } from 'node:path';
import { excludePatterns } from '../config.js';
import { FileStore } from '../store/file.js';
import { UserError } from '../util/errors.js';
import { pushDirectory, type PushProgress } from '../snapshot/push.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, formatBytes, withStore } from './store-option.js';

interface Options {
  store?: string;
  json?: boolean;
  xattrs: boolean;
  rehash?: boolean;
}

function progressPrinter(): { update: (p: PushProgress) => void; stop: () => void } {
  if (!process.stderr.isTTY) return { update: () => undefined, stop: () => undefined };
  const start = Date.now();
  let last: PushProgress | null = null;
  let shown = false;
  const draw = (): void => {
    if (!last || Date.now() - start < 1000) return;
    shown = true;
    const p = last;
    if (p.phase === 'scan') {
      process.stderr.write(`\r\x1b[Kscanning: ${p.files} entries`);
      return;
    }
    process.stderr.write(
      `\r\x1b[K${p.phase}: ${p.files}/${p.filesTotal} files, ${formatBytes(p.bytesHashed)}/${formatBytes(p.bytesTotal)} hashed, ${formatBytes(p.bytesUploaded)} uploaded (${p.blocksNew} new blocks)`,
    );
  };
  const timer = setInterval(draw, 200);
  return {
    update: (p) => {
      last = p;
    },
    stop: () => {
      clearInterval(timer);
      if (shown) {
        draw();
        process.stderr.write('\n');
      }
    },
  };
}

export function register(program: Command): void {
  addStoreOption(
    program
      .command('push')
      .description('snapshot a directory as the new HEAD of <org>/<home> (prints the snapshot id)')
      .argument('<dir>', 'directory to snapshot')
      .argument('<home>', '<org>/<home>'),
  )
    .option('--json', 'print the result as one JSON object')
    .option('--no-xattrs', 'do not read extended attributes')
    .option('--rehash', 'read and hash every file, even those unchanged since HEAD (same size, mtime, ctime)')
    .action(async (dir: string, ref: string, opts: Options) => {
      const { org, home } = parseHomeRef(ref, false);
      const progress = progressPrinter();
      const res = await withStore(opts.store, true, (store) => {
        const excludes = [...excludePatterns()];
        const inside = store instanceof FileStore ? relative(resolve(dir), store.root) : '..';
        if (inside === '') throw new UserError(`cannot push ${dir}: it is the store itself`);
        // A file store inside the pushed directory (the default store under ~/.local/share) is never pushed.
        if (!inside.startsWith('..') && !isAbsolute(inside)) excludes.push('/' + inside.replace(/[\\*?[]/g, '\\$&') + '/');
        return pushDirectory(dir, store, org, home, { excludes, xattrs: opts.xattrs, rehash: opts.rehash === true, onProgress: progress.update });
      }).finally(() => progress.stop());
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
          '\n',
      );
    });
}
