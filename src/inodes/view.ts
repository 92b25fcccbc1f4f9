/**
 * The namespace of a mounted home: lookups, creation, removal, rename, links and attributes over the
 * journal (extended attributes are xattrs.ts; file content is content.ts). Directories of the base snapshot are materialized into the journal the first time they are
 * needed (`ensureLoaded`), from trees fetched through a `TreeSource`, in memory only until a change depends
 * on them (journal.ts `inMemoryLoad`); after that the journal is the truth.
 *
 * Every method either completes synchronously (metadata from memory/LMDB) or, when a directory must be
 * loaded first, the caller awaits `ensureLoaded` and calls again. Errors are `FsError`s carrying an errno.
 */
import type { Tree, TreeEntry } from '../model/tree.js';
import { SingleFlight } from '../util/concurrency.js';
import { E, fsErr, nowNs } from './errors.js';
import { cleanContent, emptyContent } from './filestate.js';
import { childKey, type Journal } from './journal.js';
import { ROOT_INO, type Inode } from './types.js';
import { DERIVED_INO_BASE } from '../model/inos.js';
import { InoMap, InoTable } from '../util/inomap.js';
import { LoadTrimmer, type TrimHooks, type TrimOptions } from './trim.js';

export interface TreeSource {
  getTree(hash: string): Promise<Tree>;
  /** Background fetch of trees likely needed soon (bounded, never throws). */
  prefetchTrees(hashes: string[]): void;
}

export const NAME_MAX = 255;
/** Directories a restore walks up at most (a chain of remembered entries is a path in the tree). */
const MAX_DEPTH = 4096;
const RENAME_NOREPLACE = 1;
const RENAME_EXCHANGE = 2;

export interface NewNode {
  kind: Inode['kind'];
  mode: number;
  uid: number;
  gid: number;
  rdev?: number;
  target?: string;
}

function checkName(name: string): void {
  if (Buffer.byteLength(name) > NAME_MAX) throw fsErr(E.ENAMETOOLONG);
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) throw fsErr(E.EINVAL);
}

export class HomeView {
  private readonly loading = new SingleFlight<number, void>();
  /** Lookup references the kernel holds per inode (forget releases them). */
  private readonly lookups = new InoMap();
  /** Open handles per inode. */
  private readonly opens = new InoMap();
  /**
   * Entries whose records left memory with their directory's load (trim.ts) while the kernel still holds
   * them, or holds something below them: each one's directory. A request about one brings it back (`restore`).
   */
  private readonly remembered = new InoMap();
  /** Per directory, how many of its entries are remembered. */
  private readonly rememberedIn = new InoMap();
  /**
   * The records of remembered directories, for their attributes only (`attrs`): a walk that comes back
   * stats every directory it read (the kernel takes a listing it read itself to have moved the atime), and
   * nothing changes a directory's record before a request brings it back.
   */
  private readonly rememberedDirs = new InoTable<Inode>();
  /** Called, inside the transaction that removes it, when an unlinked inode is finally released. */
  onReclaim: (node: Inode) => void = () => undefined;
  /** The last open handle of `ino` was closed (write-behind then counts the file quiet sooner). */
  onLastClose: (ino: number) => void = () => undefined;
  /** An inode was created (a log segment may leave a fresh name out: seal/omission.ts). */
  onCreated: (ino: number) => void = () => undefined;
  /** An inode got a name in `dirs`: moved there (`link` false), or a further hard link (true). */
  onNamed: (ino: number, dirs: number[], link: boolean) => void = () => undefined;
  /** Called after each lookup that found its child (the git-index prefetch watches for `.git/index`). */
  onLookup: ((parent: number, name: string, node: Inode) => void) | undefined;

  /** Keeps the records in memory under a budget, once started (trim.ts). */
  private trimmer: LoadTrimmer | undefined;

  constructor(readonly journal: Journal, private readonly trees: TreeSource) {}

