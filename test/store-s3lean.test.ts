/**
 * The s3:// store's object requests without the SDK (store/s3lean.ts) against a real Ceph RGW on 127.0.0.1:
 * the Store conformance suite, signing that RGW accepts for a key prefix with characters that need encoding,
 * and the same one-line errors as the SDK path for refused credentials, an unknown
 * bucket, a missing key and an unreachable endpoint.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RetryingStore } from '../src/store/retry.js';
import { parseS3Url, S3Store } from '../src/store/s3.js';
import { createS3Store, LeanS3Store } from '../src/store/s3lean.js';
import { NotFoundError, StoreUnavailableError, UserError } from '../src/util/errors.js';
import { closedPort, testS3Base, testS3Url } from './support/s3.js';
import { collect, storeConformance } from './support/store-conformance.js';

storeConformance('s3 without the SDK (Ceph RGW)', async () => {
  const s = createS3Store(new URL(await testS3Url()));
  assert.ok(s instanceof LeanS3Store, 'an endpoint is given: the lean store');
  return s;
});

async function lean(url: URL, clientConfig?: ConstructorParameters<typeof S3Store>[1]): Promise<LeanS3Store> {
  const loc = parseS3Url(url);
  if (loc.endpoint === undefined) throw new Error('test URL without an endpoint');
  return new LeanS3Store({ ...loc, endpoint: loc.endpoint }, clientConfig);
}

describe('S3 requests without the SDK (Ceph RGW)', () => {
  it('signs keys under a prefix that needs encoding, and the SDK path reads what it wrote', async () => {
    const url = new URL(await testS3Url());
    url.pathname = `${url.pathname}/a b+c~d(e)`;
    const s = await lean(url);
    const sdk = new S3Store(parseS3Url(url));
    try {
      await s.put('org/blocks/aa/x', Buffer.from('hello'));
      assert.equal((await sdk.get('org/blocks/aa/x')).toString(), 'hello');
      assert.equal((await s.getRange('org/blocks/aa/x', 1, 3)).toString(), 'ell');
      assert.deepEqual((await collect(sdk.list(''))).map((o) => o.key), ['org/blocks/aa/x']);
      assert.equal(await s.putIfAbsent('org/blocks/aa/x', Buffer.from('other')), false);
      assert.equal((await s.get('org/blocks/aa/x')).toString(), 'hello', 'a failed create-if-absent leaves the object alone');
      await assert.rejects(s.get('org/blocks/aa/y'), NotFoundError);
      await s.delete('org/blocks/aa/x');
    } finally {
      await Promise.all([s.close(), sdk.close()]);
    }
  });

  it('refused credentials are a one-line UserError', async () => {
    const s = new RetryingStore(await lean(new URL(await testS3Url()), { clientConfig: { credentials: { accessKeyId: 'HOMEFSWRONGKEY', secretAccessKey: 'wrong' } } }));
    for (const op of [() => s.put('org/x', Buffer.from('x')), () => s.get('org/x'), () => s.has(['org/x'])]) {
      await assert.rejects(op(), (e: unknown) => {
        assert.ok(e instanceof UserError, String(e));
        assert.match(e.message, /access denied|refused the credentials/);
        assert.doesNotMatch(e.message, /\n/);
        return true;
      });
    }
    await s.close();
  });

  it('an unknown bucket is a one-line UserError, not retried, not a missing key', async () => {
    const url = new URL(await testS3Base());
    url.hostname = 'homefs-no-such-bucket';
    const s = new RetryingStore(await lean(url));
    const t0 = Date.now();
    await assert.rejects(s.get('org/x'), (e: unknown) => {
      assert.ok(e instanceof UserError && !(e instanceof StoreUnavailableError), String(e));
      assert.match(e.message, /bucket 'homefs-no-such-bucket' does not exist/);
      return true;
    });
    await assert.rejects(s.has(['org/x']), /does not exist/);
    await assert.rejects(s.put('org/x', Buffer.from('x')), /does not exist/);
    assert.ok(Date.now() - t0 < 5_000);
    await s.close();
  });

  it('an unreachable endpoint is StoreUnavailableError after bounded retries', async () => {
    const url = new URL(await testS3Url());
    url.searchParams.set('endpoint', `http://127.0.0.1:${await closedPort()}`);
    let retries = 0;
    const s = new RetryingStore(await lean(url), { deadlineMs: 3_000, onRetry: () => void retries++ });
    await assert.rejects(s.get('org/x'), (e: unknown) => {
      assert.ok(e instanceof StoreUnavailableError, String(e));
      assert.match(e.message, /ECONNREFUSED/);
      return true;
    });
    assert.ok(retries >= 1, `retried ${retries} times`);
    await s.close();
  });
});
