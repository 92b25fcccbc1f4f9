/**
 * File content of a mounted home: reads served from the upper file or from sealed blocks (through the
 * block cache), writes and truncates that copy up only what they touch (a small file whole, a large
 * file's 4 MiB blocks one by one) and record which blocks are dirty, so the seal hashes only those.
 *
 * This class is the single place where a file's stored bytes change: write, truncate, the seal's capture
 * (`sealFile`, `restoreBlock`) and the release of an unlinked file (`reclaim`). Each moves the file along
 * its state machine (filestate.ts) and journals the new state; `usedBytes` (the quota's count) is kept
 * here, in the same journal transaction as each size change.
 *
 * A new file that stays small (≤ INLINE_MAX) holds its bytes in its journal record instead of an upper
 * file (filestate.ts, `inline`): creating, writing and deleting it then cost no file-system calls, and its
 * bytes are as durable as the record (committed before the reply). It spills into an upper file when it
 * grows past the limit, when the inline bytes of the mount pass INLINE_TOTAL_MAX (memory), or at the seal.
 *
 * Changes to one inode's content are ordered by `RangeLocks` (rangelock.ts): a write into a file that is
 * wholly in its upper file holds only the bytes it writes, so non-overlapping writes run their pwrite at
 * the same time; everything that changes the file's state (copy-up, spill, truncate, the seal's capture)
 * holds the whole file (copy-up must never race a write into the same block).
 *
 * A whole 4 MiB block of a dirty file may be hashed before the seal (`hashEarly`, for the seal/preseal.ts
 * of a large file being written): the seal's capture then takes that hash instead of reading the block
 * again, unless a change touched the block since (every change drops the early hashes of what it touches).
 */
import { BLOCK_SIZE, SINGLE_BLOCK_MAX, blockStride } from '../hash/blake3.js';
import { E, fsErr, nowNs } from './errors.js';
import {
  allLocal, canInline, changed, cleanContent, copiedUp, emptyContent, hasUpper, inlined, isLocal, isUnsealed, localBlocks, sealPlan,
  sealed as sealedState, spilled, stagedAs, type FileContent, type InlineContent, type SealBlock, type SealedBlocks,
  type StoredBlocks,
} from './filestate.js';
import type { Journal } from './journal.js';
import type { Inode } from './types.js';
import { timeNs, type UpperFiles, type UpperStat } from './upper.js';
import { MAX_FILE_BYTES } from '../config.js';
import type { NeighbourPrefetch } from './neighbours.js';
import { RangeLocks } from './rangelock.js';
import { LiveFiles, same, type Fingerprint } from './livefiles.js';

/** Blocks of one file in flight at once during a seal's capture (each up to 4 MiB in memory). */
const SEAL_WINDOW = 4;

/** A new file up to this size holds its bytes in its journal record (measured: docs/decisions/0041-inline-small-files.md). */
export const INLINE_MAX = 8 * 1024;
/** Inline bytes this process holds at most (in memory, in the journal's records); past it, files spill. */
const INLINE_TOTAL_MAX = 64 * 1024 * 1024;

/** Journal meta key of the home's file byte count. */
const USED_BYTES = 'usedBytes';

export interface BlockReader {
  /** A verified range of a block (clamped by the caller to the block's length). */
  read(hash: string, offset: number, length: number): Promise<Buffer>;
  get(hash: string): Promise<Buffer>;
  /**
   * The whole verified block when it is at hand without a wait (in memory, or in the kernel's caches);
   * `size`: the length it should have (a store's file of another length is not read).
   */
  readAtOnce?(hash: string, size: number): Buffer | undefined;
  /** Hint: these blocks will probably be read soon. */
  prefetch(hashes: string[]): void;
  /** The block's length when known locally (after any read of it), for checking it against its file. */
  size(hash: string): number | undefined;
  /** Cached, being fetched or queued: a read of it is not a cold read (default: `size` is known). */
  known?(hash: string): boolean;
  /** Keep these blocks cached (counted) until as many `unpin`s: the blocks of an open file. */
  pin?(hashes: readonly string[]): void;
  unpin?(hashes: readonly string[]): void;
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
  /** Prefetches a directory's small files when one of them is read cold (neighbours.ts; home.ts adds others). */
  neighbours?: Pick<NeighbourPrefetch, 'wants' | 'coldRead'>;
}

/** Early hashes of one file's whole blocks (by index), and how many changes dropped one since its last seal. */
interface EarlyHashes {
  hashes: Map<number, string>;
  drops: number;
}
/** A file whose early hashes were dropped this often (it is rewritten in place) gets none until its next seal. */
const EARLY_DROPS_MAX = 4;