  /** Keeps the records in memory under `opts.maxRecords` from now on; the hooks say what the FUSE layer holds. */
  startTrimming(opts: TrimOptions, hooks: Omit<TrimHooks, 'inUse' | 'dropping'>): LoadTrimmer {
    this.trimmer?.close();
    this.trimmer = new LoadTrimmer(this.journal, opts, {
      ...hooks,
      // A number from the counter (a collision at load) may differ when the tree is loaded again: while the
      // kernel holds one, its load stays.
      inUse: (ino) => this.opens.has(ino) || (ino < DERIVED_INO_BASE && this.lookups.has(ino)),
      dropping: (dir, entries) => {
        for (const ino of entries) {
          if (!this.lookups.has(ino) && !this.rememberedIn.has(ino)) continue;
          this.remember(ino, dir);
          const r = this.journal.get(ino);
          if (r?.kind === 'dir') this.rememberedDirs.set(ino, r);
        }
      },
    });
    return this.trimmer;
  }

  stopTrimming(): void {
    this.trimmer?.close();
    this.trimmer = undefined;
  }

  /** More records are in memory than the budget allows: the kernel is told of new entries sparingly. */
  get overBudget(): boolean {
    return this.trimmer?.over ?? false;
  }

  /** Loads dropped to stay under the budget, and entries the kernel holds whose records are not in memory (status). */
  get trimCounts(): { dropped: number; remembered: number } {
    return { dropped: this.trimmer?.dropped ?? 0, remembered: this.remembered.size };
  }

  /** Creates the root inode on a fresh journal: the base snapshot's root tree, or an empty directory. */
  initRoot(rootTree: string | null, rootEntry: Partial<Inode>, uid: number, gid: number): void {
    if (!this.journal.isEmpty()) return;
    const now = nowNs();
    this.journal.put({
      ino: ROOT_INO, kind: 'dir', mode: 0o755, uid, gid, size: 0, atimeNs: now, mtimeNs: now, ctimeNs: now,
      nlink: 2, parents: [], ...rootEntry,
      ...(rootTree ? { tree: rootTree, loaded: false } : { loaded: true }),
    });
  }

  /** Set while files are open through FUSE passthrough: brings a live file's record up to date (Content.refresh). */
  refresh: ((ino: number) => void) | undefined;

  get(ino: number): Inode {
    this.refresh?.(ino);
    const i = this.journal.get(ino);
    if (!i) {
      if (this.remembered.has(ino)) throw new NeedsLoad(ino);
      throw fsErr(E.ENOENT, `no inode ${ino}`);
    }
    return i;
  }

  /** The inode's record for its attributes: a remembered directory's need not come back first (see `rememberedDirs`). */
  attrs(ino: number): Inode {
    return (this.journal.get(ino) ? undefined : this.rememberedDirs.get(ino)) ?? this.get(ino);
  }

  /** The inode, or undefined if it is gone. */
  peek(ino: number): Inode | undefined {
    this.refresh?.(ino);
    return this.journal.get(ino);
  }

  dir(ino: number): Inode {
    const i = this.get(ino);
    if (i.kind !== 'dir') throw fsErr(E.ENOTDIR);
    return i;
  }

  // ---- lazy loading -------------------------------------------------------------------------------

  /**
   * undefined when the directory is loaded (or not a directory); otherwise a promise that loads it, or that
   * brings back the record of an entry whose load was dropped while the kernel held it (`restore`).
   */
  ensureLoaded(ino: number): Promise<void> | undefined {
    const d = this.journal.get(ino);
    if (!d && this.remembered.has(ino)) return this.restore(ino);
    if (!d || d.kind !== 'dir' || d.loaded || !d.tree) return undefined;
    const tree = d.tree;
    return this.loading.run(ino, async () => {
      const t = await this.trees.getTree(tree);
      const cur = this.journal.get(ino);
      if (!cur || cur.loaded) return;
      this.materialize(cur, t);
    });
  }

