/**
 * File content of a mounted home: reads served from the upper file or from sealed blocks (through the
 * block cache), writes and truncates that copy up only what they touch (a small file whole, a large
 * file's 4 MiB blocks one by one) and record which blocks are dirty, so the seal hashes only those.
 *
 * All changes to one inode's content are serialized (copy-up must never race a write into the same block).
 */
import { BLOCK_SIZE, SINGLE_BLOCK_MAX, blockStride } from '../hash/blake3.js';
import { E, fsErr, nowNs } from './errors.js';
import type { Journal } from './journal.js';
import type { Inode } from './types.js';
import type { UpperFiles } from './upper.js';
import { MAX_FILE_BYTES } from '../config.js';

/** Journal meta key of the home's file byte count. */
const USED_BYTES = 'usedBytes';

export interface BlockReader {
  /** A verified range of a block (clamped by the caller to the block's length). */
  read(hash: string, offset: number, length: number): Promise<Buffer>;
  get(hash: string): Promise<Buffer>;
  /** Hint: these blocks will probably be read soon. */
  prefetch(hashes: string[]): void;
  /** The block's length when known locally (after any read of it), for checking it against its file. */
  size(hash: string): number | undefined;
}

export interface ContentOptions {
  /** Blocks to prefetch ahead of a sequential reader of a large file. */
  readaheadBlocks: number;
  /** Refuse to grow the home past this many bytes (ENOSPC); 0 = unlimited. */
  quotaBytes: number;
  /**
   * Under the writeback cache the kernel keeps mtime/ctime of written files itself and sends them in a
   * setattr when it writes the inode back (close, fsync, syncfs): content changes then leave times alone.
   */
  kernelOwnsTimes?: boolean;
}

function addIndices(cur: 'all' | number[] | undefined, from: number, to: number): 'all' | number[] {
  if (cur === 'all') return 'all';
  const s = new Set(cur ?? []);
  for (let i = from; i < to; i++) s.add(i);
  return [...s].sort((a, b) => a - b);
}

function has(set: 'all' | number[] | undefined, i: number): boolean {
  return set === 'all' || (set !== undefined && set.includes(i));
}

export class Content {
  private readonly locks = new Map<number, Promise<unknown>>();
  private readonly lastRead = new Map<number, number>();
  usedBytes = 0;

  constructor(
    private readonly journal: Journal,
    private readonly upper: UpperFiles,
    private readonly blocks: BlockReader,
    private readonly opts: ContentOptions,
  ) {}

  /** Runs fn after every earlier content change of this inode. */
  private serialize<T>(ino: number, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(ino) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.locks.set(ino, tail);
    void tail.then(() => {
      if (this.locks.get(ino) === tail) this.locks.delete(ino);
    });
    return next;
  }