export class Content {
  private readonly locks = new RangeLocks();
  private readonly early = new Map<number, EarlyHashes>();
  /** Called after each write has landed (the presealer watches large sequential writers). */
  onWritten: ((ino: number, offset: number, end: number, size: number) => void) | undefined;
  /** Called after every change of a file's bytes or size (write-behind queues the file). */
  onChanged: ((ino: number) => void) | undefined;
  private readonly lastRead = new Map<number, number>();
  /** Bytes held inline by files this process made inline (an estimate: files inlined before a restart are not counted). */
  private inlineBytes = 0;
  usedBytes = 0;
  /** Files open for writing through FUSE passthrough: the kernel changes their upper files (livefiles.ts). */
  readonly live: LiveFiles;
  /** Live files written past MAX_FILE_BYTES since their last fsync (it fails with EFBIG). */
  private readonly oversize = new Set<number>();

  constructor(
    private readonly journal: Journal,
    private readonly upper: UpperFiles,
    private readonly blocks: BlockReader,
    private readonly opts: ContentOptions,
  ) {
    this.live = new LiveFiles(journal, upper);
  }

  /** Whether the kernel keeps mtime/ctime of written files (the writeback cache): settled at FUSE INIT. */
  set kernelOwnsTimes(v: boolean) {
    this.opts.kernelOwnsTimes = v;
  }

  /**
   * A passthrough writer opens file `ino`: its whole content is made local (an inline file spills, a small
   * sealed one is copied up; a `fresh` one, just created, gets its upper file at once) and it is dirty and
   * live until its last writer closes (livefiles.ts).
   */
  openLive(ino: number, fresh = false): Promise<void> {
    return this.serialize(ino, async () => {
      let node = this.journal.get(ino);
      if (!node) throw fsErr(E.ENOENT);
      if (this.live.has(ino)) {
        this.live.add(ino);
        return;
      }
      const c0 = contentOf(node);
      if (fresh && node.size === 0 && c0.state === 'clean' && c0.sealed.size === 0 && this.upper.createNow(ino)) {
        node = this.journal.update(ino, { content: copiedUp(c0, 'all') });
      }
      node = await this.spill(node);
      node = await this.makeLocal(node, 0, contentOf(node).sealed.size);
      const cur = node;
      this.early.delete(ino);
      this.journal.txn(() => {
        this.journal.update(ino, { content: changed(contentOf(cur), 0, cur.size, cur.size) });
        this.journal.markChanged(ino);
        this.live.add(ino);
      });
      this.live.mark(ino);
    });
  }

  /**
   * A passthrough writer of `ino` closed (its release took in what the kernel wrote: `refresh`). At the
   * last one, a file a seal captured while live and unchanged since is recorded sealed with what that seal
   * stored; otherwise it stays dirty, for the next seal, and write-behind may take it now.
   */
  closeLive(ino: number): Promise<void> {
    return this.serialize(ino, async () => {
      if (!this.live.has(ino)) return;
      const node = this.journal.get(ino);
      const sealed = this.live.sealedUnchanged(ino);
      if (!this.live.remove(ino) || !node) return;
      if (sealed && node.content === sealed.content) {
        this.journal.update(ino, { content: sealedState(contentOf(node), sealed.blocks, sealed.size) });
        return;
      }
      if (node.content && isUnsealed(node.content)) this.onChanged?.(ino);
    });
  }

  /** Takes in what the kernel wrote to live file `ino` since last looked at: size, times (synchronous). */
  refresh(ino: number): void {
    if (!this.live.has(ino)) return;
    const ch = this.live.changedSince(ino);
    const node = ch && this.journal.get(ino);
    if (!ch || !node) return;
    this.takeIn(node, ch.st, ch.mtimeChanged);
  }

  /** `refresh` of every live file (before a seal or log segment, and on the protection tick). */
  refreshAll(): void {
    for (const ino of this.live.inodes()) this.refresh(ino);
  }

  /**
   * The upper file's size (and its times, `withMtime`) become the record's; the file is dirty (all of it)
   * and changed. A file the kernel grew past the largest a home holds is cut back to its last size, and
   * its next fsync fails with EFBIG, as such a write does on the writeback path.
   */
  private takeIn(node: Inode, st: UpperStat, withMtime: boolean): void {
    let size = st.size;
    if (size > MAX_FILE_BYTES) {
      this.upper.truncateNow(node.ino, node.size);
      this.oversize.add(node.ino);
      size = node.size;
    }
    this.early.delete(node.ino);
    this.journal.txn(() => {
      this.account(size - node.size);
      const upperCtimeNs = timeNs(st.ctimeS, st.ctimeNsec);
      const ctimeNs = upperCtimeNs > node.ctimeNs ? upperCtimeNs : node.ctimeNs;
      const mtimeNs = withMtime ? timeNs(st.mtimeS, st.mtimeNsec) : node.mtimeNs;
      this.journal.update(node.ino, { size, mtimeNs, ctimeNs, content: changed(contentOf(node), 0, size, size) });
      this.journal.markChanged(node.ino);
    });
  }

