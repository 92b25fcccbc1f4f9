/**
 * Pull: materialize a snapshot as a plain directory tree, bit for bit and with its metadata.
 *
 * Everything is written into a fresh temporary sibling of the destination (mkdtemp, mode 0700) and renamed
 * onto the destination only when complete, so a failure (a corrupted block, a full disk) never leaves a
 * half-restored tree at the destination path. Names were validated by the codec (no '/', '.', '..', NUL),
 * every path is built from them under the temporary directory, and nothing is ever opened through a
 * symlink: files are created with O_CREAT|O_EXCL|O_NOFOLLOW, and symlinks are created last-in-place and
 * never written through; times and xattrs are set without following links.
 *
 * Files are written as their blocks arrive (`parallelism` files at once, default 64; a one-block file, once
 * its block is verified, is queued to filewriter.ts, which creates, writes and gives it its owner, mode and
 * times in batches on the thread pool) and never fsync'd, as cp and restic restore do: the rename makes the
 * tree appear whole to other processes, but a host crash soon after a pull can leave files of it short, as
 * after cp. Run `sync` after the pull when the tree must survive a power loss (README).
 *
 * Files are taken depth first in name order, the order of the home's push pack (pushpack-reader.ts): on a
 * store over the network, when the pack is of the snapshot pulled, the small blocks stream out of it in
 * ~8 MiB ranged GETs, each verified by hash, and only the rest are fetched one GET each.
 *
 * Order matters for metadata: content, FIFOs, hard links, xattrs, owners (root only: chown clears
 * setuid bits, so it comes before chmod), modes, then times (files first, directories deepest first,
 * because creating an entry changes its directory's mtime, and the root last, from the snapshot's
 * `rootAttrs`). A one-block file without xattrs gets its owner, mode and times right after its content,
 * through its fd (none of the later steps changes them: a hard link or a sibling changes only ctimes).
 */
