/**
 * Locality: how much of a home's HEAD is already in this host's block cache — the signal a scheduler uses
 * to place the home on the runner that has its blocks. Reads the live snapshot's trees (HEAD, or what was
 * fsync'd since: its log segment, fsynclog/homelog.ts `liveHead`) from the store and
 * checks, without reading them, which of its blocks exist as files in the org's on-disk cache
 * (`<cache-dir>/<org>/blocks/<h[0:2]>/<hash>`, cache/diskfiles.ts). Each unique block counts once.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DiskFiles } from '../cache/diskfiles.js';
import { liveHead } from '../fsynclog/homelog.js';
import type { ObjectStore } from '../format/objects.js';
import { mapLimit } from '../util/concurrency.js';
import { UserError } from '../util/errors.js';
import { emptyReachable, markSnapshot } from './refs.js';

export interface LocalityResult {
  home: string;
  snapshot: string;
  cacheDir: string;
  blocks: number;
  blocksCached: number;
  bytes: number;
  bytesCached: number;
  /** bytesCached / bytes (1 for a home without data). */
  ratio: number;
}

export async function homeLocality(objects: ObjectStore, home: string, cacheDir: string): Promise<LocalityResult> {
  const live = await liveHead(objects, home);
  if (!live.snapshot) throw new UserError(`home ${objects.org}/${home} has no snapshots in ${objects.store.url}`);
  const reach = emptyReachable();
  await markSnapshot(live.objects, live.snapshot, reach);
  const files = new DiskFiles(join(cacheDir, objects.org));
  let blocksCached = 0;
  let bytesCached = 0;
  let bytes = 0;
  await mapLimit([...reach.blocks.entries()], 64, async ([hash, size]) => {
    bytes += size;
    try {
      const st = await stat(files.path('block', hash));
      if (st.isFile() && st.size === size) {
        blocksCached++;
        bytesCached += size;
      }
    } catch {
      // absent: not cached
    }
  });
  return {
    home: `${objects.org}/${home}`, snapshot: live.snapshot, cacheDir, blocks: reach.blocks.size, blocksCached, bytes, bytesCached,
    ratio: bytes === 0 ? 1 : bytesCached / bytes,
  };
}
