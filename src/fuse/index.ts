/**
 * homefs FUSE binding: `mount(mountpoint, ops, opts)` serves `ops` (see types.ts) on a real mount through
 * the native addon (native/, libfuse3 low-level API on Node's main loop). Handlers run on the main thread;
 * they must answer every request exactly once, synchronously or later, and must never do synchronous I/O
 * on their own mountpoint.
 */
import { accessSync, constants, readFileSync, statSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { MountOptions, Ops, Session } from './types.js';
import { loadAddon, type NativeReplies } from './native.js';
import { FuseSession } from './session.js';
import { track, untrack } from './exit-hooks.js';

export type * from './types.js';
export type { NativeReplies } from './native.js';

function escapeOpt(v: string): string { return v.replace(/\\/g, '\\\\').replace(/,/g, '\\,'); }

function isMountPoint(abs: string): boolean {
  try {
    const lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
    // field 5 is the mount point, octal-escaped
    return lines.some((l) => l.split(' ')[4]?.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))) === abs);
  } catch { return false; }
}

function precheck(abs: string): void {
  // Before any stat: a stat of a live mount served by this very process would deadlock.
  if (isMountPoint(abs)) throw new Error(`cannot mount on ${abs}: busy (already a mount point; a dead FUSE mount is removed with: fusermount3 -u ${abs})`);
  let st;
  try { st = statSync(abs); } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTCONN') throw new Error(`cannot mount on ${abs}: a dead FUSE mount is there (transport endpoint is not connected); run: fusermount3 -u ${abs}`);
    throw new Error(`cannot mount on ${abs}: ${code === 'ENOENT' ? 'no such directory' : (e as Error).message}`);
  }
  if (!st.isDirectory()) throw new Error(`cannot mount on ${abs}: not a directory`);
  if (!existsSync(FUSE_DEVICE)) throw new Error(`cannot mount: ${FUSE_DEVICE} is missing (load the fuse module, or give the container --device /dev/fuse)`);
  try {
    accessSync(FUSE_DEVICE, constants.R_OK | constants.W_OK);
  } catch {
    // fusermount3 opens the device as the calling user, so a non-root mount needs this too
    throw new Error(`cannot mount: ${FUSE_DEVICE} is not readable and writable by this user (uid ${process.getuid?.() ?? '?'}); ` +
      `give it mode 0666 (the usual) or run as root, and in a container pass --device /dev/fuse`);
  }
}

const FUSE_DEVICE = '/dev/fuse';

/** Why fuse_session_mount may have failed, from what can be checked here; libfuse also said why on stderr. */
function mountFailureHint(abs: string, opts: MountOptions): string {
  const uid = process.getuid?.() ?? 0;
  if (uid === 0) return 'libfuse printed the reason on stderr: the daemon log, for a mount in the background';
  if (opts.allowOther) {
    let conf = '';
    try { conf = readFileSync('/etc/fuse.conf', 'utf8'); } catch { /* no fuse.conf: not allowed */ }
    if (!/^\s*user_allow_other\b/m.test(conf)) return 'allow_other needs user_allow_other in /etc/fuse.conf for a non-root user; add it, or drop --allow-other';
  }
  try { accessSync(abs, constants.W_OK); } catch { return `a non-root user must be able to write to the mountpoint ${abs}; chown it to uid ${uid}`; }
  return 'fusermount3 printed the reason on stderr: the daemon log, for a mount in the background';
}

export function mountArgs(opts: MountOptions): string[] {
  const o = [`fsname=${escapeOpt(opts.fsname ?? 'homefs')}`, `subtype=${escapeOpt(opts.subtype ?? 'homefs')}`];
  if (opts.allowOther) o.push('allow_other');
  if (opts.defaultPermissions) o.push('default_permissions');
  if (opts.readOnly) o.push('ro');
  if (opts.autoUnmount ?? true) o.push('auto_unmount');
  if (opts.debug) o.push('debug');
  return ['-o', o.join(',')];
}

/** Mounts `ops` on `mountpoint`; throws an Error with a one-line message if that fails. */
export function mount(mountpoint: string, ops: Ops, opts: MountOptions = {}): Session {
  const abs = path.resolve(mountpoint);
  precheck(abs);
  const addon = loadAddon();
  const session = new FuseSession(addon, undefined, abs, untrack);
  let handle;
  try {
    handle = addon.mount(abs, mountArgs(opts), ops, (reason) => session.externallyUnmounted(reason),
      opts.writebackCache ?? false, opts.maxWrite ?? 0, opts.spinUs ?? 0, opts.handleKillpriv ?? false, opts.idlePollUs ?? 0,
      opts.passthrough ?? false);
  } catch (e) {
    throw new Error(`cannot mount on ${abs}: ${(e as Error).message.replace(/\s+/g, ' ')} (${mountFailureHint(abs, opts)})`);
  }
  session.attach(handle);
  track(session, opts.handleSignals ?? true);
  return session;
}

/**
 * How WRITE payloads reached handlers in this process: as views of a pooled receive buffer (`lent`) or as
 * copies (`copied`: the pool had none to spare); `pool` buffers exist, at most `maxLent` were lent at once.
 */
export function writeBufferStats(): { lent: number; copied: number; pool: number; maxLent: number } {
  return loadAddon().writeBufferStats();
}

/** Requests the binding answered without calling a handler in this process (getxattr, listxattr of inodes marked with markNoXattrs). */
export function nativeReplies(): NativeReplies {
  return loadAddon().nativeReplies();
}

/** Requests this process served in the awake wait, and after a wake-up of the loop (native/src/session.c). */
export function servedStats(): { awake: number; woken: number } {
  return loadAddon().servedStats();
}

/** Why the awake waits ended: loop_due, served_max, no_request, loop_ready, preempted; and turns that skipped theirs (skipped). */
export function waitEnds(): Record<string, number> {
  return loadAddon().waitEnds();
}
