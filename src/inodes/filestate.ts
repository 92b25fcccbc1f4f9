/**
 * The content state of a regular file, and every transition between states. Pure: no I/O. content.ts
 * performs the copies and writes and records the state this module computes, and it is the only caller.
 *
 * A file's bytes live in two layers: its sealed blocks in the store (`sealed`: the content as of the last
 * seal or the base snapshot) and, once it has been touched, a sparse upper file `upper/<ino>` holding the
 * whole file (`local === 'all'`) or, for a large file, only the 4 MiB blocks listed in `local`.
 *
 *   clean  ──copy up──▶  copied  ──write/truncate──▶  dirty  ──sealed──▶  copied
 *     └────────────write/truncate (upper file created)────▶ dirty ◀──write/truncate──┘
 *
 *  - `clean`: no upper file; the file is exactly its sealed blocks (and its size is `sealed.size`).
 *  - `copied`: the upper file holds the `local` blocks, byte for byte the sealed ones. A copy-up leaves a
 *    file here, and so does a seal: after it the upper file holds exactly what was sealed. (The issue's
 *    "copied up" and "sealed" are therefore one state.)
 *  - `dirty`: the upper file holds changes not sealed yet, in the `dirty` blocks (every dirty block is
 *    local). Only here does a seal have work to do.
 *
 * Room for the states later work adds (each is one more member of `FileContent`; `switch`es over
 * `state` end in `unreachable`, so the compiler lists every place that must handle a new one):
 *  - `logged` (the per-home fsync log): dirty bytes of which some ranges are durable in a log segment but
 *    not yet sealed: the `dirty` fields plus the logged ranges and their segment; a seal absorbs both.
 *
 *  - `inline` (the small-file write path): a new or emptied file (nothing sealed, no upper file)
 *    that stays small holds its bytes in its journal record, `data`, and has no upper file: creating,
 *    writing and deleting it cost no file-system calls. It is always unsealed. It becomes `dirty` (its
 *    bytes `spilled` into a new upper file) when it grows past the inline limit, and `copied` (the same,
 *    at the seal; `clean` if empty) when sealed, so sealed bytes never stay in memory.
 *
 * Write-behind (seal/writebehind.ts) refines `dirty` and `inline` with `stored`: the file's current bytes
 * are in the store as these blocks, uploaded (or found) after a look at the org's gc fence that saw epoch
 * `epoch` settled, but no snapshot references them yet. A seal or log segment then takes that block list
 * without reading or uploading anything, as long as no gc was announced since (format/gcfence.ts; the
 * epoch is how it tells). Every change builds a new state without `stored` (`changed`, `inlined`,
 * `spilled`), so a file changed while its upload was in flight is never recorded as stored: `stagedAs`
 * is applied only to the exact state that was captured. (An inline file's `stored` is kept in memory
 * only: journaling it would write the record, bytes and all, a second time.)
 */
import { BLOCK_SIZE, SINGLE_BLOCK_MAX, blockRanges } from '../hash/blake3.js';

/** Block indices of a file: every block, or these 4 MiB blocks (sorted, unique). */
export type BlockSet = 'all' | number[];

/** A file's content as sealed: its block list and length. */
export interface SealedBlocks {
  blocks: string[];
  size: number;
}

export interface CleanContent {
  state: 'clean';
  sealed: SealedBlocks;
}

export interface CopiedContent {
  state: 'copied';
  sealed: SealedBlocks;
  local: BlockSet;
}

/** A dirty or inline file's current bytes, in the store but in no snapshot yet (write-behind). */
export interface StoredBlocks extends SealedBlocks {
  /** The gc epoch (null: the org never ran a gc) a settled look saw before the blocks were stored or found. */
  epoch: number | null;
}

export interface DirtyContent {
  state: 'dirty';
  sealed: SealedBlocks;
  local: BlockSet;
  dirty: BlockSet;
  stored?: StoredBlocks;
}