  /**
   * Loads the directories down to remembered entry `ino` from the nearest one whose record is in memory: the
   * tree gives each entry its inode number again (model/inos.ts). An entry its directory no longer lists
   * with that number is forgotten (a request about it then finds no inode).
   */
  private async restore(ino: number): Promise<void> {
    const path: number[] = [];
    for (let x = ino; !this.journal.get(x); ) {
      const dir = this.remembered.get(x);
      if (dir === undefined || path.length > MAX_DEPTH) return;
      path.push(dir);
      x = dir;
    }
    for (let i = path.length - 1; i >= 0; i--) await this.ensureLoaded(path[i] as number);
    if (!this.journal.get(ino)) this.unremember(ino);
  }

  private remember(ino: number, dir: number): void {
    if (this.remembered.has(ino)) return;
    this.remembered.set(ino, dir);
    this.rememberedIn.set(dir, (this.rememberedIn.get(dir) ?? 0) + 1);
  }

  /** `ino` is in memory again, or gone: so is, up the tree, each remembered directory nothing holds any more. */
  private unremember(ino: number): void {
    for (let x: number | undefined = ino; x !== undefined; ) {
      const dir = this.remembered.get(x);
      if (dir === undefined) return;
      this.remembered.delete(x);
      this.rememberedDirs.delete(x);
      const left = (this.rememberedIn.get(dir) ?? 1) - 1;
      if (left > 0) {
        this.rememberedIn.set(dir, left);
        return;
      }
      this.rememberedIn.delete(dir);
      x = this.lookups.has(dir) || this.journal.get(dir) ? undefined : dir;
    }
  }

  private materialize(d: Inode, t: Tree): void {
    const subtrees: string[] = [];
    this.journal.inMemoryLoad(d.ino, () => {
      let subdirs = 0;
      for (const e of t.entries) {
        let ino = e.link !== undefined ? this.journal.linkIno(e.link) : undefined;
        if (ino !== undefined && this.journal.get(ino)) {
          const other = this.get(ino);
          this.journal.update(ino, { parents: [...other.parents, d.ino] });
        } else {
          ino = this.journal.allocIno(e.link !== undefined ? `link:${e.link}` : () => childKey(d.ino, e.name), e.ino); // (the key only when the tree records no number)
          this.journal.put(inodeFromEntry(ino, e, d.ino));
          if (e.link !== undefined) this.journal.setLinkIno(e.link, ino);
        }
        this.journal.setChild(d.ino, e.name, ino);
        if (this.remembered.size > 0) this.unremember(ino);
        if (e.kind === 'dir') {
          subdirs++;
          if (e.tree) subtrees.push(e.tree);
        }
      }
      this.journal.update(d.ino, { loaded: true, nlink: 2 + subdirs });
    });
    if (subtrees.length > 0) this.trees.prefetchTrees(subtrees);
    this.trimmer?.soon();
  }

  // ---- kernel references ---------------------------------------------------------------------------

  ref(ino: number, n = 1): void {
    this.lookups.set(ino, (this.lookups.get(ino) ?? 0) + n);
  }

  forget(ino: number, n: number): void {
    const left = (this.lookups.get(ino) ?? 0) - n;
    if (left > 0) this.lookups.set(ino, left);
    else {
      this.lookups.delete(ino);
      if (this.remembered.has(ino) && !this.rememberedIn.has(ino)) this.unremember(ino);
      this.maybeReclaim(ino);
      this.trimmer?.soon();
    }
  }

  /** Open handles of `ino`. */
  openCount(ino: number): number {
    return this.opens.get(ino) ?? 0;
  }

  opened(ino: number): void {
    this.opens.set(ino, (this.opens.get(ino) ?? 0) + 1);
  }

  closed(ino: number): void {
    const left = (this.opens.get(ino) ?? 1) - 1;
    if (left > 0) this.opens.set(ino, left);
    else {
      this.opens.delete(ino);
      this.onLastClose(ino);
      this.maybeReclaim(ino);
    }
  }

  private maybeReclaim(ino: number): void {
    const i = this.journal.get(ino);
    if (!i || i.nlink > 0 || this.lookups.has(ino) || this.opens.has(ino)) return;
    this.journal.txn(() => {
      this.journal.remove(ino);
      this.onReclaim(i);
    });
  }

  // ---- lookups -----------------------------------------------------------------------------------

