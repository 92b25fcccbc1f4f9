/**
 * `homefs cat <org>/<home>[@snap] <path>`: write a file of a snapshot to stdout, every block verified
 * before it is written (a corrupted block stops the output with an error naming the path).
 */
import type { Command } from 'commander';
import { once } from 'node:events';
import { ObjectStore } from '../format/objects.js';
import { fileContent, resolveHomeSnapshot, resolvePath } from '../transfer/walk.js';
import { UserError } from '../util/errors.js';
import { parseHomeRef } from '../util/names.js';
import { addStoreOption, exitQuietlyOnEpipe, withStore } from './store-option.js';

export function register(program: Command): void {
  addStoreOption(
    program
      .command('cat')
      .description('print a file of a snapshot of <org>/<home> (HEAD unless @<snapshot>)')
      .argument('<home>', '<org>/<home>[@<snapshot>]')
      .argument('<path>', 'path of a regular file inside the snapshot'),
  ).action(async (ref: string, path: string, opts: { store?: string }) => {
    const { org, home, snapshot } = parseHomeRef(ref);
    await withStore(opts.store, {}, async (store) => {
      const { snapshot: id, objects } = await resolveHomeSnapshot(new ObjectStore(store, org), home, snapshot);
      const snap = await objects.getSnapshot(id);
      const { entry, path: p } = await resolvePath(objects, snap.root, path);
      if (!entry || entry.kind !== 'file') throw new UserError(`${p || '/'}: not a regular file (${entry?.kind ?? 'dir'})`);
      exitQuietlyOnEpipe();
      for await (const chunk of fileContent(objects, entry, p)) {
        if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
      }
    });
  });
}
