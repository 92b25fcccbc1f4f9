/**
 * The S3 store against a real Ceph RGW on 127.0.0.1 (test/support/ceph.sh): the Store conformance suite
 * (raw, and as `openStore` builds it for writers: retrying, probed), plus what only S3 has: key prefixes,
 * paging, one-line errors for an unknown bucket, refused credentials and an unreachable endpoint, and the
 * create-if-absent probe.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openStore } from '../src/store/open.js';
import { assertCreateIfAbsent } from '../src/store/probe.js';
import { RetryingStore } from '../src/store/retry.js';
import { S3Store, createS3Store, parseS3Url } from '../src/store/s3.js';
import { ForwardingStore } from '../src/store/forwarding.js';
import { StoreUnavailableError, UserError } from '../src/util/errors.js';
import { closedPort, testS3Base, testS3Url } from './support/s3.js';
import { collect, storeConformance } from './support/store-conformance.js';

storeConformance('s3 (Ceph RGW)', async () => createS3Store(new URL(await testS3Url())));
storeConformance('s3 via openStore (retrying, probed)', async () => openStore(await testS3Url(), { write: true }));

/** A store that ignores create-if-absent, like an S3 service that ignores If-None-Match. */
class OverwritingStore extends ForwardingStore {
  override async putIfAbsent(key: string, data: Buffer): Promise<boolean> {
    await this.inner.put(key, data);
    return true;
  }
}

describe('S3 store specifics (Ceph RGW)', () => {
  it('keeps every key under the URL prefix, invisible to other prefixes', async () => {
    const urlA = new URL(await testS3Url());
    const a = createS3Store(urlA);
    const b = createS3Store(new URL(await testS3Url()));
    const root = new URL(urlA);
    root.pathname = '/';
    const bucketRoot = createS3Store(root);
    try {
      await a.put('org/blocks/aa/x', Buffer.from('a'));
      assert.deepEqual(await collect(b.list('')), []);
      assert.equal((await b.has(['org/blocks/aa/x'])).size, 0);
      const prefix = urlA.pathname.slice(1);
      const raw = await collect(bucketRoot.list(`${prefix}/`));
      assert.deepEqual(raw.map((o) => o.key), [`${prefix}/org/blocks/aa/x`]);
      assert.deepEqual((await collect(a.list(''))).map((o) => o.key), ['org/blocks/aa/x']);
    } finally {
      await Promise.all([a.close(), b.close(), bucketRoot.close()]);
    }
  });

  it('pages through ListObjectsV2 and stops at limit', async () => {
    const s = new S3Store(parseS3Url(new URL(await testS3Url())), { listPageSize: 2 });
    try {
      const keys = Array.from({ length: 7 }, (_, i) => `p/k${i}`);
      await Promise.all(keys.map((k) => s.put(k, Buffer.from(k))));
      assert.deepEqual((await collect(s.list('p/'))).map((o) => o.key), keys);
      assert.deepEqual((await collect(s.list('p/', 5))).map((o) => o.key), keys.slice(0, 5));
      assert.deepEqual((await collect(s.list('p/', 2))).map((o) => o.key), keys.slice(0, 2));
    } finally {
      await s.close();
    }
  });

  it('an unknown bucket is a one-line UserError, not retried, not a missing key', async () => {
    const url = new URL(await testS3Base());
    url.hostname = 'homefs-no-such-bucket';
    const s = new RetryingStore(createS3Store(url));
    const t0 = Date.now();
    await assert.rejects(s.get('org/x'), (e: unknown) => {
      assert.ok(e instanceof UserError && !(e instanceof StoreUnavailableError), String(e));
      assert.match(e.message, /bucket 'homefs-no-such-bucket' does not exist/);
      assert.doesNotMatch(e.message, /\n/);
      return true;
    });
    await assert.rejects(s.has(['org/x']), /does not exist/);
    assert.ok(Date.now() - t0 < 5_000);
    await s.close();
  });

  it('refused credentials are a one-line UserError', async () => {
    const s = new RetryingStore(
      new S3Store(parseS3Url(new URL(await testS3Url())), {
        clientConfig: { credentials: { accessKeyId: 'HOMEFSWRONGKEY', secretAccessKey: 'wrong' } },
      }),
    );
    await assert.rejects(s.put('org/x', Buffer.from('x')), (e: unknown) => {
      assert.ok(e instanceof UserError, String(e));
      assert.match(e.message, /access denied|refused the credentials/);
      assert.doesNotMatch(e.message, /\n/);
      return true;
    });
    await s.close();
  });

  it('an unreachable endpoint is StoreUnavailableError after bounded retries', async () => {
    const port = await closedPort();
    const url = new URL(await testS3Url());
    url.searchParams.set('endpoint', `http://127.0.0.1:${port}`);
    let retries = 0;
    const s = new RetryingStore(createS3Store(url), { deadlineMs: 3_000, onRetry: () => void retries++ });
    const t0 = Date.now();
    await assert.rejects(s.get('org/x'), (e: unknown) => {
      assert.ok(e instanceof StoreUnavailableError, String(e));
      assert.match(e.message, /unreachable: .*ECONNREFUSED/);
      return true;
    });
    assert.ok(retries >= 1, `retried ${retries} times`);
    assert.ok(Date.now() - t0 < 5_000, `took ${Date.now() - t0} ms`);
    await s.close();
  });

  it('the create-if-absent probe passes on Ceph and leaves nothing behind', async () => {
    const s = createS3Store(new URL(await testS3Url()));
    try {
      await assertCreateIfAbsent(new RetryingStore(s));
      await assertCreateIfAbsent(s, 'acme/_probe/'); // inside one org, for org-scoped credentials
      assert.deepEqual(await collect(s.list('')), []);
    } finally {
      await s.close();
    }
  });

  it('the probe refuses a store that overwrites on putIfAbsent, and cleans up', async () => {
    const s = createS3Store(new URL(await testS3Url()));
    try {
      await assert.rejects(assertCreateIfAbsent(new OverwritingStore(s)), (e: unknown) => {
        assert.ok(e instanceof UserError);
        assert.match(e.message, /does not enforce create-if-absent.*refuses to advance HEAD/);
        return true;
      });
      assert.deepEqual(await collect(s.list('_probe/')), []);
    } finally {
      await s.close();
    }
  });
});