  /** The child inode, or undefined. The parent must be loaded. */
  lookup(parent: number, name: string): Inode | undefined {
    this.dir(parent);
    if (Buffer.byteLength(name) > NAME_MAX) throw fsErr(E.ENAMETOOLONG);
    this.journal.touchLoad(parent); // a directory being walked keeps its load (trim.ts drops the least recently used)
    const ino = this.journal.child(parent, name);
    const node = ino === undefined ? undefined : this.journal.get(ino);
    if (node && this.onLookup) this.onLookup(parent, name, node);
    return node;
  }

  /** Sorted directory listing (name, inode), without "." and "..". */
  list(parent: number): Array<[string, Inode]> {
    this.dir(parent);
    this.journal.touchLoad(parent);
    const out: Array<[string, Inode]> = [];
    for (const [name, ino] of this.journal.children(parent)) {
      const i = this.journal.get(ino);
      if (i) out.push([name, i]);
    }
    out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return out;
  }

  // ---- changes -----------------------------------------------------------------------------------

  private touchDir(ino: number, now: bigint): void {
    this.journal.update(ino, { mtimeNs: now, ctimeNs: now });
    this.journal.markChanged(ino);
  }

  /** Creates a file, directory, symlink or special file; returns the new inode. */
  create(parent: number, name: string, n: NewNode): Inode {
    checkName(name);
    const p = this.dir(parent);
    if (this.journal.child(parent, name) !== undefined) throw fsErr(E.EEXIST);
    const now = nowNs();
    const node = this.journal.txn(() => {
      const ino = this.journal.createdIno(); // never one this mount had before: its upper file may linger
      const gid = p.mode & 0o2000 ? p.gid : n.gid;
      let mode = n.mode & 0o7777;
      if (n.kind === 'dir' && p.mode & 0o2000) mode |= 0o2000;
      const node: Inode = {
        ino, kind: n.kind, mode, uid: n.uid, gid, size: n.target ? Buffer.byteLength(n.target) : 0,
        atimeNs: now, mtimeNs: now, ctimeNs: now, nlink: n.kind === 'dir' ? 2 : 1, parents: [parent],
        ...(n.kind === 'file' ? { content: emptyContent() } : {}),
        ...(n.kind === 'dir' ? { loaded: true } : {}),
        ...(n.target !== undefined ? { target: n.target } : {}),
        ...(n.rdev ? { rdev: n.rdev } : {}),
      };
      this.journal.put(node);
      this.journal.setChild(parent, name, ino);
      if (n.kind === 'dir') this.journal.update(parent, { nlink: p.nlink + 1 });
      this.touchDir(parent, now);
      this.journal.markChanged(ino);
      return node;
    });
    this.onCreated(node.ino);
    return node;
  }

  /** Removes a name; `dir` selects rmdir semantics. Returns the inode (its nlink already decremented). */
  remove(parent: number, name: string, dir: boolean): Inode {
    this.dir(parent);
    const ino = this.journal.child(parent, name);
    if (ino === undefined) throw fsErr(E.ENOENT);
    const node = this.get(ino);
    if (dir) {
      if (node.kind !== 'dir') throw fsErr(E.ENOTDIR);
      if (this.ensureLoaded(ino)) throw new NeedsLoad(ino);
      if (this.journal.children(ino).size > 0) throw fsErr(E.ENOTEMPTY);
    } else if (node.kind === 'dir') {
      throw fsErr(E.EISDIR);
    }
    const now = nowNs();
    return this.journal.txn(() => {
      this.journal.removeChild(parent, name);
      this.touchDir(parent, now);
      const parents = [...node.parents];
      const at = parents.indexOf(parent);
      if (at >= 0) parents.splice(at, 1);
      const nlink = dir ? 0 : node.nlink - 1;
      if (dir) this.journal.update(parent, { nlink: Math.max(2, this.get(parent).nlink - 1) });
      const next = this.journal.update(ino, { nlink, parents, ctimeNs: now });
      if (nlink > 0) this.journal.markChanged(ino);
      else this.maybeReclaim(ino);
      return next;
    });
  }

