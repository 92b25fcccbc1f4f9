/**
 * The order of content changes to one file (content.ts). Each change holds a byte range of the file, or
 * all of it: it starts once every earlier change whose range overlaps its own has settled, and runs beside
 * earlier changes that do not overlap. So non-overlapping writes to one file run their pwrite at the same
 * time, while overlapping writes keep their arrival order, and a change that holds the whole file (a
 * truncate, a copy-up, a seal's capture) runs alone: after every earlier change, before every later one.
 */

interface Held {
  start: number;
  end: number;
  /** Settles (never rejects) when the change has run. */
  done: Promise<unknown>;
}

export class RangeLocks {
  private readonly held = new Map<number, Held[]>();

  /** Runs `fn` holding bytes [start, end) of `key` (an empty range holds the byte at `start`). */
  run<T>(key: number, start: number, end: number, fn: () => Promise<T>): Promise<T> {
    const list = this.held.get(key) ?? [];
    const last = Math.max(end, start + 1);
    const before: Array<Promise<unknown>> = [];
    for (const h of list) if (h.start < last && start < h.end) before.push(h.done);
    const ran = (before.length === 0 ? Promise.resolve() : Promise.all(before)).then(fn);
    const entry: Held = { start, end: last, done: ran.catch(() => undefined) };
    list.push(entry);
    this.held.set(key, list);
    void entry.done.then(() => {
      const i = list.indexOf(entry);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0 && this.held.get(key) === list) this.held.delete(key);
    });
    return ran;
  }

  /** Runs `fn` holding the whole of `key`. */
  whole<T>(key: number, fn: () => Promise<T>): Promise<T> {
    return this.run(key, 0, Infinity, fn);
  }
}
