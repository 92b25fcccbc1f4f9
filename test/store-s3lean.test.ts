/**
 * The s3:// store's object requests without the SDK (store/s3lean.ts) against a real Ceph RGW on 127.0.0.1:
 * the Store conformance suite, signing that RGW accepts for a key prefix with characters that need encoding,
 * and the same one-line errors as the SDK path for refused credentials, an unknown
 * bucket, a missing key and an unreachable endpoint. Listing (paged) and deleting are signed here too; the
 * identity is static for environment credentials and comes from the SDK's chain for a profile.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RetryingStore } from '../src/store/retry.js';
import { parseS3Url, S3Store } from '../src/store/s3.js';
import { createS3Store, LeanS3Store, staticIdentity } from '../src/store/s3lean.js';
import { NotFoundError, StoreUnavailableError, UserError } from '../src/util/errors.js';
import { closedPort, testS3Base, testS3Url } from './support/s3.js';
import { collect, storeConformance } from './support/store-conformance.js';

storeConformance('s3 without the SDK (Ceph RGW)', async () => {
  const s = createS3Store(new URL(await testS3Url()));
  assert.ok(s instanceof LeanS3Store, 'an endpoint is given: the lean store');
  return s;
});

async function lean(url: URL, clientConfig?: ConstructorParameters<typeof LeanS3Store>[1]): Promise<LeanS3Store> {
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

describe('S3 listing, deleting and identity without the SDK (Ceph RGW)', () => {
  it('lists page by page under a prefix that needs encoding, with sizes and times, and deletes', async () => {
    const url = new URL(await testS3Url());
    url.pathname = `${url.pathname}/p&q <r>`;
    const loc = parseS3Url(url);
    const s = new LeanS3Store({ ...loc, endpoint: loc.endpoint ?? '' }, { listPageSize: 2 });
    const sdk = new S3Store(loc);
    try {
      const t0 = Date.now() - 60_000;
      for (const k of ['org/a', 'org/b/c', 'org/b/d', 'org/e', 'other/x']) await s.put(k, Buffer.from(k));
      const all = await collect(s.list('org/'));
      assert.deepEqual(all.map((o) => o.key), ['org/a', 'org/b/c', 'org/b/d', 'org/e']);
      assert.deepEqual(all.map((o) => o.size), [5, 7, 7, 5]);
      assert.ok(all.every((o) => o.mtimeMs > t0 && o.mtimeMs < Date.now() + 60_000), 'modification times parsed');
      assert.deepEqual((await collect(s.list('org/', 3))).map((o) => o.key), ['org/a', 'org/b/c', 'org/b/d'], 'a limit across pages');
      assert.deepEqual((await collect(sdk.list(''))).map((o) => o.key), (await collect(s.list(''))).map((o) => o.key), 'the SDK lists the same');
      await s.delete('org/b/c');
      await s.delete('org/never-was');
      assert.deepEqual((await collect(sdk.list('org/b/'))).map((o) => o.key), ['org/b/d']);
    } finally {
      for (const o of await collect(s.list(''))) await s.delete(o.key);
      await Promise.all([s.close(), sdk.close()]);
    }
  });

  it('multipart uploads: parts out of order, invisible until complete, listed while pending, aborted; the SDK path the same', async () => {
    const url = new URL(await testS3Url());
    url.pathname = `${url.pathname}/mp a+b`;
    const loc = parseS3Url(url);
    const stores = [new LeanS3Store({ ...loc, endpoint: loc.endpoint ?? '' }), new S3Store(loc)];
    try {
      for (const s of stores) {
        const key = `org/homes/h/PUSHPACK-${s instanceof LeanS3Store ? 'lean' : 'sdk'}`;
        const p1 = Buffer.alloc(5 * 1024 * 1024, 1);
        const p2 = Buffer.alloc(5 * 1024 * 1024, 2);
        const p3 = Buffer.from('the last part may be short');
        const id = await s.uploads.start(key);
        const etags: string[] = [];
        etags[2] = await s.uploads.part(key, id, 3, p3);
        etags[1] = await s.uploads.part(key, id, 2, p2);
        etags[0] = await s.uploads.part(key, id, 1, p1);
        await assert.rejects(s.get(key), NotFoundError, 'nothing visible before complete');
        assert.deepEqual((await s.uploads.list('org/homes/')).map((u) => [u.key, u.id]), [[key, id]]);
        assert.ok(Math.abs((await s.uploads.list('org/'))[0]!.startedMs - Date.now()) < 600_000, 'start time parsed');
        await s.uploads.complete(key, id, etags);
        assert.ok((await s.get(key)).equals(Buffer.concat([p1, p2, p3])));
        assert.deepEqual(await s.uploads.list('org/'), []);
        const dropped = await s.uploads.start(key);
        await s.uploads.part(key, dropped, 2, p3);
        await s.uploads.abort(key, dropped);
        await s.uploads.abort(key, dropped); // gone: not an error
        assert.deepEqual(await s.uploads.list('org/'), []);
        assert.ok((await s.get(key)).equals(Buffer.concat([p1, p2, p3])), 'an aborted upload leaves the object alone');
        await s.delete(key);
      }
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('a listing of an unknown bucket is the one-line missing-bucket error', async () => {
    const url = new URL(await testS3Base());
    url.hostname = 'homefs-no-such-bucket';
    const s = await lean(url);
    await assert.rejects(collect(s.list('x/')), /bucket 'homefs-no-such-bucket' does not exist/);
    await s.close();
  });

  it('environment credentials without a profile sign without the SDK; a profile does not', () => {
    const loc = parseS3Url(new URL('s3://bkt/p?endpoint=http://127.0.0.1:1&region=r1'));
    const env = { AWS_ACCESS_KEY_ID: 'K', AWS_SECRET_ACCESS_KEY: 'S', AWS_SESSION_TOKEN: 'T' };
    assert.deepEqual(staticIdentity(loc, {}, env), { accessKeyId: 'K', secretAccessKey: 'S', sessionToken: 'T', region: 'r1' });
    assert.equal(staticIdentity(loc, {}, { ...env, AWS_PROFILE: 'x' }), undefined, 'AWS_PROFILE: the SDK chain skips the environment');
    assert.equal(staticIdentity({ ...loc, profile: 'x' }, {}, env), undefined, 'profile= in the URL');
    assert.equal(staticIdentity(loc, {}, { AWS_ACCESS_KEY_ID: 'K' }), undefined, 'no secret');
    const { region: _r, ...noRegion } = loc;
    assert.equal(staticIdentity(noRegion, {}, env), undefined, 'no region: the SDK finds it (shared config)');
    assert.equal(staticIdentity(noRegion, {}, { ...env, AWS_REGION: 'r2' })?.region, 'r2');
  });

  it('a profile signs as the identity of the SDK chain (shared credentials file)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'homefs-s3lean-'));
    const saved = { ...process.env };
    try {
      const creds = join(dir, 'credentials');
      await writeFile(creds, `[hx]\naws_access_key_id = ${process.env.AWS_ACCESS_KEY_ID ?? ''}\naws_secret_access_key = ${process.env.AWS_SECRET_ACCESS_KEY ?? ''}\n`);
      const url = new URL(await testS3Url());
      url.searchParams.set('profile', 'hx');
      process.env.AWS_SHARED_CREDENTIALS_FILE = creds;
      process.env.AWS_CONFIG_FILE = join(dir, 'config');
      delete process.env.AWS_ACCESS_KEY_ID;
      delete process.env.AWS_SECRET_ACCESS_KEY;
      const s = await lean(url);
      assert.equal(s.sdkFree, false);
      await s.put('org/x', Buffer.from('via profile'));
      assert.equal((await s.get('org/x')).toString(), 'via profile');
      await s.delete('org/x');
      await s.close();
    } finally {
      process.env = saved;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
