/**
 * Deterministic, versioned byte encodings of trees and snapshots (specified in docs/format.md).
 *
 * A tree is a compact little-endian binary record (magic `HFTR`; the lowest version that holds its entries
 * is written: 1 without link counts, 2 with them, 3 with inode numbers too) because homes hold large directories and
 * trees are hashed and fetched on the read path; a snapshot is canonical JSON (version 1) because it is
 * small and worth reading by eye. Both encodings are canonical: one value has exactly one
 * encoding, and decoding re-checks that (a non-canonical object is rejected), so the hash of an object is
 * a function of its meaning.
 *
 * Decoding trusts nothing: every name, length, count, range and kind-specific field is validated and a
 * bad object is a `FormatError` naming what is wrong, so a hostile object can never become a path outside
 * the target directory or an unbounded allocation.
 */
import { FormatError } from '../util/errors.js';
import { blockCount } from '../hash/blake3.js';
import { isPortableIno } from '../model/inos.js';
import type { EntryKind, Snapshot, Tree, TreeEntry } from '../model/tree.js';

export const TREE_MAGIC = Buffer.from('HFTR', 'latin1');
/** Version written when any entry records an inode number (v2 has no `ino` field, v1 no `nlink` either; all are read). */
export const TREE_VERSION = 3;
export const SNAPSHOT_VERSION = 1;

export const MAX_ENTRIES = 1_000_000;
export const MAX_NAME_BYTES = 255;
export const MAX_TARGET_BYTES = 4095;
export const MAX_XATTRS = 1024;
export const MAX_XATTR_NAME_BYTES = 255;
export const MAX_XATTR_VALUE_BYTES = 65536;
export const MAX_SIZE = Number.MAX_SAFE_INTEGER;
/** The high 32 bits of MAX_SIZE. */
const MAX_SIZE_HIGH = 0x1fffff;
/** Tree versions this homefs reads (and `TREE_VERSION`, the newest, which it writes). */
export const TREE_VERSION_V1 = 1;
export const TREE_VERSION_V2 = 2;
const U32 = 0xffffffff;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

const KIND_CODES: Record<EntryKind, number> = { file: 1, dir: 2, symlink: 3, fifo: 4, socket: 5, chardev: 6, blockdev: 7 };
const KINDS: Array<EntryKind | undefined> = [undefined, 'file', 'dir', 'symlink', 'fifo', 'socket', 'chardev', 'blockdev'];

const utf8 = new TextDecoder('utf-8', { fatal: true });
const HASH = /^[0-9a-f]{64}$/;

/** Byte-wise (UTF-8) order of names: the order entries are stored in. */
export function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Why `name` is not a valid entry name, or null when it is. */
export function nameProblem(name: string): string | null {
  if (name.length === 0) return 'empty name';
  if (name === '.' || name === '..') return `name '${name}' is not allowed`;
  if (name.includes('/')) return `name ${JSON.stringify(name)} contains '/'`;
  if (name.includes('\0')) return `name ${JSON.stringify(name)} contains NUL`;
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) return `name ${JSON.stringify(name.slice(0, 40))}... is longer than ${MAX_NAME_BYTES} bytes`;
  if (/[\uD800-\uDFFF]/.test(name.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''))) return `name ${JSON.stringify(name)} is not valid UTF-8`;
  return null;
}

