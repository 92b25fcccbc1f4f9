/**
 * `homefs ls <org>/<home>[@snap] [path]`: list a directory of a snapshot (or one entry), like `ls -l`;
 * `-R` lists everything below it; `--json` prints one object per entry per line.
 */
import type { Command } from 'commander';
import { ObjectStore } from '../format/objects.js';
import type { EntryKind, TreeEntry } from '../model/tree.js';
import { resolveHomeSnapshot, resolvePath, walkTree, type WalkItem } from '../transfer/walk.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, exitQuietlyOnEpipe, withStore } from './store-option.js';

interface Options {
  store?: string;
  json?: boolean;
  recursive?: boolean;
}

const TYPE_CHAR: Record<EntryKind, string> = { file: '-', dir: 'd', symlink: 'l', fifo: 'p', socket: 's', chardev: 'c', blockdev: 'b' };

export function modeString(kind: EntryKind, mode: number): string {
  const rwx = (bits: number, special: boolean, ch: string): string =>
    (bits & 4 ? 'r' : '-') + (bits & 2 ? 'w' : '-') + (special ? (bits & 1 ? ch : ch.toUpperCase()) : bits & 1 ? 'x' : '-');
  return (
    TYPE_CHAR[kind] +
    rwx((mode >> 6) & 7, (mode & 0o4000) !== 0, 's') +
    rwx((mode >> 3) & 7, (mode & 0o2000) !== 0, 's') +
    rwx(mode & 7, (mode & 0o1000) !== 0, 't')
  );
}

function nsToIso(ns: bigint): string {
  const ms = ns / 1_000_000n;
  const iso = new Date(Number(ms)).toISOString();
  const frac = ((ns % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n;
  return iso.slice(0, 19) + '.' + frac.toString().padStart(9, '0') + 'Z';
}

export function entryJson(path: string, e: TreeEntry): Record<string, unknown> {
  return {
    path,
    kind: e.kind,
    mode: '0' + e.mode.toString(8),
    uid: e.uid,
    gid: e.gid,
    size: e.size,
    mtime: nsToIso(e.mtimeNs),
    ctime: nsToIso(e.ctimeNs),
    ...(e.target !== undefined ? { target: e.target } : {}),
    ...(e.link !== undefined ? { link: e.link } : {}),
    ...(e.ino !== undefined ? { ino: e.ino } : {}),
    ...(e.blocks !== undefined ? { blocks: e.blocks.length } : {}),
    ...(e.xattrs ? { xattrs: Object.fromEntries(e.xattrs.map(([n, v]) => [n, v.toString('base64')])) } : {}),
  };
}

function line(path: string, e: TreeEntry): string {
  const name = e.kind === 'dir' ? `${path}/` : path;
  const target = e.target !== undefined ? ` -> ${e.target}` : '';
  return `${modeString(e.kind, e.mode)} ${String(e.uid).padStart(5)} ${String(e.gid).padStart(5)} ${String(e.size).padStart(12)} ${nsToIso(e.mtimeNs)} ${name}${target}\n`;
}

export function register(program: Command): void {
  addStoreOption(
    program
      .command('ls')
      .description('list a directory (or one entry) of a snapshot of <org>/<home> (HEAD unless @<snapshot>)')
      .argument('<home>', '<org>/<home>[@<snapshot>]')
      .argument('[path]', 'path inside the snapshot', ''),
  )
    .option('-R, --recursive', 'list everything below the path')
    .option('--json', 'print one JSON object per entry per line')
    .action(async (ref: string, path: string, opts: Options) => {
      exitQuietlyOnEpipe();
      const { org, home, snapshot } = parseHomeRef(ref);
      await withStore(opts.store, {}, async (store) => {
        const { snapshot: id, objects } = await resolveHomeSnapshot(new ObjectStore(store, org), home, snapshot);
        const snap = await objects.getSnapshot(id);
        const target = await resolvePath(objects, snap.root, path);
        const print = (item: WalkItem): void => {
          process.stdout.write(opts.json ? JSON.stringify(entryJson(item.path, item.entry)) + '\n' : line(item.path, item.entry));
        };
        if (target.tree === null) {
          if (target.entry) print({ path: target.path, entry: target.entry });
          return;
        }
        if (opts.recursive) {
          for await (const item of walkTree(objects, target.tree, target.path)) print(item);
          return;
        }
        for (const entry of (await objects.getTree(target.tree)).entries) {
          print({ path: target.path ? `${target.path}/${entry.name}` : entry.name, entry });
        }
      });
    });
}
