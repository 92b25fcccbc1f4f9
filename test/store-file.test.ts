/** The `file://` store (the embedded default) against the Store conformance suite, in a temp directory. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { FileStore } from '../src/store/file.js';
import { storeConformance } from './support/store-conformance.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

storeConformance('file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'homefs-store-file-'));
  dirs.push(dir);
  return new FileStore(join(dir, 'store')).init();
});
