/**
 * Unmounts every live FUSE session on every way out of the process: 'exit' (normal end, process.exit,
 * and uncaught exceptions, which Node reports through 'exit' too) and the terminating signals. A signal
 * handler unmounts and then, if nobody else listens for that signal, re-raises it with the default action,
 * so the process still dies the way it would have; if the application has its own handler, that handler
 * decides (the mounts are already gone). SIGKILL cannot be caught: `-o auto_unmount` covers it. The
 * addon's atexit() hook is a last resort for exits that bypass 'exit'.
 */
export interface Closable { close(exiting: boolean): void }

const live = new Set<Closable>();
let installed = false;
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];

function closeAll(exiting: boolean): void {
  for (const s of [...live]) {
    try { s.close(exiting); } catch { /* keep unmounting the others */ }
  }
}

function onSignal(sig: NodeJS.Signals): void {
  closeAll(false);
  if (process.listenerCount(sig) === 1) {
    process.removeListener(sig, onSignal);
    process.kill(process.pid, sig);
  }
}

let exitInstalled = false;

export function track(s: Closable, handleSignals: boolean): void {
  live.add(s);
  if (!exitInstalled) { exitInstalled = true; process.on('exit', () => closeAll(true)); }
  if (!handleSignals || installed) return;
  installed = true;
  for (const sig of SIGNALS) process.on(sig, onSignal);
}

export function untrack(s: Closable): void { live.delete(s); }