export interface InlineContent {
  state: 'inline';
  sealed: SealedBlocks;
  /** The whole file (its length is the file's size). Never changed in place: a change makes a new one. */
  data: Uint8Array;
  stored?: StoredBlocks;
}

export type FileContent = CleanContent | CopiedContent | DirtyContent | InlineContent;

/** A transition that the state machine does not allow: a bug in the caller, never a user error. */
export class ContentStateError extends Error {
  constructor(from: FileContent['state'], transition: string) {
    super(`file content in state '${from}' cannot be ${transition}`);
    this.name = 'ContentStateError';
  }
}

export function unreachable(x: never): never {
  throw new Error(`unhandled file content state ${JSON.stringify(x)}`);
}

export function cleanContent(blocks: string[], size: number): CleanContent {
  return { state: 'clean', sealed: { blocks, size } };
}

/** A new, empty file. */
export function emptyContent(): CleanContent {
  return cleanContent([], 0);
}

function inSet(set: BlockSet, i: number): boolean {
  return set === 'all' || set.includes(i);
}

/** `set` plus the block indices [from, to). */
function withRange(set: BlockSet, from: number, to: number): BlockSet {
  if (set === 'all') return 'all';
  const s = new Set(set);
  for (let i = from; i < to; i++) s.add(i);
  return [...s].sort((a, b) => a - b);
}

function union(a: BlockSet, b: BlockSet): BlockSet {
  if (a === 'all' || b === 'all') return 'all';
  return [...new Set([...a, ...b])].sort((x, y) => x - y);
}

/** Whether block `i` is read from the upper file. */
export function isLocal(c: FileContent, i: number): boolean {
  return hasUpper(c) && inSet(c.local, i);
}

/** The whole file is in the upper file. */
export function allLocal(c: FileContent): boolean {
  return hasUpper(c) && c.local === 'all';
}

/** The file has an upper file. */
export function hasUpper(c: FileContent): c is CopiedContent | DirtyContent {
  return c.state === 'copied' || c.state === 'dirty';
}

/** The local block indices, [] for a clean or inline file. */
export function localBlocks(c: FileContent): BlockSet {
  return hasUpper(c) ? c.local : [];
}

/** A file that may hold its bytes inline: an inline one, or a clean one with nothing sealed (new or emptied). */
export function canInline(c: FileContent): boolean {
  return c.state === 'inline' || (c.state === 'clean' && c.sealed.size === 0);
}

/** The file's bytes are now `data`, held inline. */
export function inlined(c: FileContent, data: Uint8Array): InlineContent {
  if (!canInline(c)) throw new ContentStateError(c.state, 'held inline');
  return { state: 'inline', sealed: c.sealed, data };
}

/** After an inline file's bytes were written into a new upper file: all local, all dirty. */
export function spilled(c: FileContent): DirtyContent {
  if (c.state !== 'inline') throw new ContentStateError(c.state, 'spilled');
  // The same bytes in another place: what write-behind stored of them stays true.
  return { state: 'dirty', sealed: c.sealed, local: 'all', dirty: 'all', ...(c.stored ? { stored: c.stored } : {}) };
}

/** After copying blocks `added` of the sealed content into the upper file. */
export function copiedUp(c: FileContent, added: BlockSet): FileContent {
  switch (c.state) {
    case 'clean':
      return { state: 'copied', sealed: c.sealed, local: union([], added) };
    case 'copied':
      return { ...c, local: union(c.local, added) };
    case 'dirty':
      return { ...c, local: union(c.local, added) };
    case 'inline':
      throw new ContentStateError(c.state, 'copied up (it has no sealed bytes)');
    default:
      return unreachable(c);
  }
}

/**
 * After bytes [from, to) were written or truncated into the upper file, leaving the file `size` long.
 * Precondition: every block in that range that holds sealed bytes was copied up first (content.ts).
 * A file that is or was small (one block) is dirty as a whole: it is sealed as one block anyway.
 */
