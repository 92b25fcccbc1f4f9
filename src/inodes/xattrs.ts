/**
 * Extended attributes of an inode: kept sorted by name in its journal record and sealed with it.
 * `system.*` names (POSIX ACLs) are refused: accepting them as plain values would make tools such as
 * `cp -a` believe the mode was set through the ACL and skip their chmod.
 */
import { E, fsErr, nowNs } from './errors.js';
import type { Journal } from './journal.js';
import type { Inode } from './types.js';

const MAX_NAME = 255;
const MAX_VALUE = 65536;
const MAX_COUNT = 1024;
const XATTR_CREATE = 1;
const XATTR_REPLACE = 2;

export class Xattrs {
  /** `node`: the inode's record (view.ts `get`: ENOENT when gone, NeedsLoad when it must come back first). */
  constructor(private readonly journal: Journal, private readonly node: (ino: number) => Inode = (ino) => {
    const n = journal.get(ino);
    if (!n) throw fsErr(E.ENOENT);
    return n;
  }) {}

  get(ino: number, name: string): Buffer | undefined {
    return this.node(ino).xattrs?.find(([n]) => n === name)?.[1];
  }

  list(ino: number): string[] {
    return (this.node(ino).xattrs ?? []).map(([n]) => n);
  }

  set(ino: number, name: string, value: Buffer, flags: number): void {
    const node = this.node(ino);
    if (Buffer.byteLength(name) > MAX_NAME || name.length === 0) throw fsErr(E.ERANGE);
    if (name.startsWith('system.')) throw fsErr(E.EOPNOTSUPP);
    if (value.length > MAX_VALUE) throw fsErr(E.E2BIG);
    const list = [...(node.xattrs ?? [])];
    const at = list.findIndex(([n]) => n === name);
    if (flags & XATTR_CREATE && at >= 0) throw fsErr(E.EEXIST);
    if (flags & XATTR_REPLACE && at < 0) throw fsErr(E.ENODATA);
    if (at < 0 && list.length >= MAX_COUNT) throw fsErr(E.ENOSPC);
    const copy = Buffer.from(value);
    if (at >= 0) list[at] = [name, copy];
    else list.push([name, copy]);
    list.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    this.save(ino, list);
  }

  remove(ino: number, name: string): void {
    const node = this.node(ino);
    const list = (node.xattrs ?? []).filter(([n]) => n !== name);
    if (list.length === (node.xattrs ?? []).length) throw fsErr(E.ENODATA);
    this.save(ino, list);
  }

  private save(ino: number, list: Array<[string, Buffer]>): void {
    this.journal.txn(() => {
      this.journal.update(ino, { xattrs: list, ctimeNs: nowNs() });
      this.journal.markChanged(ino);
    });
  }
}
