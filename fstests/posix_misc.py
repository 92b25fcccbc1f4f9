"""POSIX conformance, the rest: name and path limits (255 bytes, ENAMETOOLONG), unusual names, deep and
wide trees, mmap (shared writable, coherence with read/write), writes across the 4 MiB/8 MiB block
boundaries of the store format, open file handles across rename and chmod."""
import errno
import mmap
import os

from lib.asserts import eq, expect_errno, read, true, write
from lib.harness import check

MIB = 1 << 20


@check('posix.name.max_255')
def _(t):
    n255 = 'n' * 255
    write(t.p(n255), b'x')
    eq(read(t.p(n255)), b'x', '255-byte name')
    os.mkdir(t.p('d' * 255))
    os.symlink('x', t.p('s' * 255))
    true(n255 in os.listdir(t.d), '255-byte name listed')
    u = 'é' * 127  # 254 bytes of UTF-8
    write(t.p(u))
    true(u in os.listdir(t.d), 'multibyte 254-byte name listed')


@check('posix.name.too_long')
def _(t):
    n256 = 'n' * 256
    write(t.p('f'))
    os.mkdir(t.p('d'))
    E = errno.ENAMETOOLONG
    expect_errno(E, os.open, t.p(n256), os.O_WRONLY | os.O_CREAT, 0o644, what='create 256-byte name')
    expect_errno(E, os.mkdir, t.p(n256), what='mkdir 256-byte name')
    expect_errno(E, os.symlink, 'x', t.p(n256), what='symlink 256-byte name')
    expect_errno(E, os.link, t.p('f'), t.p(n256), what='link 256-byte name')
    expect_errno(E, os.rename, t.p('f'), t.p(n256), what='rename to 256-byte name')
    expect_errno(E, os.stat, t.p(n256), what='stat 256-byte name')
    expect_errno(E, os.mkfifo, t.p('é' * 128), what='mkfifo 256-byte UTF-8 name')
    eq(sorted(os.listdir(t.d)), ['d', 'f'], 'nothing created')


@check('posix.name.path_max')
def _(t):
    comp = 'p' * 200
    expect_errno(errno.ENAMETOOLONG, os.stat, os.path.join(t.d, *([comp] * 25)), what='path longer than PATH_MAX')


@check('posix.name.unusual')
def _(t):
    names = [' lead', 'trail ', 'new\nline', 'tab\tx', 'star*?', 'back\\slash', '-dash', '.hidden', '..dots',
             '...', 'emoji-😀', '中文名', 'quote"\'', '$(x)', '#hash', 'CASE', 'case']
    for n in names:
        write(t.p(n), n.encode())
    eq(sorted(os.listdir(t.d)), sorted(names), 'all names listed')
    for n in names:
        eq(read(t.p(n)), n.encode(), f'content of {n!r}')


@check('posix.name.non_utf8')
def _(t):
    name = b'bad-\xff\xfe-name'
    path = os.fsencode(t.d) + b'/' + name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError as e:
        true(e.errno in (errno.EINVAL, errno.EILSEQ), f'non-UTF-8 name refused with {errno.errorcode[e.errno]}')
        eq(os.listdir(t.d), [], 'nothing created on refusal')
        return
    os.write(fd, b'raw')
    os.close(fd)
    true(name in os.listdir(os.fsencode(t.d)), 'non-UTF-8 name listed exactly')
    eq(read(path), b'raw', 'content')


@check('posix.tree.deep')
def _(t):
    depth = 60
    p = t.d
    for i in range(depth):
        p = os.path.join(p, f'lvl{i}')
    os.makedirs(p)
    write(os.path.join(p, 'leaf'), b'bottom')
    eq(read(os.path.join(p, 'leaf')), b'bottom', 'leaf at depth 60')
    count = sum(1 for _ in os.walk(t.d))
    eq(count, depth + 1, 'dirs walked')


@check('posix.tree.wide')
def _(t):
    n = 3000 if t.quick else 20000
    for i in range(n):
        os.close(os.open(t.p(f'w{i:05d}'), os.O_WRONLY | os.O_CREAT, 0o644))
    eq(len(os.listdir(t.d)), n, f'{n} entries listed')
    for i in range(0, n, 7):
        os.unlink(t.p(f'w{i:05d}'))
    eq(len(os.listdir(t.d)), n - len(range(0, n, 7)), 'after unlinking every 7th')