  /**
   * rename(2) with RENAME_NOREPLACE / RENAME_EXCHANGE: atomic in one journal transaction; a replaced target
   * loses a link (and is kept while still open or looked up).
   */
  rename(parent: number, name: string, newParent: number, newName: string, flags: number): void {
    checkName(newName);
    this.dir(parent);
    this.dir(newParent);
    const ino = this.journal.child(parent, name);
    if (ino === undefined) throw fsErr(E.ENOENT);
    const node = this.get(ino);
    const targetIno = this.journal.child(newParent, newName);
    if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE) || (flags & RENAME_NOREPLACE && flags & RENAME_EXCHANGE)) throw fsErr(E.EINVAL);
    if (flags & RENAME_EXCHANGE && targetIno === undefined) throw fsErr(E.ENOENT);
    if (flags & RENAME_NOREPLACE && targetIno !== undefined) throw fsErr(E.EEXIST);
    if (targetIno === ino) return; // same inode (same name, or hard links of one file): POSIX says do nothing
    if (node.kind === 'dir' && this.isAncestor(ino, newParent)) throw fsErr(E.EINVAL);
    const target = targetIno === undefined ? undefined : this.get(targetIno);
    if (flags & RENAME_EXCHANGE && target && target.kind === 'dir' && this.isAncestor(target.ino, parent)) throw fsErr(E.EINVAL);
    if (target && !(flags & RENAME_EXCHANGE)) {
      if (node.kind === 'dir' && target.kind !== 'dir') throw fsErr(E.ENOTDIR);
      if (node.kind !== 'dir' && target.kind === 'dir') throw fsErr(E.EISDIR);
      if (target.kind === 'dir') {
        if (this.ensureLoaded(target.ino)) throw new NeedsLoad(target.ino);
        if (this.journal.children(target.ino).size > 0) throw fsErr(E.ENOTEMPTY);
      }
    }
    const now = nowNs();
    this.journal.txn(() => {
      if (flags & RENAME_EXCHANGE && target) {
        this.journal.setChild(parent, name, target.ino);
        this.journal.setChild(newParent, newName, ino);
        this.reparent(ino, parent, newParent, now);
        this.reparent(target.ino, newParent, parent, now);
      } else {
        if (target) this.remove(newParent, newName, target.kind === 'dir');
        this.journal.removeChild(parent, name);
        this.journal.setChild(newParent, newName, ino);
        this.reparent(ino, parent, newParent, now);
      }
      this.touchDir(parent, now);
      if (newParent !== parent) this.touchDir(newParent, now);
    });
    this.onNamed(ino, [newParent], false);
    if (flags & RENAME_EXCHANGE && target) this.onNamed(target.ino, [parent], false);
  }

  private reparent(ino: number, from: number, to: number, now: bigint): void {
    const node = this.get(ino);
    const parents = [...node.parents];
    const at = parents.indexOf(from);
    if (at >= 0) parents.splice(at, 1);
    parents.push(to);
    this.journal.update(ino, { parents, ctimeNs: now });
    if (node.kind === 'dir' && from !== to) {
      this.journal.update(from, { nlink: Math.max(2, this.get(from).nlink - 1) });
      this.journal.update(to, { nlink: this.get(to).nlink + 1 });
    }
    this.journal.markChanged(ino);
  }

  private isAncestor(maybeAncestor: number, ino: number): boolean {
    let cur: number | undefined = ino;
    for (let depth = 0; cur !== undefined && depth < 10_000; depth++) {
      if (cur === maybeAncestor) return true;
      const n = this.journal.get(cur);
      cur = n?.parents[0];
    }
    return false;
  }

  link(ino: number, newParent: number, newName: string): Inode {
    checkName(newName);
    this.dir(newParent);
    const node = this.get(ino);
    if (node.kind === 'dir') throw fsErr(E.EPERM);
    if (node.nlink === 0) throw fsErr(E.ENOENT);
    if (this.journal.child(newParent, newName) !== undefined) throw fsErr(E.EEXIST);
    const now = nowNs();
    const linked = this.journal.txn(() => {
      this.journal.setChild(newParent, newName, ino);
      const next = this.journal.update(ino, {
        nlink: node.nlink + 1, parents: [...node.parents, newParent], ctimeNs: now,
        linkId: node.linkId ?? 1 + Math.floor(Math.random() * 0xfffffffe),
      });
      this.touchDir(newParent, now);
      this.journal.markChanged(ino);
      return next;
    });
    this.onNamed(ino, [newParent, ...node.parents], true);
    return linked;
  }

  /**
   * chmod/chown/utimens (size changes go through the content layer). A chown's clearing of setuid/setgid
   * comes in `mode`: the kernel's rule needs the caller (fs/setid.ts).
   */
  setMeta(ino: number, set: { mode?: number; uid?: number; gid?: number; atimeNs?: bigint; mtimeNs?: bigint; ctimeNs?: bigint }): Inode {
    const node = this.get(ino);
    const now = nowNs();
    const patch: Partial<Inode> = { ctimeNs: set.ctimeNs ?? now };
    if (set.mode !== undefined) patch.mode = set.mode & 0o7777;
    if (set.uid !== undefined) patch.uid = set.uid;
    if (set.gid !== undefined) patch.gid = set.gid;
    if (set.atimeNs !== undefined) patch.atimeNs = set.atimeNs;
    if (set.mtimeNs !== undefined) patch.mtimeNs = set.mtimeNs;
    // An unlinked inode (the kernel writes its ctime back after every unlink): nothing to journal or seal.
    if (node.nlink === 0) return this.journal.updateInMemory(ino, patch);
    return this.journal.txn(() => {
      const next = this.journal.update(ino, patch);
      // atime-only changes are not worth a seal
      if (set.mode !== undefined || set.uid !== undefined || set.gid !== undefined || set.mtimeNs !== undefined) this.journal.markChanged(ino);
      return next;
    });
  }
}