/** Validates one entry's fields (everything but its position among its siblings). */
export function validateEntry(e: TreeEntry, what = 'tree'): void {
  const bad = (d: string): never => {
    throw new FormatError(what, `entry ${JSON.stringify(e.name)}: ${d}`);
  };
  const np = nameProblem(e.name);
  if (np) throw new FormatError(what, np);
  if (!(e.kind in KIND_CODES)) bad(`unknown kind ${String(e.kind)}`);
  if (!Number.isInteger(e.mode) || e.mode < 0 || e.mode > 0o7777) bad(`mode ${e.mode} out of range`);
  for (const [k, v] of [['uid', e.uid], ['gid', e.gid]] as const) {
    if (!Number.isInteger(v) || v < 0 || v > U32) bad(`${k} ${v} out of range`);
  }
  if (!Number.isInteger(e.size) || e.size < 0 || e.size > MAX_SIZE) bad(`size ${e.size} out of range`);
  for (const [k, v] of [['mtime', e.mtimeNs], ['ctime', e.ctimeNs]] as const) {
    if (typeof v !== 'bigint' || v < I64_MIN || v > I64_MAX) bad(`${k} out of range`);
  }
  if (e.link !== undefined) {
    if (!Number.isInteger(e.link) || e.link < 1 || e.link > U32) bad(`link id ${e.link} out of range`);
    if (e.kind === 'dir') bad('a directory cannot be a hard link');
  }
  if (e.nlink !== undefined && (!Number.isInteger(e.nlink) || e.nlink < 1 || e.nlink > U32)) bad(`link count ${e.nlink} out of range`);
  if (e.ino !== undefined && !isPortableIno(e.ino)) bad(`inode number ${e.ino} out of range 2^40..2^53-1`);
  const has = { blocks: e.blocks !== undefined, tree: e.tree !== undefined, target: e.target !== undefined, rdev: e.rdev !== undefined };
  const expect = { blocks: e.kind === 'file', tree: e.kind === 'dir', target: e.kind === 'symlink', rdev: e.kind === 'chardev' || e.kind === 'blockdev' };
  for (const k of Object.keys(has) as Array<keyof typeof has>) {
    if (has[k] !== expect[k]) bad(`${e.kind} ${expect[k] ? 'lacks' : 'must not have'} ${k}`);
  }
  if (e.kind === 'file') {
    const blocks = e.blocks ?? [];
    const want = blockCount(e.size);
    if (blocks.length !== want) bad(`${blocks.length} blocks for size ${e.size}, expected ${want}`);
    for (const h of blocks) if (!HASH.test(h)) bad(`block hash ${JSON.stringify(h)} is not 64 hex digits`);
  } else if (e.kind === 'dir') {
    if (!HASH.test(e.tree ?? '')) bad(`tree hash ${JSON.stringify(e.tree)} is not 64 hex digits`);
    if (e.size !== 0) bad('a directory has size 0');
  } else if (e.kind === 'symlink') {
    const t = e.target ?? '';
    const n = Buffer.byteLength(t, 'utf8');
    if (n === 0 || n > MAX_TARGET_BYTES) bad(`symlink target length ${n} out of range 1..${MAX_TARGET_BYTES}`);
    if (t.includes('\0')) bad('symlink target contains NUL');
    if (e.size !== n) bad(`symlink size ${e.size} differs from its target length ${n}`);
  } else if (e.kind === 'chardev' || e.kind === 'blockdev') {
    if (!Number.isInteger(e.rdev) || (e.rdev ?? -1) < 0 || (e.rdev ?? 0) > MAX_SIZE) bad(`rdev ${e.rdev} out of range`);
    if (e.size !== 0) bad(`a ${e.kind} has size 0`);
  } else if (e.size !== 0) {
    bad(`a ${e.kind} has size 0`);
  }
  const xs = e.xattrs ?? [];
  if (e.xattrs !== undefined && xs.length === 0) bad('empty xattr list must be omitted');
  if (xs.length > MAX_XATTRS) bad(`more than ${MAX_XATTRS} xattrs`);
  let prev: string | null = null;
  for (const [name, value] of xs) {
    const n = Buffer.byteLength(name, 'utf8');
    if (n === 0 || n > MAX_XATTR_NAME_BYTES || name.includes('\0')) bad(`xattr name ${JSON.stringify(name)} invalid`);
    if (!Buffer.isBuffer(value) || value.length > MAX_XATTR_VALUE_BYTES) bad(`xattr ${name} value too large or not bytes`);
    if (prev !== null && compareNames(prev, name) >= 0) bad(`xattr names not sorted and unique at ${JSON.stringify(name)}`);
    prev = name;
  }
}

