/**
 * Where a mount's fsyncs go (fsynclog/homelog.ts): the log of HEAD generation `gen`, its next sequence
 * number, and the chain of earlier segments a new segment may rely on (format.md "Chained segments"): those
 * of this writer that landed, from `floor` on, with the store keys of their objects, which it leaves out.
 */
import { MAX_CHAIN } from '../fsynclog/homelog.js';

export interface Chain {
  floor: number;
  seqs: number[];
  keys: Set<string>;
}

export function newChain(floor: number): Chain {
  return { floor, seqs: [], keys: new Set() };
}

export interface LogState {
  gen: number;
  nextSeq: number;
  /** HEAD's snapshot lets readers expect chained segments (feature `log-chain`). */
  chained: boolean;
  chain: Chain;
}

/**
 * What segment `seq` of log `l` may rely on: its chain, unless readers do not expect chains or the chain is
 * full (then this segment is whole and starts a new chain).
 */
export function chainFor(l: LogState, seq: number): Chain {
  if (!l.chained) return newChain(seq);
  if (l.chain.seqs.length >= MAX_CHAIN) l.chain = newChain(seq);
  return l.chain;
}

/** Segment `seq` of log `l`, written relying on `chain`, landed with objects `keys`: later segments may rely on it. */
export function chainLanded(l: LogState, chain: Chain, seq: number, keys: readonly string[]): void {
  if (l.chain !== chain || seq < chain.floor) return;
  chain.seqs.push(seq);
  for (const k of keys) chain.keys.add(k);
}
