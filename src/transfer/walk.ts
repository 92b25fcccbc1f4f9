/**
 * Reading a snapshot as a file tree: find which snapshot `org/home[@snap]` means, resolve a path to its
 * entry, iterate a tree recursively, and stream a file's content block by block with every block verified.
 * Errors name the path inside the snapshot, so "corrupted object ... (docs/a.txt)" tells the user what is
 * lost. Used by ls, cat, pull, and later diff.
 */
import { blockRanges } from '../hash/blake3.js';
import { CorruptObjectError, NotFoundError, UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit-codes.js';
import { liveHead, type Segment } from '../fsynclog/homelog.js';
import type { ObjectStore } from '../format/objects.js';
import type { Tree, TreeEntry } from '../model/tree.js';

/**
 * The snapshot `org/home@snap` refers to, and the objects to read it through. Without `snap` it is the
 * home's current state: HEAD plus what was fsync'd since (the newest segment of its log, whose objects
 * `objects` then also serves; fsynclog/homelog.ts). UserError if there is none.
 */
export async function resolveHomeSnapshot(objects: ObjectStore, home: string, snap?: string): Promise<{ snapshot: string; objects: ObjectStore; segment: Segment | null }> {
  if (snap !== undefined) return { snapshot: await objects.resolveSnapshot(snap), objects, segment: null };
  const live = await liveHead(objects, home);
  if (live.snapshot === null) throw new UserError(`home ${objects.org}/${home} has no snapshots in ${objects.store.url}`);
  return { snapshot: live.snapshot, objects: live.objects, segment: live.segment };
}

export interface ResolvedPath {
  /** Normalized path inside the snapshot ('' is the root). */
  path: string;
  /** The entry, or null for the root directory. */
  entry: TreeEntry | null;
  /** The tree hash when the path is a directory. */
  tree: string | null;
}

/** Splits a user-given path inside a snapshot into components; rejects '..'. */
export function pathComponents(path: string): string[] {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new UserError(`invalid path '${path}': '..' is not allowed inside a snapshot`);
  return parts;
}

/** Resolves `path` from the root tree `root`, without following symlinks. UserError if it does not exist. */
export async function resolvePath(objects: ObjectStore, root: string, path: string): Promise<ResolvedPath> {
  const parts = pathComponents(path);
  let tree: string | null = root;
  let entry: TreeEntry | null = null;
  for (let i = 0; i < parts.length; i++) {
    const here = parts.slice(0, i).join('/');
    if (tree === null) throw new UserError(`${here}: not a directory`);
    const t = await objects.getTree(tree);
    const name = parts[i];
    const found = t.entries.find((e) => e.name === name);
    if (!found) throw new UserError(`${parts.slice(0, i + 1).join('/')}: no such file or directory in the snapshot`);
    entry = found;
    tree = found.kind === 'dir' ? (found.tree ?? null) : null;
  }
  return { path: parts.join('/'), entry, tree };
}

export interface WalkItem {
  path: string;
  entry: TreeEntry;
}

/** Every entry below tree `hash`, depth first, parents before children, siblings in stored order. */
export async function* walkTree(objects: ObjectStore, hash: string, prefix = ''): AsyncGenerator<WalkItem> {
  const tree = await objects.getTree(hash);
  for (const entry of tree.entries) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    yield { path, entry };
    if (entry.kind === 'dir' && entry.tree) yield* walkTree(objects, entry.tree, path);
  }
}

/**
 * A block of `path` fetched and verified; store errors are rethrown naming the path. With `length`, a block
 * of another length (a well-formed block that is not this part of this file) is an error too.
 */
export async function getFileBlock(objects: ObjectStore, hash: string, path: string, length?: number): Promise<Buffer> {
  try {
    const data = await objects.getBlock(hash);
    if (length !== undefined && data.length !== length) {
      throw new UserError(`block ${hash} of ${path} holds ${data.length} bytes where the snapshot expects ${length}: the snapshot is inconsistent`);
    }
    return data;
  } catch (e) {
    if (e instanceof CorruptObjectError) throw new CorruptObjectError(e.key, path);
    if (e instanceof NotFoundError) throw missing('block', hash, path, e.key);
    throw e;
  }
}

/** A missing object is damage in the store (exit 4), named by what it held. */
function missing(kind: 'block' | 'tree', hash: string, path: string, key: string): UserError {
  return new UserError(`${kind} ${hash} of ${path || 'the root directory'} is missing from the store (${key}); run 'homefs verify' to list what else is lost`, ExitCode.damage);
}

/** The tree of directory `path` (hash `hash`); a missing one is a one-line error naming the directory. */
export async function getDirTree(objects: ObjectStore, hash: string, path: string): Promise<Tree> {
  try {
    return await objects.getTree(hash);
  } catch (e) {
    if (e instanceof NotFoundError) throw missing('tree', hash, path, e.key);
    throw e;
  }
}

/**
 * The content of a file entry of at most one block, fetched and verified (empty for an empty file);
 * undefined for a larger file (read it with `fileContent`).
 */
export async function singleBlockContent(objects: ObjectStore, entry: TreeEntry, path: string): Promise<Buffer | undefined> {
  const blocks = entry.blocks ?? [];
  if (entry.kind !== 'file' || blocks.length > 1) return undefined;
  return blocks[0] === undefined ? Buffer.alloc(0) : getFileBlock(objects, blocks[0], path, entry.size);
}

/** The content of a file entry, one verified block at a time, the next one fetched while this one is used. */
export async function* fileContent(objects: ObjectStore, entry: TreeEntry, path: string): AsyncGenerator<Buffer> {
  if (entry.kind !== 'file') throw new UserError(`${path}: not a regular file (${entry.kind})`);
  const ranges = blockRanges(entry.size);
  const blocks = entry.blocks ?? [];
  const fetch = (i: number): Promise<Buffer> | undefined => {
    const p = i < blocks.length ? getFileBlock(objects, blocks[i] as string, path, ranges[i]?.[1]) : undefined;
    p?.catch(() => undefined); // rethrown when awaited; not unhandled if the reader stops first
    return p;
  };
  let next = fetch(0);
  for (let i = 0; next !== undefined; i++) {
    const here: Promise<Buffer> = next;
    next = fetch(i + 1);
    yield await here;
  }
}
