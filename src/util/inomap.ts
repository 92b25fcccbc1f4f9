/**
 * Maps keyed by inode numbers, in open-addressing tables over a Float64Array of keys: `InoMap` to numbers
 * (the values in a second Float64Array, 16 bytes an entry at most 70 % full), `InoTable` to objects (the
 * values in an array). A Map keyed by such numbers costs about 80 bytes an entry (each key above 2^31 is a
 * heap number of its own, and every entry a slot in the Map's table), and each lookup hashes the key's heap
 * number and follows a chain through the table and the keys it compares: a first `find` over a large home
 * makes a dozen lookups per entry in the daemon's maps of records and kernel references (inodes/journal.ts,
 * inodes/view.ts). Here a lookup is a hash of the number and a probe of adjacent slots.
 *
 * Linear probing; a removal shifts the entries after it back (no tombstones). Keys are positive integers
 * below 2^53; 0 marks an empty slot. Iteration order is not insertion order (neither class iterates).
 */
const MIN_CAPACITY = 64;

/** The key slots, shared by both tables; the subclass keeps the values at the same indexes. */
abstract class InoSlots {
  protected keys = new Float64Array(MIN_CAPACITY);
  private count = 0;

  get size(): number {
    return this.count;
  }

  has(key: number): boolean {
    return key !== 0 && this.keys[this.find(key)] === key;
  }

  delete(key: number): boolean {
    const mask = this.keys.length - 1;
    let i = this.find(key);
    if (key === 0 || this.keys[i] !== key) return false;
    // Backward shift: move each later entry of the run into the hole if its home slot allows it.
    for (let j = (i + 1) & mask; this.keys[j] !== 0; j = (j + 1) & mask) {
      const home = slot(this.keys[j] as number, mask);
      if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
        this.keys[i] = this.keys[j] as number;
        this.moveValue(j, i);
        i = j;
      }
    }
    this.keys[i] = 0;
    this.clearValue(i);
    this.count--;
    if (this.keys.length > MIN_CAPACITY && this.count * 10 < this.keys.length) this.resize(this.keys.length / 2);
    return true;
  }

  /** The slot holding `key`, or the empty slot where it would go. */
  protected find(key: number): number {
    const mask = this.keys.length - 1;
    let i = slot(key, mask);
    while (this.keys[i] !== 0 && this.keys[i] !== key) i = (i + 1) & mask;
    return i;
  }

  /** The slot for `key`, made (the table grown if need be) when it has none; the caller sets its value. */
  protected slotFor(key: number): number {
    if (!(key > 0 && Number.isSafeInteger(key))) throw new RangeError(`inode-number key ${key}: a positive integer below 2^53`);
    let i = this.find(key);
    if (this.keys[i] !== key) {
      if ((this.count + 1) * 10 > this.keys.length * 7) {
        this.resize(this.keys.length * 2);
        i = this.find(key);
      }
      this.keys[i] = key;
      this.count++;
    }
    return i;
  }

  private resize(capacity: number): void {
    const keys = this.keys;
    this.keys = new Float64Array(capacity);
    this.startValues(capacity);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as number;
      if (k !== 0) {
        const at = this.find(k);
        this.keys[at] = k;
        this.takeValue(i, at);
      }
    }
    this.endValues();
  }

  /** The value at slot `from` moves to slot `to` (a removal's shift). */
  protected abstract moveValue(from: number, to: number): void;
  /** Slot `i` is empty now. */
  protected abstract clearValue(i: number): void;
  /** A resize: new values of `capacity` slots; the old ones stay readable by `takeValue` until it ends. */
  protected abstract startValues(capacity: number): void;
  /** A resize: the old values' slot `from` goes to the new values' slot `to`. */
  protected abstract takeValue(from: number, to: number): void;
  /** A resize is over: the old values go. */
  protected abstract endValues(): void;
}

/** Inode number → number. */
export class InoMap extends InoSlots {
  private vals = new Float64Array(MIN_CAPACITY);
  private old: Float64Array = this.vals;

  get(key: number): number | undefined {
    const i = this.find(key);
    return key !== 0 && this.keys[i] === key ? this.vals[i] : undefined;
  }

  set(key: number, value: number): void {
    const i = this.slotFor(key); // (before `this.vals` is read: it may grow the table)
    this.vals[i] = value;
  }

  protected moveValue(from: number, to: number): void { this.vals[to] = this.vals[from] as number; }
  protected clearValue(i: number): void { this.vals[i] = 0; }
  protected startValues(capacity: number): void { this.old = this.vals; this.vals = new Float64Array(capacity); }
  protected takeValue(from: number, to: number): void { this.vals[to] = this.old[from] as number; }
  protected endValues(): void { this.old = this.vals; }
}

/** Inode number → object (a record, a directory's entries). */
export class InoTable<V extends object> extends InoSlots {
  private vals: Array<V | undefined> = new Array<V | undefined>(MIN_CAPACITY).fill(undefined);
  private old: Array<V | undefined> = this.vals;

  get(key: number): V | undefined {
    const i = this.find(key);
    return key !== 0 && this.keys[i] === key ? this.vals[i] : undefined;
  }

  set(key: number, value: V): this {
    const i = this.slotFor(key); // (before `this.vals` is read: it may grow the table)
    this.vals[i] = value;
    return this;
  }

  protected moveValue(from: number, to: number): void { this.vals[to] = this.vals[from]; }
  protected clearValue(i: number): void { this.vals[i] = undefined; }
  protected startValues(capacity: number): void { this.old = this.vals; this.vals = new Array<V | undefined>(capacity).fill(undefined); }
  protected takeValue(from: number, to: number): void { this.vals[to] = this.old[from]; }
  protected endValues(): void { this.old = this.vals; }
}

/** Home slot of `key`: both 32-bit halves mixed (derived numbers differ high, created ones low). */
function slot(key: number, mask: number): number {
  const lo = key % 4294967296;
  const hi = (key - lo) / 4294967296;
  let h = Math.imul((lo ^ Math.imul(hi, 0x9e3779b1)) | 0, 0x85ebca6b);
  h ^= h >>> 15;
  return h & mask;
}
