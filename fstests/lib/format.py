"""A deliberately permissive writer of homefs store objects (docs/format.md, tree v1 and snapshot v1), for
crafting hostile input: it encodes whatever names, sizes, counts and hashes it is given, valid or not,
and writes objects straight into a file store's directory. BLAKE3 comes from the project's own native
dependency through one long-lived node process (python has no BLAKE3)."""
import json
import os
import struct
import subprocess

from .homefs import ROOT

KINDS = {'file': 1, 'dir': 2, 'symlink': 3, 'fifo': 4, 'socket': 5, 'chardev': 6, 'blockdev': 7}
SINGLE_BLOCK_MAX = 8 * 1024 * 1024
BLOCK_SIZE = 4 * 1024 * 1024

_JS = r"""
const { blake3 } = require(process.argv[1]);
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (l) => process.stdout.write(blake3(Buffer.from(l, 'hex')).toString('hex') + '\n'));
"""


class Hasher:
    def __init__(self):
        mod = os.path.join(ROOT, 'node_modules', '@napi-rs', 'blake-hash')
        self.p = subprocess.Popen(['node', '-e', _JS, mod], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)

    def __call__(self, data):
        self.p.stdin.write(data.hex() + '\n')
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def block_count(size):
    if size == 0:
        return 0
    if size <= SINGLE_BLOCK_MAX:
        return 1
    return (size + BLOCK_SIZE - 1) // BLOCK_SIZE


def entry(name, kind='file', mode=0o644, uid=0, gid=0, size=0, mtime=0, ctime=0, link=0, blocks=(),
          tree=None, target=None, rdev=0, xattrs=(), raw_name=None):
    """Encode one tree entry. `raw_name` (bytes) bypasses UTF-8 encoding, for NUL and invalid names."""
    nb = raw_name if raw_name is not None else name.encode()
    out = struct.pack('<BH', KINDS[kind], len(nb)) + nb
    out += struct.pack('<HIIQqqI', mode, uid, gid, size, mtime, ctime, link)
    if kind == 'file':
        out += b''.join(bytes.fromhex(h) for h in blocks)
    elif kind == 'dir':
        out += bytes.fromhex(tree)
    elif kind == 'symlink':
        tb = target.encode() if isinstance(target, str) else target
        out += struct.pack('<H', len(tb)) + tb
    elif kind in ('chardev', 'blockdev'):
        out += struct.pack('<Q', rdev)
    out += struct.pack('<H', len(xattrs))
    for k, v in xattrs:
        out += struct.pack('<B', len(k)) + k.encode() + struct.pack('<I', len(v)) + v
    return out


def tree(entries, count=None):
    """entries: encoded entries (in the order given: sorting is the caller's business)."""
    return b'HFTR' + struct.pack('<BI', 1, len(entries) if count is None else count) + b''.join(entries)


def snapshot(root, home, parent=None, stats=(1, 0, 0), time='2026-11-30T12:00:00.000Z', host='fstests',
             reason='push'):
    s = ('{"version":1,"root":' + json.dumps(root) + ',"parent":' + json.dumps(parent) + ',"home":'
         + json.dumps(home) + ',"time":' + json.dumps(time) + ',"host":' + json.dumps(host)
         + ',"stats":{"files":%d,"dirs":%d,"bytes":%d}' % stats + ',"reason":' + json.dumps(reason) + '}\n')
    return s.encode()


class FileStore:
    """Writes objects into a file:// store directory for one org."""

    def __init__(self, store_dir, org, hasher):
        self.dir, self.org, self.h = store_dir, org, hasher

    def _put(self, key, data):
        p = os.path.join(self.dir, key)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'wb') as f:
            f.write(data)

    def block(self, data, store=True):
        h = self.h(data)
        if store:
            self._put(f'{self.org}/blocks/{h[:2]}/{h}', data)
        return h

    def meta(self, data, corrupt_with=None):
        h = self.h(data)
        self._put(f'{self.org}/meta/{h[:2]}/{h}', corrupt_with if corrupt_with is not None else data)
        return h

    def head(self, home, snapshot_id, gen=0):
        self._put(f'{self.org}/homes/{home}/heads/{9999999999999 - gen:013d}',
                  snapshot_id.encode() if isinstance(snapshot_id, str) else snapshot_id)