import { CAP_CHOWN, CAP_FOWNER, hasCaps } from '../util/caps.js';
import { constants, mkdirSync, symlinkSync } from 'node:fs';
import { link, lstat, mkdtemp, open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { defaults } from '../config.js';
import { overNetwork, type Store } from '../store/store.js';
import { mapLimit } from '../util/concurrency.js';
import { errorMessage, UserError } from '../util/errors.js';
import { nsPackKey, pushPackKey } from '../store/keys.js';
import { emptyPushPackStats, PushPackReader, type PushPackStats } from './pushpack-reader.js';
import { pullRank } from './pushpack.js';
import { readNsPack } from './nspack.js';
import { FileWriter, setMeta, type PathMeta } from './filewriter.js';
import { ObjectStore } from '../format/objects.js';
import { OsHelper } from './oshelper.js';
import type { TreeEntry } from '../model/tree.js';
import { fileContent, getDirTree, singleBlockContent } from './walk.js';

export interface PullOptions {
  /** Restore uid/gid (default: when running as root). */
  owners?: boolean;
  /** Restore xattrs (default true; needs python3). */
  xattrs?: boolean;
  /** Files written at once (default: config.ts `defaults.pull.parallelism`). */
  parallelism?: number;
  /** After each file written: files and bytes written so far, of the totals. */
  onProgress?: (p: PullProgress) => void;
  /** The home pulled: its namespace pack (if any) brings the trees in a few ranged GETs, its push pack the small blocks. */
  home?: string;
  /** Read the home's push pack (default: on stores over the network, the only ones push writes one to). */
  pushPack?: boolean;
}

export interface PullProgress {
  files: number;
  filesTotal: number;
  bytes: number;
  bytesTotal: number;
}

export interface PullResult {
  snapshot: string;
  path: string;
  files: number;
  dirs: number;
  bytes: number;
  /** Sockets, and device nodes when not root: not recreated. */
  skipped: number;
  seconds: number;
  /** What the push pack gave (pushpack-reader.ts). */
  pushPack: PushPackStats;
}

interface Item {
  abs: string;
  rel: string;
  entry: TreeEntry;
  depth: number;
  /** This entry is a second (third, ...) name of a hard-linked inode. */
  extraLink: boolean;
  /** Its `pullRank` in each directory from the root down: sorts items in pull order (push's order). */
  pos: number[];
  /** Owner, mode and times were set when the file was written (filewriter.ts). */
  metaDone?: boolean;
}

/** Pull order (pushpack.ts `pullRank`): the order push lays out the push pack in. */
function byPosition(a: Item, b: Item): number {
  const n = Math.min(a.pos.length, b.pos.length);
  for (let i = 0; i < n; i++) if (a.pos[i] !== b.pos[i]) return (a.pos[i] as number) - (b.pos[i] as number);
  return a.pos.length - b.pos.length;
}

/**
 * Opens `home`'s push pack if it is of `snapshot` (pushpack-reader.ts); null otherwise, with `stats` saying
 * why. Only an optimisation: a store error reading it counts as not used.
 */
async function openPushPack(store: Store, org: string, home: string, snapshot: string, stats: PushPackStats): Promise<PushPackReader | null> {
  const key = pushPackKey(org, home);
  try {
    return await PushPackReader.open((offset, length) => store.getRange(key, offset, length), snapshot, defaults.pushPack, stats);
  } catch (e) {
    stats.skipped = `unreadable: ${errorMessage(e)}`;
    return null;
  }
}

const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** The owner (when restored), mode (not of a symlink) and times of `entry`. */
function metaOf(entry: TreeEntry, owners: boolean): PathMeta {
  return { ...(owners ? { uid: entry.uid, gid: entry.gid } : {}), ...(entry.kind === 'symlink' ? {} : { mode: entry.mode }), mtimeNs: entry.mtimeNs };
}

async function checkDestination(dest: string): Promise<boolean> {
  try {
    const st = await lstat(dest);
    if (st.isDirectory() && (await readdir(dest)).length === 0) return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  throw new UserError(`${dest} already exists and is not an empty directory; pull into a new path`);
}

/**
 * Reads `home`'s namespace pack, if there is one, into `objects.known`: every tree arrives verified by its
 * hash, in a few ranged GETs instead of one GET per directory. Trees of another snapshot are harmless (they
 * are addressed by content) and trees the pack lacks are fetched one by one as before. Only an
 * optimisation: a missing, damaged or unreadable pack is ignored.
 */
async function preloadTrees(objects: ObjectStore, home: string): Promise<void> {
  if (!overNetwork(objects.store.url)) return; // (on local disk the trees are read as fast one by one)
  const key = nsPackKey(objects.org, home);
  try {
    await readNsPack((offset, length) => objects.store.getRange(key, offset, length), {
      wants: (hash) => !objects.known.has(hash),
      tree: (hash, data) => void objects.known.set(hash, data),
      rejected: () => undefined,
    }, defaults.nsPack);
  } catch {
    objects.known.clear(); // (only verified trees were in it; cleared so that a half-read pack costs no memory)
  }
}

/** Materializes snapshot `snapshotId` of `org` at `dest` (which must not exist, or be an empty directory). */
export async function pullSnapshot(store: Store, org: string, snapshotId: string, dest: string, opts: PullOptions = {}): Promise<PullResult> {
  const t0 = performance.now();
  const objects = new ObjectStore(store, org);
  const packStats = emptyPushPackStats();
  const readPack = opts.home !== undefined && (opts.pushPack ?? overNetwork(store.url));
  const [snap, , pack] = await Promise.all([
    objects.getSnapshot(snapshotId),
    opts.home === undefined ? null : preloadTrees(objects, opts.home),
    readPack && opts.home !== undefined ? openPushPack(store, org, opts.home, snapshotId, packStats) : null,
  ]);
  const destAbs = resolve(dest);
  const replaceEmpty = await checkDestination(destAbs);
  let tmp: string;
  try {
    tmp = await mkdtemp(join(dirname(destAbs), `.${basename(destAbs)}.homefs-pull-`));
  } catch (e) {
    throw new UserError(`cannot create ${dest}: ${(e as Error).message}`);
  }
  let helper: OsHelper | null = null;
  const os = (): OsHelper => (helper ??= OsHelper.start()); // (python3, only for FIFOs, devices and xattrs)
  const owners = opts.owners ?? canRestoreOwners();
  let writer: FileWriter | null = null;
  try {
    const items: Item[] = [];
    const firstOfLink = new Map<number, Item>();
    let skipped = 0;

    const materializeDir = async (hash: string, abs: string, rel: string, depth: number, pos: number[]): Promise<void> => {
      const tree = await getDirTree(objects, hash, rel);
      const subdirs: Array<Promise<void>> = [];
      for (const [index, entry] of tree.entries.entries()) {
        const item: Item = { abs: join(abs, entry.name), rel: rel ? `${rel}/${entry.name}` : entry.name, entry, depth: depth + 1, extraLink: false, pos: [...pos, pullRank(entry.name, index)] };
        if (entry.link !== undefined) {
          if (firstOfLink.has(entry.link)) item.extraLink = true;
          else firstOfLink.set(entry.link, item);
        }
        if (entry.kind === 'socket' || ((entry.kind === 'chardev' || entry.kind === 'blockdev') && process.getuid?.() !== 0)) {
          skipped++;
          continue;
        }
        items.push(item);
        if (entry.kind === 'dir') {
          mkdirSync(item.abs, 0o700);
          subdirs.push(materializeDir(entry.tree as string, item.abs, item.rel, depth + 1, item.pos));
        } else if (entry.kind === 'symlink' && !item.extraLink) {
          symlinkSync(entry.target as string, item.abs);
        }
      }
      await Promise.all(subdirs);
    };
    await materializeDir(snap.root, tmp, '', 0, []);

    // Files in push's order, so that they take the push pack's blocks about as it streams them in.
    const files = items.filter((i) => i.entry.kind === 'file' && !i.extraLink).sort(byPosition);
    if (pack) {
      const needs = new Map<string, number>();
      for (const f of files) for (const b of f.entry.blocks ?? []) needs.set(b, (needs.get(b) ?? 0) + 1);
      pack.setNeeds(needs);
      objects.blockSource = pack;
    }
    const progress: PullProgress = { files: 0, filesTotal: files.length, bytes: 0, bytesTotal: files.reduce((n, i) => n + i.entry.size, 0) };
    const fileDone = (bytes: number): void => {
      progress.bytes += bytes;
      progress.files++;
      opts.onProgress?.({ ...progress });
    };
    opts.onProgress?.({ ...progress });
    const restoreXattrs = opts.xattrs !== false;
    writer = new FileWriter(fileDone);
    const w = writer;
    await mapLimit(files, opts.parallelism ?? defaults.pull.parallelism, async (item) => {
      // Most files are one block: fetched, verified, then created, written and given their metadata on the
      // thread pool in batches (filewriter.ts) while the next blocks come in. Larger ones stream block by block.
      const whole = await singleBlockContent(objects, item.entry, item.rel);
      if (whole !== undefined) {
        // A file with xattrs gets its owner and mode after them (a read-only mode would refuse them; chown clears some).
        item.metaDone = !(restoreXattrs && (item.entry.xattrs?.length ?? 0) > 0);
        await w.write(item.abs, whole, item.metaDone ? metaOf(item.entry, owners) : undefined);
        return;
      }
      const fh = await open(item.abs, WRITE_FLAGS, 0o600);
      let bytes = 0;
      try {
        for await (const data of fileContent(objects, item.entry, item.rel)) {
          await fh.write(data, 0, data.length);
          bytes += data.length;
        }
      } finally {
        await fh.close();
      }
      fileDone(bytes);
    });
    await writer.drain();

    const first = items.filter((i) => !i.extraLink);
    const fifos = first.filter((i) => i.entry.kind === 'fifo');
    if (fifos.length > 0) await os().mkfifo(fifos.map((i) => ({ path: i.abs, mode: 0o600 })));
    const devices = first.filter((i) => i.entry.kind === 'chardev' || i.entry.kind === 'blockdev');
    if (devices.length > 0) {
      await os().mknod(devices.map((i) => ({ path: i.abs, mode: 0o600, kind: i.entry.kind as 'chardev' | 'blockdev', rdev: i.entry.rdev ?? 0 })));
    }
    for (const i of items.filter((x) => x.extraLink)) {
      const target = firstOfLink.get(i.entry.link as number) as Item;
      await link(target.abs, i.abs);
    }

    if (restoreXattrs) {
      const xs = first.flatMap((i) => (i.entry.xattrs ?? []).map(([name, value]) => ({ path: i.abs, name, value })));
      if (xs.length > 0) await os().setXattrs(xs);
    }
    // Owners (chown clears setuid bits, so before the mode), modes, then times: files first, then
    // directories deepest first (creating an entry changes its directory's mtime), the root last.
    await setMeta(first.filter((i) => i.entry.kind !== 'dir' && !i.metaDone).map((i) => ({ path: i.abs, meta: metaOf(i.entry, owners) })));
    const dirs = items.filter((i) => i.entry.kind === 'dir');
    const deepestFirst = [...dirs].sort((a, b) => b.depth - a.depth);
    await setMeta(deepestFirst.map((i) => ({ path: i.abs, meta: metaOf(i.entry, owners) })));
    const ra = snap.rootAttrs;
    await setMeta([{ path: tmp, meta: ra ? { ...(owners ? { uid: ra.uid, gid: ra.gid } : {}), mode: ra.mode, mtimeNs: ra.mtimeNs } : { mode: 0o755 } }]);

    if (replaceEmpty) await rmdir(destAbs);
    await rename(tmp, destAbs);
    return {
      snapshot: snapshotId,
      path: destAbs,
      files: items.filter((i) => i.entry.kind !== 'dir').length,
      dirs: dirs.length,
      bytes: progress.bytes,
      skipped,
      seconds: (performance.now() - t0) / 1000,
      pushPack: packStats,
    };
  } catch (e) {
    await writer?.settled();
    await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw e;
  } finally {
    await (helper as OsHelper | null)?.close();
  }
}

/**
 * Whether this process can give files to other owners and still set their modes: root with CAP_CHOWN and
 * CAP_FOWNER (a container's root often lacks CAP_FOWNER; its chmod of a file it gave away would fail).
 */
function canRestoreOwners(): boolean {
  if (process.getuid?.() !== 0) return false;
  return hasCaps(CAP_CHOWN, CAP_FOWNER) ?? true;
}
