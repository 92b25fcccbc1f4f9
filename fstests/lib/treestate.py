"""A comparable picture of a directory tree: per path its type, permission bits, size, content digest or
symlink target, nlink, and (optionally) times and xattrs; plus the hard-link groups (paths sharing an
inode), compared as sets of paths since inode numbers differ between filesystems."""
import hashlib
import os
import stat


def snapshot(root, times=False, owners=False, xattrs=False):
    entries = {}
    by_ino = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            kind = stat.S_IFMT(st.st_mode)
            if stat.S_ISREG(kind):
                h = hashlib.sha256()
                with open(p, 'rb') as f:
                    while True:
                        b = f.read(1 << 20)
                        if not b:
                            break
                        h.update(b)
                body = h.hexdigest()[:16]
                by_ino.setdefault(st.st_ino, []).append(rel)
            elif stat.S_ISLNK(kind):
                body = os.readlink(p)
            else:
                body = ''
            e = [oct(kind), oct(stat.S_IMODE(st.st_mode)), st.st_size if not stat.S_ISDIR(kind) else 0,
                 st.st_nlink, body]
            if times and not stat.S_ISLNK(kind):
                e.append(st.st_mtime_ns)
            if owners:
                e.append((st.st_uid, st.st_gid))
            if xattrs and not stat.S_ISLNK(kind):
                e.append(sorted((k, hashlib.sha256(os.getxattr(p, k, follow_symlinks=False)).hexdigest()[:8])
                                for k in os.listxattr(p, follow_symlinks=False) if k.startswith('user.')))
            entries[rel] = e
    groups = sorted(sorted(v) for v in by_ino.values() if len(v) > 1)
    return entries, groups


def diff(a, b, limit=5):
    """Human-readable differences between two snapshots (a = under test, b = reference); [] if equal."""
    ea, ga = a
    eb, gb = b
    out = []
    for k in sorted(set(ea) | set(eb)):
        if k not in ea:
            out.append(f'{k}: missing (want {eb[k]})')
        elif k not in eb:
            out.append(f'{k}: unexpected {ea[k]}')
        elif ea[k] != eb[k]:
            out.append(f'{k}: {ea[k]} != want {eb[k]}')
        if len(out) >= limit:
            break
    if not out and ga != gb:
        out.append(f'hard-link groups {ga[:3]} != want {gb[:3]}')
    return out
