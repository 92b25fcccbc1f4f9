/**
 * A V8 .cpuprofile (`node --cpu-prof`) read for the window tools (cpuwindow.ts, cpuruns.ts): its nodes by id,
 * each node's parent, and a frame's printed name.
 */
import { readFileSync } from 'node:fs';

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileTree {
  profile: Profile;
  byId: Map<number, ProfileNode>;
  parent: Map<number, number>;
}

export function readProfileTree(file: string): ProfileTree {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return { profile, byId, parent };
}

/** `function file:line`, the file shortened to what follows dist/ or node_modules/. */
export function frameName(n: ProfileNode): string {
  const short = n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^file:\/\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${short}:${n.callFrame.lineNumber + 1}`;
}
