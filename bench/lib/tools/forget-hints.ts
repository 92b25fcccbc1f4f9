/**
 * Removes the hints a session leaves for the next wake of a home (the hot-set record and its wake pack),
 * so that the next mount wakes as on a never-mounted home again, with only what `homefs push` stored (the
 * namespace pack stays). Used between the rounds of bench/find-cold.sh:
 *
 *   node dist/bench/lib/tools/forget-hints.js <store url> <org>/<home>
 */
import { openStore } from '../../../src/store/open.js';
import { hotsetKey, wakePackKey } from '../../../src/store/keys.js';

const [url, ref] = process.argv.slice(2);
const [org, home] = (ref ?? '').split('/');
if (!url || !org || !home) {
  process.stderr.write('usage: forget-hints <store url> <org>/<home>\n');
  process.exit(2);
}
const store = await openStore(url);
for (const key of [hotsetKey(org, home), wakePackKey(org, home)]) await store.delete(key);
await store.close();