  async read(ino: number, offset: number, length: number): Promise<Buffer> {
    const node = this.journal.get(ino);
    if (!node) throw fsErr(E.ENOENT);
    if (offset >= node.size || length <= 0) return Buffer.alloc(0);
    const end = Math.min(node.size, offset + length);
    if (node.local === 'all') return this.upper.read(ino, offset, end - offset);
    const sealed = node.sealedSize ?? 0;
    const stride = blockStride(sealed);
    const parts: Buffer[] = [];
    for (let pos = offset; pos < end; ) {
      const idx = Math.floor(pos / stride);
      const blockEnd = Math.min((idx + 1) * stride, end);
      const len = blockEnd - pos;
      if (has(node.local, idx) || pos >= sealed) {
        parts.push(await this.upper.read(ino, pos, len));
      } else {
        const hash = node.blocks?.[idx];
        if (!hash) throw fsErr(E.EIO, `inode ${ino} has no block ${idx}`);
        const avail = Math.min(len, sealed - pos);
        const got = await this.blocks.read(hash, pos - idx * stride, avail);
        // A block shorter than the tree says is a lying (corrupt or hostile) tree: never serve made-up bytes.
        const want = Math.min(stride, sealed - idx * stride);
        const have = this.blocks.size(hash);
        if (got.length < avail || (have !== undefined && have !== want)) throw fsErr(E.EIO, `block ${hash} of inode ${ino} has ${have ?? got.length} bytes, its file says ${want}`);
        parts.push(got.length < len ? Buffer.concat([got, Buffer.alloc(len - got.length)]) : got);
      }
      pos = blockEnd;
    }
    this.readahead(node, offset, end, stride);
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** Sequential reads of a large sealed file prefetch the next blocks. */
  private readahead(node: Inode, offset: number, end: number, stride: number): void {
    const prev = this.lastRead.get(node.ino);
    this.lastRead.set(node.ino, end);
    if (this.lastRead.size > 4096) this.lastRead.clear();
    if (stride !== BLOCK_SIZE || prev === undefined || Math.abs(prev - offset) > 256 * 1024) return;
    const first = Math.floor(end / stride) + 1;
    const want: string[] = [];
    for (let i = first; i < first + this.opts.readaheadBlocks && i < (node.blocks?.length ?? 0); i++) {
      if (!has(node.local, i)) want.push(node.blocks?.[i] as string);
    }
    if (want.length > 0) this.blocks.prefetch(want);
  }

  /** Copies the blocks covering [start, end) into the upper file, so they can be changed locally. */
  private async makeLocal(node: Inode, start: number, end: number): Promise<Inode> {
    if (node.local === 'all') return node;
    const sealed = node.sealedSize ?? 0;
    const blocks = node.blocks ?? [];
    if (sealed <= SINGLE_BLOCK_MAX) {
      const data = blocks[0] ? await this.blocks.get(blocks[0]) : Buffer.alloc(0);
      if (data.length !== sealed) throw fsErr(E.EIO, `block ${blocks[0] ?? '-'} of inode ${node.ino} has ${data.length} bytes, its file says ${sealed}`);
      await this.upper.truncate(node.ino, 0);
      if (data.length > 0) await this.upper.write(node.ino, 0, data);
      await this.upper.truncate(node.ino, node.size);
      return this.journal.update(node.ino, { local: 'all' });
    }
    let local = node.local;
    if (local === undefined) {
      await this.upper.truncate(node.ino, node.size);
      local = [];
    }
    const set = new Set(local);
    const first = Math.floor(start / BLOCK_SIZE);
    const last = Math.min(blocks.length, Math.ceil(end / BLOCK_SIZE));
    for (let i = first; i < last; i++) {
      if (set.has(i)) continue;
      const hash = blocks[i] as string;
      const data = await this.blocks.get(hash);
      const want = Math.min(BLOCK_SIZE, sealed - i * BLOCK_SIZE);
      if (data.length !== want) throw fsErr(E.EIO, `block ${hash} of inode ${node.ino} has ${data.length} bytes, its file says ${want}`);
      await this.upper.write(node.ino, i * BLOCK_SIZE, data);
      set.add(i);
    }
    const list = [...set].sort((a, b) => a - b);
    const all = list.length >= blocks.length;
    return this.journal.update(node.ino, { local: all ? 'all' : list });
  }

  private checkQuota(grow: number): void {
    if (this.opts.quotaBytes > 0 && grow > 0 && this.usedBytes + grow > this.opts.quotaBytes) throw fsErr(E.ENOSPC);
  }

  /** The dirty block indices after changing bytes [from, to) of a file that will be `size` long. */
  private dirtyAfter(node: Inode, from: number, to: number, size: number): 'all' | number[] {
    if (size <= SINGLE_BLOCK_MAX || (node.sealedSize ?? 0) <= SINGLE_BLOCK_MAX) return 'all';
    return addIndices(node.dirty, Math.floor(from / BLOCK_SIZE), Math.ceil(to / BLOCK_SIZE));
  }

  /**
   * The times a content change stamps: taken when the request arrives, and dropped if the times were set
   * meanwhile (under the writeback cache the kernel sends its own mtime in a setattr that can overtake
   * the write it belongs to; the later, explicit value wins).
   */
  private stamp(ino: number): (cur: Inode) => { mtimeNs: bigint; ctimeNs: bigint } {
    if (this.opts.kernelOwnsTimes) return (cur) => ({ mtimeNs: cur.mtimeNs, ctimeNs: cur.ctimeNs });
    const now = nowNs();
    const before = this.journal.get(ino)?.mtimeNs;
    return (cur) => (cur.mtimeNs === before ? { mtimeNs: now, ctimeNs: now } : { mtimeNs: cur.mtimeNs, ctimeNs: cur.ctimeNs });
  }

  write(ino: number, offset: number, data: Buffer): Promise<number> {
    const times = this.stamp(ino);
    return this.serialize(ino, async () => {
      let node = this.journal.get(ino);
      if (!node) throw fsErr(E.ENOENT);
      const end = offset + data.length;
      if (end > MAX_FILE_BYTES) throw fsErr(E.EFBIG);
      this.checkQuota(end - node.size);
      // Bytes between the old end and `offset` become a hole; the old last block changes too.
      node = await this.makeLocal(node, Math.min(offset, node.size > 0 ? node.size - 1 : 0), Math.min(end, node.sealedSize ?? 0));
      await this.upper.write(ino, offset, data);
      const size = Math.max(node.size, end);
      const dirty = this.dirtyAfter(node, Math.min(offset, node.size), end, size);
      const local = node.local === 'all' ? 'all' : addIndices(node.local, Math.floor(Math.min(offset, node.size) / BLOCK_SIZE), Math.ceil(end / BLOCK_SIZE));
      const grown = size - node.size;
      this.journal.txn(() => {
        this.account(grown);
        this.journal.update(ino, { size, ...times(this.journal.get(ino) ?? node), dirty, local });
        this.journal.markDirty(ino);
      });
      return data.length;
    });
  }

  truncate(ino: number, size: number): Promise<Inode> {
    const times = this.stamp(ino);
    return this.serialize(ino, async () => {
      let node = this.journal.get(ino);
      if (!node) throw fsErr(E.ENOENT);
      if (node.kind !== 'file') throw fsErr(node.kind === 'dir' ? E.EISDIR : E.EINVAL);
      const old = node.size;
      if (size > MAX_FILE_BYTES) throw fsErr(E.EFBIG);
      if (size === old) return this.journal.update(ino, times(node));
      this.checkQuota(size - old);
      const low = Math.min(old, size);
      if (size <= SINGLE_BLOCK_MAX) node = await this.makeLocal(node, 0, node.sealedSize ?? 0);
      else if (low > 0) node = await this.makeLocal(node, low - 1, low);
      await this.upper.truncate(ino, size);
      const dirty = this.dirtyAfter(node, Math.max(0, low - 1), Math.max(old, size), size);
      const local = node.local === 'all' ? 'all' : addIndices(node.local, Math.floor(low / BLOCK_SIZE), Math.ceil(Math.max(old, size) / BLOCK_SIZE));
      const next = this.journal.txn(() => {
        this.account(size - old);
        const n = this.journal.update(ino, { size, ...times(this.journal.get(ino) ?? node), dirty, local });
        this.journal.markDirty(ino);
        return n;
      });
      return next;
    });
  }

  /** fallocate mode 0 (allocate, extend size) — content stays the same, zeros appear past the end. */
  async allocate(ino: number, offset: number, length: number): Promise<void> {
    const node = this.journal.get(ino);
    if (!node) throw fsErr(E.ENOENT);
    if (offset + length > node.size) await this.truncate(ino, offset + length);
  }

  /** Makes the upper data of this inode durable (fdatasync). */
  async sync(ino: number): Promise<void> {
    await this.serialize(ino, async () => {
      const node = this.journal.get(ino);
      if (node?.local !== undefined) await this.upper.sync(ino);
    });
  }

  /** Runs fn with this inode's content held still (the seal captures each file at one instant). */
  withLock<T>(ino: number, fn: () => Promise<T>): Promise<T> {
    return this.serialize(ino, fn);
  }

  /** Waits for queued content changes of this inode. */
  async settle(ino: number): Promise<void> {
    await this.serialize(ino, async () => undefined);
  }

  /**
   * The home's file bytes (what a quota limits and df shows as used), kept in the journal in the same
   * transaction as each size change, so a remount after kill -9 counts unsealed bytes too.
   */
  private account(delta: number): void {
    this.usedBytes += delta;
    this.journal.setMeta(USED_BYTES, this.usedBytes);
  }

  /** A file inode was reclaimed (last link gone, last handle closed): its bytes no longer count. Call inside its txn. */
  released(node: Inode): void {
    this.lastRead.delete(node.ino);
    if (node.kind === 'file' && node.size > 0) this.account(-node.size);
  }

  /** The count a remount starts from: the journal's, else the base snapshot's exact byte count. */
  static seedUsedBytes(journal: Journal): number {
    return journal.getMeta<number>(USED_BYTES) ?? journal.getMeta<{ bytes: number }>('stats')?.bytes ?? 0;
  }
}