  /**
   * At mount: files a killed daemon left live (open through passthrough) take their size and times from
   * their upper files, which hold whatever the kernel wrote before the kill.
   */
  recoverLive(): number {
    const left = this.live.leftOver();
    let n = 0;
    this.journal.txn(() => {
      for (const ino of left) {
        const node = this.journal.get(ino);
        const st = node?.kind === 'file' && node.content && hasUpper(node.content) ? this.upper.statNow(ino) : undefined;
        if (node && st) {
          this.takeIn(node, st, timeNs(st.mtimeS, st.mtimeNsec) > node.mtimeNs);
          n++;
        }
      }
      this.live.clearLeftOver();
    });
    return n;
  }

  /** Runs fn after every earlier content change of this inode, before every later one. */
  private serialize<T>(ino: number, fn: () => Promise<T>): Promise<T> {
    return this.locks.whole(ino, fn);
  }

  /**
   * The whole of file `ino` when it has at most `max` bytes and they are at hand without a wait: inline, or
   * one sealed block the block reader has now (in memory, or in the kernel's caches). Otherwise undefined.
   * Not for a live file (the kernel writes it unseen) or one changed since its seal.
   */
  readAtOnce(ino: number, max: number): Buffer | undefined {
    if (this.live.has(ino)) return undefined;
    const node = this.journal.get(ino);
    if (!node || node.kind !== 'file' || node.size === 0 || node.size > max) return undefined;
    const c = contentOf(node);
    if (c.state === 'inline') return c.data.length === node.size ? Buffer.from(c.data.buffer, c.data.byteOffset, node.size) : undefined;
    if ((c.state !== 'clean' && c.state !== 'copied') || c.sealed.size !== node.size || c.sealed.blocks.length !== 1) return undefined;
    // A block whose length is not the file's is never served (a lying tree): `read` refuses it with EIO.
    const got = this.blocks.readAtOnce?.(c.sealed.blocks[0] as string, node.size);
    return got?.length === node.size ? got : undefined;
  }