function validateTree(tree: Tree, what: string): void {
  if (tree.entries.length > MAX_ENTRIES) throw new FormatError(what, `${tree.entries.length} entries, more than ${MAX_ENTRIES}`);
  let prev: Buffer | null = null;
  for (const e of tree.entries) {
    validateEntry(e, what);
    const nb = Buffer.from(e.name, 'utf8');
    if (prev !== null && Buffer.compare(prev, nb) >= 0) {
      throw new FormatError(what, `entries not sorted and unique at ${JSON.stringify(e.name)}`);
    }
    prev = nb;
  }
}

class Writer {
  private chunks: Buffer[] = [];
  private cur = Buffer.allocUnsafe(64 * 1024);
  private pos = 0;
  private ensure(n: number): void {
    if (this.pos + n <= this.cur.length) return;
    this.chunks.push(this.cur.subarray(0, this.pos));
    this.cur = Buffer.allocUnsafe(Math.max(64 * 1024, n));
    this.pos = 0;
  }
  u8(v: number): void {
    this.ensure(1);
    this.cur.writeUInt8(v, this.pos);
    this.pos += 1;
  }
  u16(v: number): void {
    this.ensure(2);
    this.cur.writeUInt16LE(v, this.pos);
    this.pos += 2;
  }
  u32(v: number): void {
    this.ensure(4);
    this.cur.writeUInt32LE(v, this.pos);
    this.pos += 4;
  }
  u64(v: number): void {
    this.ensure(8);
    this.cur.writeBigUInt64LE(BigInt(v), this.pos);
    this.pos += 8;
  }
  i64(v: bigint): void {
    this.ensure(8);
    this.cur.writeBigInt64LE(v, this.pos);
    this.pos += 8;
  }
  bytes(b: Buffer): void {
    this.ensure(b.length);
    b.copy(this.cur, this.pos);
    this.pos += b.length;
  }
  done(): Buffer {
    this.chunks.push(this.cur.subarray(0, this.pos));
    return Buffer.concat(this.chunks);
  }
}

