"""The hot set (docs/format.md, "Hot set and wake pack"): a session's reads are recorded at sleep with a
wake pack; a fresh host warms its cache from them. The record and the pack are hints: with the pack
damaged, the record missing or of an unknown version, a fresh host still serves every byte right."""
import os
import random
import time

from lib.asserts import eq, read, true, write
from lib.harness import check


def _files():
    r = random.Random('hotset')
    return {f'src/m{i}.txt': r.randbytes(r.randrange(100, 40000)) for i in range(40)}


class Home:
    def __init__(self, t, tag):
        self.env = t.env
        self.org, self.name = 'fstests', f'hotset-{tag}'
        self.home = f'{self.org}/{self.name}'
        self.files = _files()
        cache, state, mnt = self.env.fresh_dirs(self.name)
        self.env.mount(self.home, mnt, cache, state)
        os.makedirs(os.path.join(mnt, 'src'))
        for name, data in self.files.items():
            write(os.path.join(mnt, name), data)
        self.env.sleep(mnt)
        self.session()  # a first fresh host reads everything: its sleep records the hot set and the pack

    def key(self, name):
        return os.path.join(self.env.store_dir, self.org, 'homes', self.name, name)

    def session(self):
        """A fresh host reads every file, checks the bytes, and sleeps. Returns its warm-up report."""
        cache, state, mnt = self.env.fresh_dirs(f'{self.name}-fresh')
        self.env.mount(self.home, mnt, cache, state)
        warm = None
        end = time.monotonic() + 30
        while time.monotonic() < end:
            warm = self.env.status(mnt)['hotset']['warm']
            if warm and warm['done']:
                break
            time.sleep(0.05)
        for name, data in self.files.items():
            eq(read(os.path.join(mnt, name)), data, f'{name} read on a fresh host')
        self.env.sleep(mnt)
        return warm


@check('hotset.pack_used', needs=('homefs',), timeout=180)
def _(t):
    h = Home(t, 'used')
    true(os.path.exists(h.key('HOTSET')) and os.path.exists(h.key('WAKEPACK')), 'sleep wrote the record and the pack')
    warm = h.session()
    # Every file came from the wake pack; the two trees (root, src) from it or, first, from the namespace pack.
    true(len(h.files) <= warm['fromPack'] <= len(h.files) + 2 and warm['fromPack'] + warm['cached'] >= len(h.files) + 2,
         f'every file and both trees (root, src) came from a pack: {warm}')
    eq(warm['packRejected'], 0, 'nothing rejected')


@check('hotset.pack_damaged', needs=('homefs',), timeout=180)
def _(t):
    h = Home(t, 'damaged')
    pack = bytearray(open(h.key('WAKEPACK'), 'rb').read())
    for i in range(0, len(pack), 1000):
        pack[i] ^= 0xff
    open(h.key('WAKEPACK'), 'wb').write(bytes(pack))
    warm = h.session()
    true(warm['packRejected'] > 0, f'damaged pack objects rejected: {warm}')


@check('hotset.record_missing_or_hostile', needs=('homefs',), timeout=240)
def _(t):
    h = Home(t, 'record')
    rec = bytearray(open(h.key('HOTSET'), 'rb').read())
    rec[4] = 200  # a version this homefs does not know
    open(h.key('HOTSET'), 'wb').write(bytes(rec))
    eq(h.session()['record'], False, 'a record of an unknown version is ignored')
    os.unlink(h.key('HOTSET'))
    os.unlink(h.key('WAKEPACK'))
    eq(h.session()['record'], False, 'no record: a cold wake')