@check('posix.mmap.shared_write')
def _(t):
    write(t.p('f'), b'\0' * (3 * 4096 + 100))
    fd = os.open(t.p('f'), os.O_RDWR)
    try:
        m = mmap.mmap(fd, 0)
        m[0:5] = b'hello'
        m[4096 * 3:4096 * 3 + 5] = b'world'
        m.flush()
        m.close()
    finally:
        os.close(fd)
    data = read(t.p('f'))
    eq(data[:5], b'hello', 'mmap write visible via read')
    eq(data[4096 * 3:4096 * 3 + 5], b'world', 'mmap write on the last page')
    eq(len(data), 3 * 4096 + 100, 'size unchanged by mmap')


@check('posix.mmap.coherent_with_write')
def _(t):
    write(t.p('f'), b'a' * 8192)
    fd = os.open(t.p('f'), os.O_RDWR)
    try:
        m = mmap.mmap(fd, 8192)
        os.pwrite(fd, b'B' * 10, 100)
        eq(m[100:110], b'B' * 10, 'write() visible in an existing mapping')
        m[200:210] = b'C' * 10
        eq(os.pread(fd, 10, 200), b'C' * 10, 'mapping store visible to pread')
        m.close()
    finally:
        os.close(fd)


@check('posix.mmap.private_not_written')
def _(t):
    write(t.p('f'), b'orig' * 1024)
    with open(t.p('f'), 'rb') as f:
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        m[0:4] = b'XXXX'
        m.close()
    eq(read(t.p('f'))[:4], b'orig', 'MAP_PRIVATE write reached the file')


@check('posix.mmap.read_large')
def _(t):
    data = os.urandom(9 * MIB + 123)
    write(t.p('f'), data)
    with open(t.p('f'), 'rb') as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        try:
            for off in (0, 4 * MIB - 1, 8 * MIB - 2, 9 * MIB):
                eq(m[off:off + 100], data[off:off + 100], f'mmap read at {off}')
        finally:
            m.close()


@check('posix.blocks.boundaries')
def _(t):
    # the store splits files of more than 8 MiB into 4 MiB blocks: exercise both sides of each boundary
    for size in (8 * MIB, 8 * MIB + 1, 12 * MIB + 7):
        data = bytearray(os.urandom(size))
        p = t.p(f's{size}')
        write(p, bytes(data))
        fd = os.open(p, os.O_RDWR)
        try:
            for off in (4 * MIB - 3, 8 * MIB - 3):
                if off + 6 <= size:
                    os.pwrite(fd, b'BOUNDS', off)
                    data[off:off + 6] = b'BOUNDS'
        finally:
            os.close(fd)
        eq(read(p) == bytes(data), True, f'content of a {size}-byte file after boundary writes')
        os.truncate(p, 8 * MIB - 1)
        eq(read(p) == bytes(data[:8 * MIB - 1]), True, f'{size}-byte file truncated below 8 MiB')


@check('posix.fd.survives_rename_chmod')
def _(t):
    write(t.p('f'), b'abc')
    fd = os.open(t.p('f'), os.O_RDWR)
    try:
        os.mkdir(t.p('d'))
        os.rename(t.p('f'), t.p('d', 'g'))
        os.chmod(t.p('d', 'g'), 0o000)
        os.pwrite(fd, b'XYZ', 3)
        eq(os.pread(fd, 10, 0), b'abcXYZ', 'I/O on an fd after rename and chmod 000')
    finally:
        os.close(fd)
    os.chmod(t.p('d', 'g'), 0o644)
    eq(read(t.p('d', 'g')), b'abcXYZ', 'content at the new name')


@check('posix.file.empty_and_rewrite')
def _(t):
    for i in range(20):
        write(t.p('f'), b'' if i % 2 else os.urandom(i * 1000))
        eq(os.lstat(t.p('f')).st_size, 0 if i % 2 else i * 1000, f'size after rewrite {i}')
