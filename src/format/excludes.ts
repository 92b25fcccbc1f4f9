/**
 * Gitignore-like exclude matching for sealing and push (patterns from config.ts `excludePatterns()`).
 *
 * Supported syntax, a subset of gitignore that covers the scrap class:
 *   - a trailing `/` matches directories only (`__pycache__/`);
 *   - a pattern without a `/` other than a trailing one matches a basename at any depth (`*.pyc`, `node_modules/`);
 *   - a pattern with a `/` in it (or a leading one) is anchored at the root of the home (`.cache/pip/`, `/build`);
 *   - `*` matches within one component, `?` one character, `[abc]`/`[a-z]`/`[!a]` a class, and `**` any
 *     number of components (`**\/cache/`, `logs/**`).
 * An excluded directory is skipped with everything below it. Negation (`!pattern`) is not supported and is
 * rejected, so nobody relies on it silently doing nothing.
 */
import { UserError } from '../util/errors.js';

interface Rule {
  source: string;
  dirOnly: boolean;
  anchored: boolean;
  re: RegExp;
}

function globToRegExp(glob: string, source: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slashAfter = glob[i + 2] === '/';
        out += slashAfter ? '(?:.*/)?' : '.*';
        i += slashAfter ? 2 : 1;
      } else {
        out += '[^/]*';
      }
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) throw new UserError(`invalid exclude pattern '${source}': unclosed '['`);
      let cls = glob.slice(i + 1, end);
      if (cls.startsWith('!')) cls = '^' + cls.slice(1);
      out += '[' + cls.replace(/\\/g, '\\\\') + ']';
      i = end;
    } else if (c === '\\' && i + 1 < glob.length) {
      out += (glob[++i] as string).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else {
      out += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return out;
}

function compile(pattern: string): Rule {
  const source = pattern;
  if (pattern.startsWith('!')) throw new UserError(`invalid exclude pattern '${source}': negation is not supported`);
  let p = pattern;
  const dirOnly = p.endsWith('/');
  if (dirOnly) p = p.replace(/\/+$/, '');
  if (p.length === 0) throw new UserError(`invalid exclude pattern '${source}': empty`);
  const anchored = p.includes('/');
  if (p.startsWith('/')) p = p.slice(1);
  return { source, dirOnly, anchored, re: new RegExp('^' + globToRegExp(p, source) + '$', 's') };
}

export class Excludes {
  private readonly rules: Rule[];

  constructor(patterns: readonly string[]) {
    this.rules = patterns.map(compile);
  }

  /** Whether `relPath` (relative to the home root, '/'-separated, no leading '/') is excluded. */
  excluded(relPath: string, isDir: boolean): boolean {
    const slash = relPath.lastIndexOf('/');
    const base = slash >= 0 ? relPath.slice(slash + 1) : relPath;
    for (const r of this.rules) {
      if (r.dirOnly && !isDir) continue;
      if (r.re.test(r.anchored ? relPath : base)) return true;
    }
    return false;
  }

  get patterns(): string[] {
    return this.rules.map((r) => r.source);
  }
}
