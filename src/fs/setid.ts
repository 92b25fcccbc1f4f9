/**
 * Clearing setuid and setgid the way the kernel does on a local filesystem. With FUSE_HANDLE_KILLPRIV_V2 the
 * kernel no longer clears the bits itself: it flags the request (FATTR_KILL_SUIDGID on a chown or truncate,
 * FUSE_WRITE_KILL_SUIDGID on a write, FUSE_OPEN_KILL_SUIDGID on an O_TRUNC open) and leaves the rule to us.
 *
 * The rule (fs/open.c chown_common, fs/attr.c setattr_should_drop_sgid, fs/inode.c should_remove_suid):
 * - a chown of anything but a directory always loses setuid, even by root; a write or truncate flagged by
 *   the kernel loses it too (the kernel flags those only for a caller without CAP_FSETID);
 * - setgid is lost when the file is also group-executable (the pair means "setgid program"; setgid alone
 *   means mandatory locking and stays), or when the caller is neither privileged nor in the file's group;
 * - a directory keeps both (setgid on a directory is group inheritance, not a privilege).
 *
 * Group membership needs the caller's supplementary groups, which FUSE does not send: they are read from
 * /proc only in the one case that needs them (setgid without group execute, a caller outside the file's
 * primary group), as libfuse's fuse_req_getgroups does. If /proc cannot tell, the bit goes (the safe side).
 */
import { readFileSync } from 'node:fs';

/** What the rule needs of the file. */
export interface SetidFile { kind: string; mode: number; gid: number }

/** What the rule needs of the caller: its fsuid/fsgid and the thread that made the request. */
export interface SetidCaller { uid: number; gid: number; pid: number }

const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
const S_IXGRP = 0o010;

/**
 * The mode after a request the kernel flagged for clearing, or undefined when nothing changes. `chown`: the
 * request is a chown (root loses setuid too); otherwise a write or truncate, flagged only for an unprivileged
 * caller.
 */
export function clearedSetidMode(file: SetidFile, caller: SetidCaller, chown: boolean, groupsOf = procGroups): number | undefined {
  if (file.kind === 'dir' || (file.mode & (S_ISUID | S_ISGID)) === 0) return undefined;
  const privileged = chown && caller.uid === 0;
  const dropGid = (file.mode & S_ISGID) !== 0 &&
    ((file.mode & S_IXGRP) !== 0 || (!privileged && !inGroup(caller, file.gid, groupsOf)));
  const mode = file.mode & ~(S_ISUID | (dropGid ? S_ISGID : 0));
  return mode === file.mode ? undefined : mode;
}

function inGroup(caller: SetidCaller, gid: number, groupsOf: (pid: number) => number[] | null): boolean {
  if (caller.gid === gid) return true;
  return groupsOf(caller.pid)?.includes(gid) ?? false;
}

/** The supplementary groups of a thread, from /proc (null when it is gone or the line is missing). */
export function procGroups(pid: number): number[] | null {
  if (!(pid > 0)) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const line = /^Groups:([^\n]*)$/m.exec(status);
    if (!line) return null;
    return (line[1] ?? '').trim().split(/\s+/).filter((g) => g !== '').map(Number);
  } catch {
    return null;
  }
}