  async read(ino: number, offset: number, length: number): Promise<Buffer> {
    this.refresh(ino);
    const node = this.journal.get(ino);
    if (!node) throw fsErr(E.ENOENT);
    if (offset >= node.size || length <= 0) return Buffer.alloc(0);
    const c = contentOf(node);
    const end = Math.min(node.size, offset + length);
    if (c.state === 'inline') return Buffer.from(c.data.buffer, c.data.byteOffset + offset, end - offset);
    if (allLocal(c)) return this.upper.read(ino, offset, end - offset);
    const sealed = c.sealed.size;
    const stride = blockStride(sealed);
    const parts: Buffer[] = [];
    for (let pos = offset; pos < end; ) {
      const idx = Math.floor(pos / stride);
      const blockEnd = Math.min((idx + 1) * stride, end);
      const len = blockEnd - pos;
      if (pos >= sealed) {
        // Past the sealed bytes everything is in the upper file: read it to the end at once. (Stepping by the
        // stride here made a file sealed empty, then truncated past 8 MiB, read one byte per upper read.)
        parts.push(await this.upper.read(ino, pos, end - pos));
        break;
      }
      if (isLocal(c, idx)) {
        parts.push(await this.upper.read(ino, pos, len));
      } else {
        const hash = c.sealed.blocks[idx];
        if (!hash) throw fsErr(E.EIO, `inode ${ino} has no block ${idx}`);
        const avail = Math.min(len, sealed - pos);
        const nb = this.opts.neighbours;
        if (idx === 0 && nb?.wants(sealed) && !(this.blocks.known?.(hash) ?? this.blocks.size(hash) !== undefined)) nb.coldRead(ino);
        const got = await this.blocks.read(hash, pos - idx * stride, avail);
        // A block shorter than the tree says is a lying (corrupt or hostile) tree: never serve made-up bytes.
        const want = Math.min(stride, sealed - idx * stride);
        const have = this.blocks.size(hash);
        if (got.length < avail || (have !== undefined && have !== want)) throw fsErr(E.EIO, `block ${hash} of inode ${ino} has ${have ?? got.length} bytes, its file says ${want}`);
        parts.push(got.length < len ? Buffer.concat([got, Buffer.alloc(len - got.length)]) : got);
      }
      pos = blockEnd;
    }
    this.readahead(ino, c, offset, end, stride);
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /** Keeps the sealed blocks of file `ino` in the block cache while it is open; returns the release. */
  holdBlocks(ino: number): () => void {
    const c = this.journal.get(ino)?.content;
    const blocks = this.blocks;
    if (!c || c.sealed.blocks.length === 0 || !blocks.pin) return () => undefined;
    const hashes = [...c.sealed.blocks];
    blocks.pin(hashes);
    let held = true;
    return () => {
      if (held) blocks.unpin?.(hashes);
      held = false;
    };
  }

  /** Sequential reads of a large sealed file prefetch the next blocks. */
  private readahead(ino: number, c: FileContent, offset: number, end: number, stride: number): void {
    const prev = this.lastRead.get(ino);
    this.lastRead.set(ino, end);
    if (this.lastRead.size > 4096) this.lastRead.clear();
    if (stride !== BLOCK_SIZE || prev === undefined || Math.abs(prev - offset) > 256 * 1024) return;
    const first = Math.floor(end / stride) + 1;
    const want: string[] = [];
    const blocks = c.sealed.blocks;
    for (let i = first; i < first + this.opts.readaheadBlocks && i < blocks.length; i++) {
      if (!isLocal(c, i)) want.push(blocks[i] as string);
    }
    if (want.length > 0) this.blocks.prefetch(want);
  }

  /** Copies the blocks covering [start, end) into the upper file, so they can be changed locally. */
  private async makeLocal(node: Inode, start: number, end: number): Promise<Inode> {
    const c = contentOf(node);
    if (allLocal(c)) return node;
    const sealed = c.sealed.size;
    const blocks = c.sealed.blocks;
    if (sealed === 0) {
      // A new (or emptied) file: nothing to copy; the upper file starts empty, then takes the size.
      await this.upper.reset(node.ino);
      if (node.size > 0) await this.upper.truncate(node.ino, node.size);
      return this.journal.update(node.ino, { content: copiedUp(c, 'all') });
    }
    if (sealed <= SINGLE_BLOCK_MAX) {
      const data = blocks[0] ? await this.blocks.get(blocks[0]) : Buffer.alloc(0);
      if (data.length !== sealed) throw fsErr(E.EIO, `block ${blocks[0] ?? '-'} of inode ${node.ino} has ${data.length} bytes, its file says ${sealed}`);
      await this.upper.truncate(node.ino, 0);
      if (data.length > 0) await this.upper.write(node.ino, 0, data);
      await this.upper.truncate(node.ino, node.size);
      return this.journal.update(node.ino, { content: copiedUp(c, 'all') });
    }
    if (!hasUpper(c)) await this.upper.truncate(node.ino, node.size);
    const added: number[] = [];
    const last = Math.min(blocks.length, Math.ceil(end / BLOCK_SIZE));
    for (let i = Math.floor(start / BLOCK_SIZE); i < last; i++) {
      if (isLocal(c, i)) continue;
      const hash = blocks[i] as string;
      const data = await this.blocks.get(hash);
      const want = Math.min(BLOCK_SIZE, sealed - i * BLOCK_SIZE);
      if (data.length !== want) throw fsErr(E.EIO, `block ${hash} of inode ${node.ino} has ${data.length} bytes, its file says ${want}`);
      await this.upper.write(node.ino, i * BLOCK_SIZE, data);
      added.push(i);
    }
    const before = localBlocks(c);
    const all = before !== 'all' && new Set([...before, ...added]).size >= blocks.length;
    return this.journal.update(node.ino, { content: copiedUp(c, all ? 'all' : added) });
  }

  private checkQuota(grow: number): void {
    if (this.opts.quotaBytes > 0 && grow > 0 && this.usedBytes + grow > this.opts.quotaBytes) throw fsErr(E.ENOSPC);
  }

  /**
   * The times a content change stamps: taken when the request arrives, and dropped if the times were set
   * meanwhile (under the writeback cache the kernel sends its own mtime in a setattr that can overtake
   * the write it belongs to; the later, explicit value wins).
   */
  private stamp(ino: number): Stamp {
    if (this.opts.kernelOwnsTimes) return (cur) => ({ mtimeNs: cur.mtimeNs, ctimeNs: cur.ctimeNs });
    const now = nowNs();
    const before = this.journal.get(ino)?.mtimeNs;
    return (cur) => (cur.mtimeNs === before ? { mtimeNs: now, ctimeNs: now } : { mtimeNs: cur.mtimeNs, ctimeNs: cur.ctimeNs });
  }

  /**
   * Writes `data` at `offset`. A file wholly in its upper file (it stays so: no change takes blocks out of
   * it) is written holding only the bytes written; any other holds the whole file while it changes state.
   */
  write(ino: number, offset: number, data: Buffer): Promise<number> {
    this.refresh(ino);
    const times = this.stamp(ino);
    const c = this.journal.get(ino)?.content;
    if (!c || !allLocal(c)) return this.writeChanging(ino, offset, data, times);
    return this.locks.run(ino, offset, offset + data.length, () => this.writeLocal(ino, offset, data, times)).then(
      (n) => n ?? this.writeChanging(ino, offset, data, times));
  }

  /**
   * A write into a file wholly in its upper file, beside other writes of other bytes: the size, times and
   * dirty blocks are computed from the record as it is when the write lands. Undefined if the file is no
   * longer wholly local (never expected; the caller then writes it holding the whole file).
   */
  private async writeLocal(ino: number, offset: number, data: Buffer, times: Stamp): Promise<number | undefined> {
    const node = this.journal.get(ino);
    if (!node) throw fsErr(E.ENOENT);
    if (!allLocal(contentOf(node))) return undefined;
    const end = offset + data.length;
    if (end > MAX_FILE_BYTES) throw fsErr(E.EFBIG);
    // Writes beside this one only grow the file: checking against the size now never lets the home past the quota.
    this.checkQuota(end - node.size);
    this.touch(ino, offset, end);
    await this.upper.write(ino, offset, data);
    const size = this.journal.txn(() => {
      const cur = this.journal.get(ino) ?? node;
      const grown = Math.max(cur.size, end);
      this.account(grown - cur.size);
      this.journal.update(ino, { size: grown, ...times(cur), content: changed(contentOf(cur), Math.min(offset, cur.size), end, grown) });
      this.journal.markChanged(ino);
      this.onChanged?.(ino);
      return grown;
    });
    this.onWritten?.(ino, offset, end, size);
    return data.length;
  }

  /** A write that may change the file's state (inline, spill, copy-up): holding the whole file. */
  private writeChanging(ino: number, offset: number, data: Buffer, times: Stamp): Promise<number> {
    return this.serialize(ino, async () => {
      let node = this.journal.get(ino);
      if (!node) throw fsErr(E.ENOENT);
      const end = offset + data.length;
      if (end > MAX_FILE_BYTES) throw fsErr(E.EFBIG);
      this.checkQuota(end - node.size);
      const size0 = Math.max(node.size, end);
      if (this.keepsInline(node, size0)) {
        const bytes = resized(node, size0);
        bytes.set(data, offset);
        this.setInline(node, bytes, times);
        return data.length;
      }
      node = await this.spill(node);
      // Bytes between the old end and `offset` become a hole; the old last block changes too.
      node = await this.makeLocal(node, Math.min(offset, node.size > 0 ? node.size - 1 : 0), Math.min(end, contentOf(node).sealed.size));
      this.touch(ino, Math.min(offset, node.size), end);
      await this.upper.write(ino, offset, data);
      const size = Math.max(node.size, end);
      const content = changed(contentOf(node), Math.min(offset, node.size), end, size);
      const grown = size - node.size;
      this.journal.txn(() => {
        this.account(grown);
        this.journal.update(ino, { size, ...times(this.journal.get(ino) ?? node), content });
        this.journal.markChanged(ino);
        this.onChanged?.(ino);
      });
      this.onWritten?.(ino, offset, end, size);
      return data.length;
    });
  }

  /** Drops the early hashes of the blocks bytes [from, to) of file `ino` are in. */
  private touch(ino: number, from: number, to: number): void {
    const e = this.early.get(ino);
    if (!e || e.hashes.size === 0) return;
    for (let i = Math.floor(from / BLOCK_SIZE); i * BLOCK_SIZE < to; i++) if (e.hashes.delete(i)) e.drops++;
  }

  /**
   * Hashes whole block `index` of dirty file `ino` ahead of its seal, holding the block so that no write
   * changes it meanwhile, and keeps the hash for the seal's capture. Resolves to the hash and the bytes
   * (for an early upload), or undefined when there is nothing to hash: the block is not whole, not dirty,
   * already hashed, or changes dropped early hashes of this file often since its last seal. The block is
   * read into `into` when given (the returned bytes may be another Buffer over its memory: the hash may
   * have moved it to a worker and back).
   */
  hashEarly(ino: number, index: number, hash: (data: Buffer) => Promise<{ hash: string; data: Buffer }>, into?: Buffer): Promise<{ hash: string; data: Buffer } | undefined> {
    const start = index * BLOCK_SIZE;
    return this.locks.run(ino, start, start + BLOCK_SIZE, async () => {
      const node = this.journal.get(ino);
      const c = node?.content;
      if (!node || c?.state !== 'dirty' || node.size < start + BLOCK_SIZE || !isLocal(c, index)) return undefined;
      if (c.dirty !== 'all' && !c.dirty.includes(index)) return undefined;
      let e = this.early.get(ino);
      if (!e) this.early.set(ino, (e = { hashes: new Map<number, string>(), drops: 0 }));
      if (e.drops >= EARLY_DROPS_MAX || e.hashes.has(index)) return undefined;
      const r = await hash(await this.upper.read(ino, start, BLOCK_SIZE, into));
      // (Recorded only if the file's entry is still this one: a truncate or seal meanwhile started afresh.)
      if (this.early.get(ino) === e) e.hashes.set(index, r.hash);
      return r;
    });
  }

  truncate(ino: number, size: number): Promise<Inode> {
    this.refresh(ino);
    const times = this.stamp(ino);
    return this.serialize(ino, async () => {
      let node = this.journal.get(ino);
      if (!node) throw fsErr(E.ENOENT);
      if (node.kind !== 'file') throw fsErr(node.kind === 'dir' ? E.EISDIR : E.EINVAL);
      const old = node.size;
      if (size > MAX_FILE_BYTES) throw fsErr(E.EFBIG);
      if (size === old) return this.journal.update(ino, times(node));
      this.checkQuota(size - old);
      this.early.delete(ino); // the block layout may change with the size
      if (this.keepsInline(node, size)) return this.setInline(node, resized(node, size), times);
      node = await this.spill(node);
      const low = Math.min(old, size);
      if (size <= SINGLE_BLOCK_MAX) node = await this.makeLocal(node, 0, contentOf(node).sealed.size);
      else if (low > 0) node = await this.makeLocal(node, low - 1, low);
      await this.upper.truncate(ino, size);
      const content = changed(contentOf(node), Math.max(0, low - 1), Math.max(old, size), size);
      const next = this.journal.txn(() => {
        this.account(size - old);
        const n = this.journal.update(ino, { size, ...times(this.journal.get(ino) ?? node), content });
        this.journal.markChanged(ino);
        this.onChanged?.(ino);
        return n;
      });
      return next;
    });
  }

  /** Whether file `node` keeps (or starts) holding its bytes inline at `size` bytes. */
  private keepsInline(node: Inode, size: number): boolean {
    const c = contentOf(node);
    if (!canInline(c) || size > INLINE_MAX) return false;
    return this.inlineBytes + size - inlineLength(c) <= INLINE_TOTAL_MAX;
  }

  /** Records `bytes` as the inline content (and size) of file `node`. */
  private setInline(node: Inode, bytes: Buffer, times: Stamp): Inode {
    const c = contentOf(node);
    this.inlineBytes += bytes.length - inlineLength(c);
    return this.journal.txn(() => {
      this.account(bytes.length - node.size);
      const n = this.journal.update(node.ino, { size: bytes.length, ...times(this.journal.get(node.ino) ?? node), content: inlined(c, bytes) });
      this.journal.markChanged(node.ino);
      this.onChanged?.(node.ino);
      return n;
    });
  }

  /** Moves an inline file's bytes into a new upper file (it is about to outgrow the inline limit). */
  private async spill(node: Inode): Promise<Inode> {
    const c = contentOf(node);
    if (c.state !== 'inline') return node;
    await this.writeUpper(node.ino, c);
    return this.journal.update(node.ino, { content: spilled(c) });
  }

  /** Writes an inline file's bytes as its upper file (emptying one a derived inode number may have left). */
  private async writeUpper(ino: number, c: InlineContent): Promise<void> {
    await this.upper.reset(ino);
    if (c.data.length > 0) await this.upper.write(ino, 0, c.data);
    this.dropInline(c);
  }

  /** An inline content's bytes leave memory (spilled, sealed or reclaimed). */
  private dropInline(c: InlineContent): void {
    this.inlineBytes = Math.max(0, this.inlineBytes - c.data.length);
  }

  /** fallocate mode 0 (allocate, extend size) — content stays the same, zeros appear past the end. */
  async allocate(ino: number, offset: number, length: number): Promise<void> {
    this.refresh(ino);
    const node = this.journal.get(ino);
    if (!node) throw fsErr(E.ENOENT);
    if (offset + length > node.size) await this.truncate(ino, offset + length);
  }

  /**
   * Makes the upper data of this inode durable (fdatasync) once every content change queued before it
   * landed. The flush itself holds no lock: a seal's capture of the file (an fsync's segment) reads the
   * page cache meanwhile instead of waiting for the disk.
   */
  async sync(ino: number): Promise<void> {
    this.refresh(ino);
    if (this.oversize.delete(ino)) throw fsErr(E.EFBIG);
    await this.serialize(ino, async () => undefined);
    const node = this.journal.get(ino);
    if (node?.content && hasUpper(node.content)) await this.upper.sync(ino);
  }

  /**
   * The seal's capture of one file, at one instant: under the content lock, every block of a dirty file
   * that changed is handed to `store` (which hashes it, starts its upload and returns its hash) as a reader
   * of its bytes in the upper file, and with its early hash when it has one (`hashEarly`: then `store` reads
   * it only if it must upload it after all, and checks what it reads against that hash). `captured` then
   * receives the new block list and the inode as captured (the seal composes trees from hashes while the
   * uploads run). The lock is released there: writes and fsyncs of the file do not wait for its uploads.
   * Once `landed` resolves (every upload `store` started for it is in the store), the file is recorded as
   * sealed under the lock again, but only if its content is still the one captured; a file changed
   * meanwhile stays dirty and the next seal captures it again. If `landed` throws, the file stays dirty and
   * its early hashes are dropped (the next seal reads all). A file with nothing to seal returns its sealed
   * blocks without reading anything; `captured` in the result tells which happened. With `record: false`
   * (a log segment) the file is left as it is; with `record: { stored: epoch }` (write-behind) it is
   * recorded as stored (filestate.ts `stagedAs`) instead of sealed. A file write-behind stored, when
   * `useStored` accepts its record, is captured as those blocks without reading anything (`fromStore`).
   */
  async sealFile(
    ino: number,
    store: (block: SealBlock, bytes: (into?: Buffer) => Promise<Buffer>, known?: string) => Promise<string>,
    hooks: {
      captured?: (r: SealedBlocks & { node: Inode }) => void;
      landed?: () => Promise<void>;
      record?: boolean | { stored: number | null };
      useStored?: (s: StoredBlocks) => boolean;
      /** Recorded as sealed, an inline file keeps its bytes in a new upper file (default); false: it becomes clean. */
      keepLocal?: boolean;
    } = {},
  ): Promise<SealedBlocks & { captured: boolean; fromStore?: StoredBlocks }> {
    // A live file (open through passthrough) is read as it is now, and never recorded as sealed or stored:
    // the kernel may change it right after the capture, unseen. Write-behind leaves it for its last close.
    const live = this.live.has(ino);
    let before: Fingerprint | undefined;
    let untorn = false;
    const cap = await this.serialize(ino, async () => {
      this.refresh(ino);
      if (live) before = this.live.now(ino);
      const node = this.journal.get(ino);
      if (!node) throw new Error(`seal: file inode ${ino} vanished`);
      const c = contentOf(node);
      if (!isUnsealed(c) || (live && typeof hooks.record === 'object')) return { c, blocks: c.sealed.blocks, size: c.sealed.size, captured: false };
      if (!live && c.stored && c.stored.size === node.size && hooks.useStored?.(c.stored)) {
        hooks.captured?.({ blocks: c.stored.blocks, size: node.size, node });
        return { c, blocks: c.stored.blocks, size: node.size, captured: true, fromStore: c.stored };
      }
      // Blocks are read, hashed and uploaded SEAL_WINDOW at a time (a large file's capture streams
      // instead of waiting for each block's upload before reading the next); the list keeps file order.
      const plan = sealPlan(c, node.size);
      const blocks: string[] = new Array<string>(plan.length);
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < plan.length) {
          const i = next++;
          const b = plan[i] as SealBlock;
          try {
            // An inline file's bytes are copied: `store` may hand its buffer to a worker thread.
            const bytes = c.state === 'inline'
              ? async (): Promise<Buffer> => Buffer.from(c.data.subarray(b.offset, b.offset + b.length))
              : (into?: Buffer): Promise<Buffer> => this.upper.read(ino, b.offset, b.length, into);
            blocks[i] = b.reuse ?? (await store(b, bytes, this.earlyHash(ino, b)));
          } catch (e) {
            next = plan.length; // the others stop after their current block; the lock is held until then
            throw e;
          }
        }
      };
      const done = await Promise.allSettled(Array.from({ length: Math.min(SEAL_WINDOW, plan.length) }, worker));
      for (const r of done) if (r.status === 'rejected') throw r.reason;
      untorn = live && same(before, this.live.now(ino));
      hooks.captured?.({ blocks, size: node.size, node: this.journal.get(ino) ?? node });
      return { c, blocks, size: node.size, captured: true, fromStore: undefined };
    });
    if (!cap.captured) return { blocks: cap.blocks, size: cap.size, captured: false };
    const fromStore = cap.fromStore ? { fromStore: cap.fromStore } : {};
    try {
      await hooks.landed?.();
    } catch (e) {
      this.early.delete(ino);
      throw e;
    }
    // A log segment (record: false) leaves the file dirty: the next seal captures it again.
    const record = hooks.record ?? true;
    // A live file stays dirty; a seal remembers what it captured, for the file's last close (`closeLive`).
    if (record === true && live && untorn && before && this.journal.get(ino)?.content === cap.c) this.live.sealedAs(ino, before, cap.c, cap.blocks, cap.size);
    if (record !== false && !live && !this.live.has(ino)) {
      await this.serialize(ino, async () => {
        if (this.journal.get(ino)?.content !== cap.c) return;
        if (record === true) {
          await this.recordSealed(ino, cap.c, cap.blocks, cap.size, hooks.keepLocal ?? true);
          this.early.delete(ino);
        } else {
          // An inline file's record (its bytes with it) is not written again for this: after a restart its few
          // bytes go up again. A larger file's record is, so that a restart does not upload it again.
          const content = stagedAs(cap.c, { blocks: cap.blocks, size: cap.size, epoch: record.stored });
          if (cap.c.state === 'inline') this.journal.updateInMemory(ino, { content });
          else this.journal.update(ino, { content });
        }
      });
    }
    return { blocks: cap.blocks, size: cap.size, captured: true, ...fromStore };
  }

  /** The early hash of seal block `b` of file `ino`, if it is a whole block hashed since its last change. */
  private earlyHash(ino: number, b: SealBlock): string | undefined {
    if (b.length !== BLOCK_SIZE || b.offset !== b.index * BLOCK_SIZE) return undefined;
    return this.early.get(ino)?.hashes.get(b.index);
  }

  /**
   * Records file `ino` as sealed. An inline file's bytes move to an upper file first (sealed bytes are not
   * kept in memory); if that fails (a full disk), the file stays inline and unsealed, and the next seal
   * captures it again. With `keepLocal` false (the seal at sleep) it becomes clean: its bytes are in the store.
   */
  private async recordSealed(ino: number, c: FileContent, blocks: string[], size: number, keepLocal = true): Promise<void> {
    if (c.state === 'inline' && !keepLocal) {
      this.dropInline(c);
      this.journal.update(ino, { content: cleanContent(blocks, size) });
      return;
    }
    if (c.state === 'inline' && size > 0) {
      try {
        await this.writeUpper(ino, c);
      } catch {
        return;
      }
      this.journal.update(ino, { content: sealedState(spilled(c), blocks, size) });
      return;
    }
    if (c.state === 'inline') this.dropInline(c);
    this.journal.update(ino, { content: sealedState(c, blocks, size) });
  }

  /**
   * A block that this file's last seal deduplicated against (bytes [offset, offset + length)) was deleted
   * by a concurrent gc. Under the content lock, the bytes are read back from the upper file and handed to
   * `store`, which re-uploads them if they still hash to the block and says so. If they do not (the file
   * changed there since), the block is marked dirty, so the next seal hashes it afresh, and the result is
   * false.
   */
  restoreBlock(ino: number, offset: number, length: number, store: (data: Buffer) => Promise<boolean>): Promise<boolean> {
    return this.serialize(ino, async () => {
      const node = this.journal.get(ino);
      if (!node?.content) return false;
      const c = node.content;
      // Sealed bytes always come from the upper file; a block that is not local cannot be read back.
      if (!isLocal(c, Math.floor(offset / BLOCK_SIZE))) return false;
      const data = await this.upper.read(ino, offset, length).catch(() => null);
      if (data && (await store(data))) return true;
      this.journal.txn(() => {
        this.journal.update(ino, { content: changed(c, offset, offset + length, node.size) });
        this.journal.markChanged(ino);
        this.onChanged?.(ino);
      });
      return false;
    });
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
    if (delta === 0) return;
    this.usedBytes += delta;
    this.journal.setMeta(USED_BYTES, this.usedBytes);
  }

  /**
   * A file inode was reclaimed (last link gone, last handle closed). Call inside the transaction that
   * removes it: its bytes stop counting in that transaction; its upper data is removed afterwards.
   */
  reclaim(node: Inode): Promise<void> {
    this.lastRead.delete(node.ino);
    this.early.delete(node.ino);
    if (node.kind === 'file' && node.size > 0) this.account(-node.size);
    const c = node.content;
    if (c?.state === 'inline') {
      this.dropInline(c);
      // A file this journal created never had an upper file while inline; one loaded from a tree may have.
      if (this.journal.handedOut(node.ino)) return Promise.resolve();
    }
    return this.upper.remove(node.ino);
  }

  /** The count a remount starts from: the journal's, else the base snapshot's exact byte count. */
  static seedUsedBytes(journal: Journal): number {
    return journal.getMeta<number>(USED_BYTES) ?? journal.getMeta<{ bytes: number }>('stats')?.bytes ?? 0;
  }
}

/** The times a content change records, given the record as it is when the change lands (`Content.stamp`). */
type Stamp = (cur: Inode) => { mtimeNs: bigint; ctimeNs: bigint };

/** The bytes an inline content holds (0 for any other state). */
function inlineLength(c: FileContent): number {
  return c.state === 'inline' ? c.data.length : 0;
}

/** A new buffer of `size` bytes holding the start of inline (or empty) file `node`, zeros after it. */
function resized(node: Inode, size: number): Buffer {
  const c = contentOf(node);
  const out = Buffer.alloc(size);
  if (c.state === 'inline') out.set(c.data.subarray(0, Math.min(size, c.data.length)));
  return out;
}

/** Whether a passthrough writer may open `node`: its bytes can all be made local at once (not a large file's remote blocks). */
export function canWriteThrough(node: Inode): boolean {
  const c = contentOf(node);
  return c.state === 'inline' || allLocal(c) || c.sealed.size <= SINGLE_BLOCK_MAX;
}

/** A file's content state; an inode without one is not a regular file. */
function contentOf(node: Inode): FileContent {
  if (node.content) return node.content;
  if (node.kind === 'file') return emptyContent();
  throw fsErr(node.kind === 'dir' ? E.EISDIR : E.EINVAL);
}
