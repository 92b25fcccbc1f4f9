/**
 * `homefs locality <org>/<home> [--cache-dir DIR]`: bytes of the home's HEAD already in this host's block
 * cache, total bytes and the ratio; a scheduler prefers the runner with the highest ratio.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { dataDir } from '../config.js';
import { ObjectStore } from '../format/objects.js';
import { homeLocality } from '../ops/locality.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, formatBytes, withStore } from './store-option.js';

export function register(program: Command): void {
  addStoreOption(
    program
      .command('locality')
      .description("how much of <org>/<home>'s HEAD is in this host's block cache (bytes cached, total, ratio)")
      .argument('<home>', '<org>/<home>'),
  )
    .option('--cache-dir <dir>', 'the block cache directory the mounts of this host use (default: the data directory\'s cache)')
    .option('--json', 'print the result as one JSON object')
    .action(async (ref: string, o: { store?: string; cacheDir?: string; json?: boolean }) => {
      const { org, home } = parseHomeRef(ref, false);
      const cacheDir = o.cacheDir ?? join(dataDir(), 'cache');
      const r = await withStore(o.store, {}, (store) => homeLocality(new ObjectStore(store, org), home, cacheDir));
      if (o.json) {
        process.stdout.write(JSON.stringify(r) + '\n');
        return;
      }
      process.stdout.write(
        `${r.home}: ${formatBytes(r.bytesCached)} of ${formatBytes(r.bytes)} cached (${(r.ratio * 100).toFixed(1)}%), ${r.blocksCached}/${r.blocks} blocks, cache ${r.cacheDir}\n`,
      );
    });
}
