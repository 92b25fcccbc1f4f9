/**
 * Names of orgs and homes, and references like `org/home@snapshot`. Names are validated here before they
 * ever become store keys or local paths, so nothing downstream needs to worry about `..` or `/`.
 */
import { UserError } from './errors.js';

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const SNAP = /^[0-9a-f]{6,64}$/;

export function validateName(kind: 'org' | 'home', name: string): string {
  if (!NAME.test(name) || name.includes('..')) {
    throw new UserError(`invalid ${kind} name '${name}': use 1-63 of [a-z0-9._-], starting with a letter or digit`);
  }
  return name;
}

export interface HomeRef {
  org: string;
  home: string;
  /** Snapshot id or unique prefix (hex), when given as `org/home@snap`. */
  snapshot?: string;
}

/** Parses `org/home` or `org/home@snapshot`. */
export function parseHomeRef(ref: string, allowSnapshot = true): HomeRef {
  const at = ref.indexOf('@');
  const base = at >= 0 ? ref.slice(0, at) : ref;
  const snap = at >= 0 ? ref.slice(at + 1) : undefined;
  const parts = base.split('/');
  if (parts.length !== 2) throw new UserError(`invalid home '${ref}': expected <org>/<home>${allowSnapshot ? '[@<snapshot>]' : ''}`);
  const org = validateName('org', parts[0] ?? '');
  const home = validateName('home', parts[1] ?? '');
  if (snap !== undefined) {
    if (!allowSnapshot) throw new UserError(`invalid home '${ref}': a snapshot is not allowed here`);
    if (!SNAP.test(snap)) throw new UserError(`invalid snapshot '${snap}': expected 6-64 lowercase hex digits`);
    return { org, home, snapshot: snap };
  }
  return { org, home };
}

export function formatHomeRef(r: HomeRef): string {
  return `${r.org}/${r.home}${r.snapshot ? `@${r.snapshot}` : ''}`;
}
