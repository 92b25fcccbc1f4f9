"""Mount bookkeeping: find a mount's FUSE connection, tear a mount down by every means available
(fusermount3 -u, umount -l, abort through /sys/fs/fuse/connections), and start/stop a bindfs mount for
validating the checks on a known-good FUSE filesystem."""
import os
import subprocess
import time

CONN_DIR = '/sys/fs/fuse/connections'


def _mountinfo():
    with open('/proc/self/mountinfo') as f:
        for line in f:
            parts = line.split()
            # id parent major:minor root mountpoint opts ... - fstype source superopts
            sep = parts.index('-')
            yield parts[4].encode().decode('unicode_escape'), parts[2], parts[sep + 1]


def is_mounted(mnt):
    mnt = os.path.realpath(mnt)
    return any(m == mnt for m, _, _ in _mountinfo())


def fuse_conn(mnt):
    """The /sys/fs/fuse/connections id of the FUSE mount at mnt (its device minor), or None."""
    mnt = os.path.realpath(mnt)
    for m, dev, fstype in _mountinfo():
        if m == mnt and fstype.startswith('fuse'):
            return dev.split(':')[1]
    return None


def _ensure_fusectl():
    try:
        if os.path.isdir(CONN_DIR) and not os.listdir(CONN_DIR):
            subprocess.run(['mount', '-t', 'fusectl', 'none', CONN_DIR], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        pass


def abort_conn(conn):
    if conn is None:
        return
    _ensure_fusectl()
    try:
        with open(os.path.join(CONN_DIR, conn, 'abort'), 'w') as f:
            f.write('1')
    except OSError:
        pass


def abort_mount(mnt):
    abort_conn(fuse_conn(mnt))


def force_unmount(mnt, timeout=10):
    """Unmount mnt whatever state its server is in. Returns True if nothing is mounted there afterwards."""
    if not is_mounted(mnt):
        return True
    conn = fuse_conn(mnt)
    for cmd in (['fusermount3', '-u', mnt], ['umount', mnt], ['umount', '-l', mnt]):
        try:
            subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            abort_conn(conn)
        if not is_mounted(mnt):
            break
    # A lazily detached mount whose server is stuck still holds a connection; abort it.
    if conn is not None and os.path.isdir(os.path.join(CONN_DIR, conn)):
        abort_conn(conn)
    if is_mounted(mnt):
        abort_conn(conn)
        subprocess.run(['umount', '-l', mnt], capture_output=True, timeout=timeout)
    return not is_mounted(mnt)


def wait_unmounted(mnt, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not is_mounted(mnt):
            return True
        time.sleep(0.05)
    return not is_mounted(mnt)


def bindfs_mount(src, mnt):
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(['bindfs', '-o', 'allow_other,default_permissions', src, mnt], check=True,
                   capture_output=True, timeout=30)