export function changed(c: FileContent, from: number, to: number, size: number): DirtyContent {
  if (c.state === 'inline') throw new ContentStateError(c.state, 'changed in an upper file (spill it first)');
  const first = Math.floor(from / BLOCK_SIZE);
  const last = Math.ceil(to / BLOCK_SIZE);
  const dirtyBefore: BlockSet = c.state === 'dirty' ? c.dirty : [];
  const dirty = size <= SINGLE_BLOCK_MAX || c.sealed.size <= SINGLE_BLOCK_MAX ? 'all' : withRange(dirtyBefore, first, last);
  return { state: 'dirty', sealed: c.sealed, local: withRange(localBlocks(c), first, last), dirty };
}

/** One block of a dirty file at seal time: read it from the upper file, or keep the sealed `reuse`. */
export interface SealBlock {
  index: number;
  offset: number;
  length: number;
  /** The sealed hash, still valid for this block (it is clean and the large layout is unchanged). */
  reuse?: string;
}

/**
 * The blocks a seal must produce for a dirty file that is now `size` long. A clean block of an unchanged
 * large layout is exactly the sealed one (every size change dirties the blocks it touches), so its hash
 * is reused; everything else is read back from the upper file and hashed.
 */
export function sealPlan(c: DirtyContent | InlineContent, size: number): SealBlock[] {
  const oldLarge = c.state === 'dirty' && c.sealed.size > SINGLE_BLOCK_MAX;
  return blockRanges(size).map(([offset, length], index) => {
    const old = c.sealed.blocks[index];
    const reuse = oldLarge && c.state === 'dirty' && size > SINGLE_BLOCK_MAX && !inSet(c.dirty, index) && old !== undefined;
    return reuse ? { index, offset, length, reuse: old } : { index, offset, length };
  });
}

/**
 * After a seal stored `blocks` for the dirty content, `size` bytes long: the upper file now equals them.
 * An inline file's bytes must have been spilled into its upper file first, unless it is empty (then it
 * is clean: nothing to hold anywhere).
 */
export function sealed(c: FileContent, blocks: string[], size: number): CleanContent | CopiedContent {
  if (c.state === 'inline' && size === 0) return cleanContent(blocks, 0);
  if (c.state === 'inline') throw new ContentStateError(c.state, 'sealed before its bytes were spilled');
  if (c.state !== 'dirty') throw new ContentStateError(c.state, 'sealed (nothing changed)');
  return { state: 'copied', sealed: { blocks, size }, local: c.local };
}

/** A file whose bytes need a seal: dirty or inline. */
export function isUnsealed(c: FileContent): c is DirtyContent | InlineContent {
  return c.state === 'dirty' || c.state === 'inline';
}

/** What write-behind stored of the file's current bytes, if anything. */
export function storedOf(c: FileContent | undefined): StoredBlocks | undefined {
  return c && isUnsealed(c) ? c.stored : undefined;
}

/**
 * After write-behind stored the bytes of exactly this state as `stored` (its size is the file's). Only the
 * state that was captured may be passed: the caller checks, under the content lock, that none replaced it.
 */
export function stagedAs(c: FileContent, stored: StoredBlocks): DirtyContent | InlineContent {
  if (!isUnsealed(c)) throw new ContentStateError(c.state, 'stored by write-behind (nothing changed)');
  return { ...c, stored };
}

/** The fields that held a file's content before it was one state (journals written by earlier versions). */
export interface LegacyContentFields {
  blocks?: string[];
  sealedSize?: number;
  local?: BlockSet;
  dirty?: BlockSet;
}

/** The state of a file journaled with the earlier separate fields. */
export function fromLegacy(f: LegacyContentFields): FileContent {
  const sealedPart = { blocks: f.blocks ?? [], size: f.sealedSize ?? 0 };
  if (f.local === undefined) return { state: 'clean', sealed: sealedPart };
  if (f.dirty === undefined) return { state: 'copied', sealed: sealedPart, local: f.local };
  return { state: 'dirty', sealed: sealedPart, local: f.local, dirty: f.dirty };
}
