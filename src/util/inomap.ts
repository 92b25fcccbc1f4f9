/**
 * A map from inode numbers to numbers in two Float64Arrays: 16 bytes an entry at most 70 % full, where a
 * Map of such numbers costs about 80 (each key and value above 2^31 is a heap number of its own, and every
 * entry a slot in the Map's table). For the hundreds of thousands of entries a daemon may have to remember
 * of a large home (inodes/view.ts).
 *
 * Open addressing with linear probing; a removal shifts the entries after it back (no tombstones). Keys are
 * positive integers below 2^53; 0 marks an empty slot.
 */
const MIN_CAPACITY = 64;

export class InoMap {
  private keys = new Float64Array(MIN_CAPACITY);
  private vals = new Float64Array(MIN_CAPACITY);
  private count = 0;

  get size(): number {
    return this.count;
  }

  has(key: number): boolean {
    return this.keys[this.find(key)] === key;
  }

  get(key: number): number | undefined {
    const i = this.find(key);
    return this.keys[i] === key ? this.vals[i] : undefined;
  }

  set(key: number, value: number): void {
    if (!(key > 0 && Number.isSafeInteger(key))) throw new RangeError(`InoMap key ${key}: a positive integer below 2^53`);
    let i = this.find(key);
    if (this.keys[i] !== key) {
      if ((this.count + 1) * 10 > this.keys.length * 7) {
        this.resize(this.keys.length * 2);
        i = this.find(key);
      }
      this.keys[i] = key;
      this.count++;
    }
    this.vals[i] = value;
  }

  delete(key: number): boolean {
    const mask = this.keys.length - 1;
    let i = this.find(key);
    if (this.keys[i] !== key) return false;
    // Backward shift: move each later entry of the run into the hole if its home slot allows it.
    for (let j = (i + 1) & mask; this.keys[j] !== 0; j = (j + 1) & mask) {
      const home = slot(this.keys[j] as number, mask);
      if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
        this.keys[i] = this.keys[j] as number;
        this.vals[i] = this.vals[j] as number;
        i = j;
      }
    }
    this.keys[i] = 0;
    this.count--;
    if (this.keys.length > MIN_CAPACITY && this.count * 10 < this.keys.length) this.resize(this.keys.length / 2);
    return true;
  }

  /** The slot holding `key`, or the empty slot where it would go. */
  private find(key: number): number {
    const mask = this.keys.length - 1;
    let i = slot(key, mask);
    while (this.keys[i] !== 0 && this.keys[i] !== key) i = (i + 1) & mask;
    return i;
  }

  private resize(capacity: number): void {
    const { keys, vals } = this;
    this.keys = new Float64Array(capacity);
    this.vals = new Float64Array(capacity);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i] as number;
      if (k !== 0) {
        const at = this.find(k);
        this.keys[at] = k;
        this.vals[at] = vals[i] as number;
      }
    }
  }
}

/** Home slot of `key`: both 32-bit halves mixed (derived numbers differ high, created ones low). */
function slot(key: number, mask: number): number {
  const lo = key % 4294967296;
  const hi = (key - lo) / 4294967296;
  let h = Math.imul((lo ^ Math.imul(hi, 0x9e3779b1)) | 0, 0x85ebca6b);
  h ^= h >>> 15;
  return h & mask;
}
