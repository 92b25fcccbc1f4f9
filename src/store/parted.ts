/**
 * Writes one object a part at a time, holding one part in memory instead of the whole object: through the
 * store's multipart uploads (store.ts `Uploads`) when the object outgrows one part, else with one `put`.
 * The wake pack at sleep goes through it (home/hotset.ts), as it is read out of the cache.
 *
 * Nothing is visible under the key until `finish`; `abort` (or a failed `finish`) leaves nothing behind but
 * an upload that gc aborts once old.
 */
import type { Store } from './store.js';

export class PartedPut {
  private part: Buffer;
  private used = 0;
  private id: Promise<string> | undefined;
  private readonly etags: string[] = [];
  /** Bytes written so far. */
  bytes = 0;

  constructor(private readonly store: Store, private readonly key: string, partBytes: number) {
    this.part = Buffer.allocUnsafe(Math.max(partBytes, store.uploads?.minPartBytes ?? 0));
  }

  /** Appends `data` (copied: the caller may reuse it). */
  async write(data: Uint8Array): Promise<void> {
    let at = 0;
    while (at < data.length) {
      if (this.used === this.part.length) await this.flush();
      const n = Math.min(data.length - at, this.part.length - this.used);
      this.part.set(data.subarray(at, at + n), this.used);
      this.used += n;
      at += n;
    }
    this.bytes += data.length;
  }

  /** Sends the full part: the first one starts the upload (a store without uploads gets the whole object in one part). */
  private async flush(): Promise<void> {
    const uploads = this.store.uploads;
    if (!uploads) {
      const bigger = Buffer.allocUnsafe(this.part.length * 2);
      this.part.copy(bigger);
      this.part = bigger;
      return;
    }
    this.id ??= uploads.start(this.key);
    const id = await this.id;
    this.etags.push(await uploads.part(this.key, id, this.etags.length + 1, this.part.subarray(0, this.used)));
    this.used = 0;
  }

  /** Makes the object visible under the key: one `put` if it never outgrew a part, else the upload's last part and its completion. */
  async finish(): Promise<void> {
    const uploads = this.store.uploads;
    if (!this.id || !uploads) {
      await this.store.put(this.key, this.part.subarray(0, this.used));
      return;
    }
    try {
      const id = await this.id;
      if (this.used > 0) this.etags.push(await uploads.part(this.key, id, this.etags.length + 1, this.part.subarray(0, this.used)));
      await uploads.complete(this.key, id, this.etags);
    } catch (e) {
      await this.abort();
      throw e;
    }
  }

  /** Drops the upload, if one was started. */
  async abort(): Promise<void> {
    const id = await this.id?.catch(() => undefined);
    if (id !== undefined) await this.store.uploads?.abort(this.key, id).catch(() => undefined);
  }
}
