/**
 * A preload that prints the process's memory every 5 s to stderr, for a command whose peak RSS is to be
 * explained (how much is V8 heap, how much array buffers, how much neither):
 *
 *   NODE_OPTIONS="--import $PWD/dist/bench/lib/tools/memlog.js" bin/homefs push <dir> <org/home> --store <url>
 *
 * Worker threads load it too; their lines carry `thread=<id>` (the main thread's is 0). Sizes in MB.
 * MEMLOG_MS sets the interval (default 5000).
 */
import { writeSync } from 'node:fs';
import { threadId } from 'node:worker_threads';

const t0 = Date.now();
const mb = (n: number): string => (n / 1e6).toFixed(0);
setInterval(() => {
  const m = process.memoryUsage();
  writeSync(2, `MEM thread=${threadId} t=${((Date.now() - t0) / 1000).toFixed(0)} rss=${mb(m.rss)} heapUsed=${mb(m.heapUsed)} heapTotal=${mb(m.heapTotal)} external=${mb(m.external)} arrayBuffers=${mb(m.arrayBuffers)}\n`);
}, Number(process.env.MEMLOG_MS ?? 5000)).unref();