class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer, private readonly what: string) {}
  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new FormatError(this.what, `truncated at byte ${this.pos} (needs ${n} more)`);
  }
  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.pos++);
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  u64(): number {
    this.need(8);
    // Two 32-bit halves: no BigInt is allocated for the sizes and inode numbers of every entry.
    const lo = this.buf.readUInt32LE(this.pos);
    const hi = this.buf.readUInt32LE(this.pos + 4);
    this.pos += 8;
    if (hi > MAX_SIZE_HIGH) throw new FormatError(this.what, `64-bit value ${(BigInt(hi) << 32n) | BigInt(lo)} at byte ${this.pos - 8} exceeds 2^53-1`);
    return hi === 0 ? lo : hi * 2 ** 32 + lo; // a small value stays a small integer, not a boxed double
  }
  i64(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  /** The next `n` bytes as hex digits (no view of them is made). */
  hex(n: number): string {
    this.need(n);
    const h = this.buf.toString('hex', this.pos, this.pos + n);
    this.pos += n;
    return h;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  text(n: number, field: string): string {
    return this.textOf(this.bytes(n), field);
  }
  /** `b`, just read, as UTF-8. */
  textOf(b: Buffer, field: string): string {
    try {
      return utf8.decode(b);
    } catch {
      throw new FormatError(this.what, `${field} at byte ${this.pos - b.length} is not valid UTF-8`);
    }
  }
  get remaining(): number {
    return this.buf.length - this.pos;
  }
}

/** Encodes a tree. Throws FormatError if the tree is invalid (so an invalid tree is never stored). */
export function encodeTree(tree: Tree): Buffer {
  validateTree(tree, 'tree to encode');
  const w = new Writer();
  const version = tree.entries.some((e) => e.ino !== undefined) ? TREE_VERSION : tree.entries.some((e) => e.nlink !== undefined) ? TREE_VERSION_V2 : TREE_VERSION_V1;
  w.bytes(TREE_MAGIC);
  w.u8(version);
  w.u32(tree.entries.length);
  for (const e of tree.entries) {
    const name = Buffer.from(e.name, 'utf8');
    w.u8(KIND_CODES[e.kind]);
    w.u16(name.length);
    w.bytes(name);
    w.u16(e.mode);
    w.u32(e.uid);
    w.u32(e.gid);
    w.u64(e.size);
    w.i64(e.mtimeNs);
    w.i64(e.ctimeNs);
    w.u32(e.link ?? 0);
    if (version >= TREE_VERSION_V2) w.u32(e.nlink ?? 0);
    if (version >= TREE_VERSION) w.u64(e.ino ?? 0);
    switch (e.kind) {
      case 'file':
        for (const h of e.blocks ?? []) w.bytes(Buffer.from(h, 'hex'));
        break;
      case 'dir':
        w.bytes(Buffer.from(e.tree ?? '', 'hex'));
        break;
      case 'symlink': {
        const t = Buffer.from(e.target ?? '', 'utf8');
        w.u16(t.length);
        w.bytes(t);
        break;
      }
      case 'chardev':
      case 'blockdev':
        w.u64(e.rdev ?? 0);
        break;
      default:
        break;
    }
    const xs = e.xattrs ?? [];
    w.u16(xs.length);
    for (const [n, v] of xs) {
      const nb = Buffer.from(n, 'utf8');
      w.u8(nb.length);
      w.bytes(nb);
      w.u32(v.length);
      w.bytes(v);
    }
  }
  return w.done();
}

/** Decodes and validates a tree. `hashForErrors` names the object in error messages. */
export function decodeTree(buf: Buffer, hashForErrors?: string): Tree {
  const what = hashForErrors ? `tree ${hashForErrors}` : 'tree';
  const r = new Reader(buf, what);
  if (buf.length < 4 || !buf.subarray(0, 4).equals(TREE_MAGIC)) throw new FormatError(what, 'not a tree (bad magic)');
  r.bytes(4);
  const version = r.u8();
  if (version < TREE_VERSION_V1 || version > TREE_VERSION) throw new FormatError(what, `unsupported tree version ${version} (this homefs reads versions ${TREE_VERSION_V1} to ${TREE_VERSION}): upgrade homefs`);
  const count = r.u32();
  if (count > MAX_ENTRIES) throw new FormatError(what, `${count} entries, more than ${MAX_ENTRIES}`);
  // Every entry takes at least 44 bytes (48 in v2, 56 in v3): reject absurd counts before allocating anything for them.
  const minEntry = 44 + (version >= TREE_VERSION_V2 ? 4 : 0) + (version >= TREE_VERSION ? 8 : 0);
  if (count * minEntry > r.remaining) throw new FormatError(what, `${count} entries cannot fit in ${r.remaining} bytes`);
  const entries: TreeEntry[] = [];
  let prevName: Buffer | undefined;
  for (let i = 0; i < count; i++) {
    const code = r.u8();
    const kind = KINDS[code];
    if (kind === undefined) throw new FormatError(what, `entry ${i}: unknown kind code ${code}`);
    const nameLen = r.u16();
    if (nameLen === 0 || nameLen > MAX_NAME_BYTES) throw new FormatError(what, `entry ${i}: name length ${nameLen} out of range 1..${MAX_NAME_BYTES}`);
    const nameBytes = r.bytes(nameLen);
    const name = r.textOf(nameBytes, `entry ${i} name`);
    if (prevName !== undefined && Buffer.compare(prevName, nameBytes) >= 0) throw new FormatError(what, `entries not sorted and unique at ${JSON.stringify(name)}`);
    prevName = nameBytes;
    const mode = r.u16();
    const uid = r.u32();
    const gid = r.u32();
    const size = r.u64();
    const mtimeNs = r.i64();
    const c = r.i64();
    const ctimeNs = c === mtimeNs ? mtimeNs : c; // one BigInt for both when equal (records keep them)
    const link = r.u32();
    const nlink = version >= TREE_VERSION_V2 ? r.u32() : 0;
    const ino = version >= TREE_VERSION ? r.u64() : 0;
    const e: TreeEntry = { name, kind, mode, uid, gid, size, mtimeNs, ctimeNs };
    if (link !== 0) e.link = link;
    if (nlink !== 0) e.nlink = nlink;
    if (ino !== 0) e.ino = ino;
    switch (kind) {
      case 'file': {
        const n = blockCount(size);
        // A hostile size must not make us allocate for blocks the tree cannot hold.
        if (n * 32 > r.remaining) throw new FormatError(what, `entry ${JSON.stringify(name)}: ${n} blocks for size ${size} cannot fit in ${r.remaining} bytes`);
        // Sized up front: a pushed-to array keeps room for 17 elements, and a home's records keep these.
        const blocks = new Array<string>(n);
        for (let b = 0; b < n; b++) blocks[b] = r.hex(32);
        e.blocks = blocks;
        break;
      }
      case 'dir':
        e.tree = r.hex(32);
        break;
      case 'symlink': {
        const n = r.u16();
        if (n === 0 || n > MAX_TARGET_BYTES) throw new FormatError(what, `entry ${JSON.stringify(name)}: symlink target length ${n} out of range`);
        e.target = r.text(n, `entry ${JSON.stringify(name)} symlink target`);
        break;
      }
      case 'chardev':
      case 'blockdev':
        e.rdev = r.u64();
        break;
      default:
        break;
    }
    const nx = r.u16();
    if (nx > MAX_XATTRS) throw new FormatError(what, `entry ${JSON.stringify(name)}: ${nx} xattrs, more than ${MAX_XATTRS}`);
    if (nx > 0) {
      const xs: Array<[string, Buffer]> = [];
      for (let x = 0; x < nx; x++) {
        const nl = r.u8();
        const xn = r.text(nl, `entry ${JSON.stringify(name)} xattr name`);
        const vl = r.u32();
        if (vl > MAX_XATTR_VALUE_BYTES) throw new FormatError(what, `entry ${JSON.stringify(name)}: xattr ${xn} value of ${vl} bytes`);
        xs.push([xn, Buffer.from(r.bytes(vl))]);
      }
      e.xattrs = xs;
    }
    checkDecodedEntry(e, what);
    entries.push(e);
  }
  if (r.remaining !== 0) throw new FormatError(what, `${r.remaining} trailing bytes`);
  if (version === TREE_VERSION && !entries.some((e) => e.ino !== undefined)) throw new FormatError(what, `version ${TREE_VERSION} without any inode number (not canonical)`);
  return { entries };
}

/**
 * The checks of validateEntry that the binary form does not already make true of an entry decodeTree just
 * read: the reader checked the kind, name and target lengths, UTF-8, every integer's width and the block
 * count, and the loop checks the order of names.
 */
function checkDecodedEntry(e: TreeEntry, what: string): void {
  const bad = (d: string): never => {
    throw new FormatError(what, `entry ${JSON.stringify(e.name)}: ${d}`);
  };
  const n = e.name;
  if (n === '.' || n === '..') throw new FormatError(what, `name '${n}' is not allowed`);
  if (n.includes('/')) throw new FormatError(what, `name ${JSON.stringify(n)} contains '/'`);
  if (n.includes('\0')) throw new FormatError(what, `name ${JSON.stringify(n)} contains NUL`);
  if (e.mode > 0o7777) bad(`mode ${e.mode} out of range`);
  if (e.ino !== undefined && !isPortableIno(e.ino)) bad(`inode number ${e.ino} out of range 2^40..2^53-1`);
  switch (e.kind) {
    case 'file':
      break;
    case 'dir':
      if (e.link !== undefined) bad('a directory cannot be a hard link');
      if (e.size !== 0) bad('a directory has size 0');
      break;
    case 'symlink': {
      const t = e.target ?? '';
      if (t.includes('\0')) bad('symlink target contains NUL');
      if (e.size !== Buffer.byteLength(t, 'utf8')) bad(`symlink size ${e.size} differs from its target length ${Buffer.byteLength(t, 'utf8')}`);
      break;
    }
    default:
      if (e.size !== 0) bad(`a ${e.kind} has size 0`);
  }
  if (e.xattrs === undefined) return;
  let prev: string | null = null;
  for (const [name] of e.xattrs) {
    if (name.length === 0 || name.includes('\0')) bad(`xattr name ${JSON.stringify(name)} invalid`);
    if (prev !== null && compareNames(prev, name) >= 0) bad(`xattr names not sorted and unique at ${JSON.stringify(name)}`);
    prev = name;
  }
}

interface SnapshotJson {
  version: number;
  root: string;
  parent: string | null;
  home: string;
  time: string;
  host: string;
  stats: { files: number; dirs: number; bytes: number };
  rootAttrs?: { mode: number; uid: number; gid: number; mtimeNs: string };
  reason?: string;
  features?: string[];
  logTail?: { gen: number; seq: number };
}

/** Features a snapshot may require of its readers (version 2 lists them); an unknown one is refused. */
export const KNOWN_FEATURES: readonly string[] = ['log', 'log-chain', 'log-tail'];
const SNAPSHOT_VERSION_FEATURES = 2;

const HOME_REF = /^[a-z0-9][a-z0-9._-]{0,62}\/[a-z0-9][a-z0-9._-]{0,62}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

function validateSnapshot(s: Snapshot, what: string): void {
  const bad = (d: string): never => {
    throw new FormatError(what, d);
  };
  if (!HASH.test(s.root)) bad(`root ${JSON.stringify(s.root)} is not 64 hex digits`);
  if (s.parent !== null && !HASH.test(s.parent)) bad(`parent ${JSON.stringify(s.parent)} is not 64 hex digits`);
  if (typeof s.home !== 'string' || !HOME_REF.test(s.home) || s.home.includes('..')) bad(`home ${JSON.stringify(s.home)} is not org/home`);
  if (typeof s.time !== 'string' || !ISO_TIME.test(s.time) || Number.isNaN(Date.parse(s.time))) bad(`time ${JSON.stringify(s.time)} is not ISO-8601 UTC`);
  if (typeof s.host !== 'string' || s.host.length > 255 || /[\0-\x1f]/.test(s.host)) bad('host is not a printable string of at most 255 characters');
  const st = s.stats;
  if (typeof st !== 'object' || st === null) bad('stats missing');
  for (const k of ['files', 'dirs', 'bytes'] as const) {
    const v = st[k];
    if (!Number.isInteger(v) || v < 0 || v > MAX_SIZE) bad(`stats.${k} ${String(v)} out of range`);
  }
  if (s.rootAttrs !== undefined) {
    const r = s.rootAttrs;
    if (typeof r !== 'object' || r === null) bad('rootAttrs is not an object');
    if (!Number.isInteger(r.mode) || r.mode < 0 || r.mode > 0o7777) bad(`rootAttrs.mode ${String(r.mode)} out of range`);
    for (const k of ['uid', 'gid'] as const) if (!Number.isInteger(r[k]) || r[k] < 0 || r[k] > U32) bad(`rootAttrs.${k} ${String(r[k])} out of range`);
    if (typeof r.mtimeNs !== 'bigint' || r.mtimeNs < I64_MIN || r.mtimeNs > I64_MAX) bad('rootAttrs.mtimeNs out of range');
  }
  if (s.reason !== undefined && (typeof s.reason !== 'string' || !/^[a-z-]{1,32}$/.test(s.reason))) bad(`reason ${JSON.stringify(s.reason)} invalid`);
  if (s.features !== undefined) {
    const f: unknown = s.features;
    if (!Array.isArray(f) || f.length === 0 || f.some((x) => typeof x !== 'string' || !/^[a-z0-9-]{1,32}$/.test(x))) bad('features is not a list of names');
    const unknown = s.features.filter((x) => !KNOWN_FEATURES.includes(x));
    if (unknown.length > 0) bad(`it needs features this homefs does not know (${unknown.join(', ')}): upgrade homefs`);
    if ([...s.features].sort().join() !== s.features.join() || new Set(s.features).size !== s.features.length) bad('features not sorted and unique');
  }
  if ((s.logTail !== undefined) !== (s.features?.includes('log-tail') ?? false)) bad('logTail and the log-tail feature go together');
  if (s.logTail !== undefined) {
    const t = s.logTail;
    if (typeof t !== 'object' || t === null || !Number.isInteger(t.gen) || t.gen < 0 || !Number.isInteger(t.seq) || t.seq < 0) bad('logTail is not {gen, seq}');
  }
}

function canonicalSnapshot(s: Snapshot): SnapshotJson {
  const j: SnapshotJson = {
    version: s.features !== undefined ? SNAPSHOT_VERSION_FEATURES : SNAPSHOT_VERSION,
    root: s.root,
    parent: s.parent,
    home: s.home,
    time: s.time,
    host: s.host,
    stats: { files: s.stats.files, dirs: s.stats.dirs, bytes: s.stats.bytes },
  };
  if (s.rootAttrs !== undefined) {
    const r = s.rootAttrs;
    j.rootAttrs = { mode: r.mode, uid: r.uid, gid: r.gid, mtimeNs: r.mtimeNs.toString() };
  }
  if (s.reason !== undefined) j.reason = s.reason;
  if (s.features !== undefined) j.features = [...s.features];
  if (s.logTail !== undefined) j.logTail = { gen: s.logTail.gen, seq: s.logTail.seq };
  return j;
}

/** Canonical JSON of a snapshot: fixed key order, no whitespace, UTF-8, trailing newline. */
export function encodeSnapshot(s: Snapshot): Buffer {
  validateSnapshot(s, 'snapshot to encode');
  return Buffer.from(JSON.stringify(canonicalSnapshot(s)) + '\n', 'utf8');
}

export function decodeSnapshot(buf: Buffer, idForErrors?: string): Snapshot {
  const what = idForErrors ? `snapshot ${idForErrors}` : 'snapshot';
  if (buf.length > 64 * 1024) throw new FormatError(what, `${buf.length} bytes, more than 64 KiB`);
  let j: unknown;
  try {
    j = JSON.parse(utf8.decode(buf));
  } catch {
    throw new FormatError(what, 'not UTF-8 JSON');
  }
  if (typeof j !== 'object' || j === null || Array.isArray(j)) throw new FormatError(what, 'not a JSON object');
  const o = j as Record<string, unknown>;
  if (o.version !== SNAPSHOT_VERSION && o.version !== SNAPSHOT_VERSION_FEATURES) {
    throw new FormatError(what, `unsupported snapshot version ${JSON.stringify(o.version)} (this homefs reads versions ${SNAPSHOT_VERSION} and ${SNAPSHOT_VERSION_FEATURES}): upgrade homefs`);
  }
  if ((o.version === SNAPSHOT_VERSION_FEATURES) !== (o.features !== undefined)) throw new FormatError(what, `version ${String(o.version)} ${o.features === undefined ? 'without' : 'with'} a features list`);
  const stats = (typeof o.stats === 'object' && o.stats !== null ? o.stats : {}) as Record<string, unknown>;
  const s: Snapshot = {
    root: o.root as string,
    parent: o.parent as string | null,
    home: o.home as string,
    time: o.time as string,
    host: o.host as string,
    stats: { files: stats.files as number, dirs: stats.dirs as number, bytes: stats.bytes as number },
  };
  if (o.rootAttrs !== undefined) {
    const r = (typeof o.rootAttrs === 'object' && o.rootAttrs !== null ? o.rootAttrs : {}) as Record<string, unknown>;
    if (typeof r.mtimeNs !== 'string' || !/^-?(0|[1-9][0-9]{0,18})$/.test(r.mtimeNs)) throw new FormatError(what, 'rootAttrs.mtimeNs is not a decimal string');
    s.rootAttrs = { mode: r.mode as number, uid: r.uid as number, gid: r.gid as number, mtimeNs: BigInt(r.mtimeNs) };
  }
  if (o.reason !== undefined) s.reason = o.reason as string;
  if (o.features !== undefined) s.features = o.features as string[];
  if (o.logTail !== undefined) s.logTail = o.logTail as { gen: number; seq: number };
  validateSnapshot(s, what);
  if (!encodeSnapshot(s).equals(buf)) throw new FormatError(what, 'not in canonical form (unknown fields, key order or whitespace)');
  return s;
}
