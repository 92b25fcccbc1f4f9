/** The process's effective Linux capabilities (/proc/self/status CapEff), by number. */
import { readFileSync } from 'node:fs';

export const CAP_CHOWN = 0;
export const CAP_FOWNER = 3;
export const CAP_SYS_ADMIN = 21;

/** Whether every capability named is effective; undefined when /proc does not say. */
export function hasCaps(...caps: number[]): boolean | undefined {
  try {
    const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (eff === undefined) return undefined;
    const set = BigInt(`0x${eff}`);
    return caps.every((c) => (set & (1n << BigInt(c))) !== 0n);
  } catch {
    return undefined;
  }
}
