/**
 * Loads one of the project's compiled N-API addons (native/build/Release/<name>.node, built by
 * `npm install` through node-gyp): homefs_fuse (src/fuse/), homefs_sys (src/daemon/) and homefs_files
 * (src/transfer/filewriter.ts).
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export function loadNativeAddon(name: string): unknown {
  // dist/src/util/addon.js and src/util/addon.ts both sit two or three levels below the repo root.
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '../../..']) {
    const p = path.resolve(here, up, `native/build/Release/${name}.node`);
    if (existsSync(p)) return createRequire(import.meta.url)(p);
  }
  throw new Error(`homefs addon not built (native/build/Release/${name}.node missing): run \`npm install\` (needs libfuse3-dev, python3, make, a C compiler)`);
}
