/**
 * The inode numbers a mount serves, by range. A leaf module: the journal allocates them, the tree codec
 * validates recorded ones, push and seal record them.
 *
 * git's index keeps each tracked file's stat data (low 32 bits of st_ino, mtime, ctime, size, uid, gid) and
 * re-reads every file whose data differs: so that `git status` after a move reads no file, a home serves the
 * same numbers on every host. Trees record them (tree version 3, `ino`), for every number outside the
 * counter range ("portable"), and a mount serves a recorded number whenever no other inode of the mount
 * already has it.
 *
 * - counter [1, 2^40): the journal's counter; only meaningful on the host that handed it out, never recorded
 *   (each host's counter would hand the same numbers out again). Used when nothing better is free.
 * - derived [2^40, 2^52): hash of what names an entry the same way on every host (its parent's number and its
 *   name, or its hard-link id), for entries loaded from trees that record no number.
 * - pushed [2^52, 2^52 + 2^51): 2^52 + (st_ino mod 2^51) of the pushed directory's file: the same low 32 bits
 *   as the source file's st_ino, so an index git wrote on the pushing host still matches.
 * - created [2^52 + 2^51, 2^53): files created in a mount: the journal's random base plus its counter (mod
 *   2^51), so one journal never hands the same number out twice and two journals rarely meet.
 *
 * Every number is below 2^53: exact in a JS number, and in the FUSE binding's doubles.
 */

export const DERIVED_INO_BASE = 2 ** 40;
export const PUSHED_INO_BASE = 2 ** 52;
export const CREATED_INO_BASE = 2 ** 52 + 2 ** 51;
/** One past the largest number served. */
export const INO_LIMIT = 2 ** 53;
/** Size of the pushed and the created ranges. */
export const HALF_SPAN = 2 ** 51;

/** A number a tree may record: any but the counter's. */
export function isPortableIno(ino: number): boolean {
  return Number.isInteger(ino) && ino >= DERIVED_INO_BASE && ino < INO_LIMIT;
}

/** Whether `ino` was derived from a name (the derived range). */
export function isDerivedIno(ino: number): boolean {
  return ino >= DERIVED_INO_BASE && ino < PUSHED_INO_BASE;
}

/** The number push records for a file of the pushed directory's device with inode number `stIno`. */
export function pushedIno(stIno: bigint): number {
  return PUSHED_INO_BASE + Number(stIno % BigInt(HALF_SPAN));
}

/** The created-range number of a journal's counter value `n`, for the journal's random `base` in [0, 2^51). */
export function createdIno(base: number, n: number): number {
  return CREATED_INO_BASE + ((base + n) % HALF_SPAN);
}