/** Thrown when an operation needs a directory that is not loaded yet: await ensureLoaded and retry. */
export class NeedsLoad extends Error {
  constructor(readonly ino: number) {
    super(`directory ${ino} not loaded`);
  }
}

export function inodeFromEntry(ino: number, e: TreeEntry, parent: number): Inode {
  const mode = e.mode & 0o7777;
  // One object literal per kind, with every field the kind needs: a field added after the literal moves the
  // record's fields out of the object into a property array (about 40 bytes more per record; a home's
  // first `find` keeps one record per entry).
  let node: Inode;
  if (e.kind === 'file') {
    node = {
      ino, kind: e.kind, mode, uid: e.uid, gid: e.gid, size: e.size, atimeNs: e.mtimeNs, mtimeNs: e.mtimeNs, ctimeNs: e.ctimeNs,
      nlink: e.nlink ?? 1, parents: [parent], content: cleanContent(e.blocks ?? [], e.size),
    };
  } else if (e.kind === 'dir' && e.tree) {
    node = {
      ino, kind: e.kind, mode, uid: e.uid, gid: e.gid, size: e.size, atimeNs: e.mtimeNs, mtimeNs: e.mtimeNs, ctimeNs: e.ctimeNs,
      nlink: e.nlink ?? 2, parents: [parent], tree: e.tree, loaded: false,
    };
  } else if (e.kind === 'dir') {
    node = {
      ino, kind: e.kind, mode, uid: e.uid, gid: e.gid, size: e.size, atimeNs: e.mtimeNs, mtimeNs: e.mtimeNs, ctimeNs: e.ctimeNs,
      nlink: e.nlink ?? 2, parents: [parent], loaded: true,
    };
  } else {
    node = {
      ino, kind: e.kind, mode, uid: e.uid, gid: e.gid, size: e.size, atimeNs: e.mtimeNs, mtimeNs: e.mtimeNs, ctimeNs: e.ctimeNs,
      nlink: e.nlink ?? 1, parents: [parent],
    };
    if (e.target !== undefined) node.target = e.target;
    if (e.rdev) node.rdev = e.rdev;
  }
  if (e.xattrs && e.xattrs.length > 0) node.xattrs = e.xattrs;
  if (e.link !== undefined) node.linkId = e.link;
  return node;
}
