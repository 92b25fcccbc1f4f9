/**
 * The one progress display for all long work (push, pull, gc, verify --full): a one-line bar on stderr.
 * Drawn only when stderr is a TTY and only once the work has run for `delayMs` (default 1 s), at most
 * every 200 ms; when piped it prints nothing at all, so scripts and logs never see control characters.
 * The work itself only reports numbers through an `onProgress` callback (phase, done, total for gc and
 * verify; its counters for push and pull); commands turn them into `update` calls.
 */

export interface Progress {
  /** Records the state; `total` 0 means unknown (a counter instead of a bar); `detail` follows the bar. */
  update(phase: string, done: number, total: number, detail?: string): void;
  /** Clears the timer and ends the line if anything was drawn. */
  stop(): void;
}

export interface ProgressOptions {
  stream?: NodeJS.WriteStream;
  delayMs?: number;
  /** How `done`/`total` are printed (e.g. formatBytes); default: plain numbers. */
  format?: (n: number) => string;
}

const WIDTH = 30;

export function renderBar(phase: string, done: number, total: number, format: (n: number) => string = String, detail?: string): string {
  const tail = detail ? `, ${detail}` : '';
  if (total <= 0) return `${phase}: ${format(done)}${tail}`;
  const frac = Math.max(0, Math.min(1, done / total));
  const full = Math.round(frac * WIDTH);
  return `${phase} [${'#'.repeat(full)}${'.'.repeat(WIDTH - full)}] ${(frac * 100).toFixed(0).padStart(3)}% ${format(done)}/${format(total)}${tail}`;
}

export function progressBar(opts: ProgressOptions = {}): Progress {
  const stream = opts.stream ?? process.stderr;
  if (!stream.isTTY) return { update: () => undefined, stop: () => undefined };
  const start = Date.now();
  const delay = opts.delayMs ?? 1000;
  let last: [string, number, number, string | undefined] | null = null;
  let shown = false;
  const draw = (): void => {
    if (!last || Date.now() - start < delay) return;
    shown = true;
    stream.write(`\r\x1b[K${renderBar(last[0], last[1], last[2], opts.format, last[3])}`);
  };
  const timer = setInterval(draw, 200);
  timer.unref();
  return {
    update: (phase, done, total, detail) => {
      last = [phase, done, total, detail];
    },
    stop: () => {
      clearInterval(timer);
      draw();
      if (shown) stream.write('\n');
    },
  };
}
