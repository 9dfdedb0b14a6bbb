/**
 * The download URLs of the S3 store (bundle-uri lists, LFS download
 * actions) are signed by lfs/store/presign.ts, not by the SDK's
 * getSignedUrl. They are judged three ways:
 * - AWS's documented example of a pre-signed GET ("Authenticating Requests:
 *   Using Query Parameters": examplebucket/test.txt, 2013-05-24, a day);
 * - the SDK's own URL for the same key, client, credentials and second,
 *   byte for byte, over keys with every kind of byte, endpoints of both
 *   styles, regions, and session credentials; a URL changed anywhere no
 *   longer carries the signature the SDK computes for what it names;
 * - s3rver (the tests' S3): the URL downloads the object whatever its key;
 *   an expired one, or one of an unknown key id, is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { GetPresigner, learnTarget, presignGet, uriEncode } from '../src/lfs/store/presign.js';
import { S3Store } from '../src/lfs/store/s3.js';
import { BundleBucket } from '../src/bundle/s3.js';
import { ROOT, tmp } from './helpers/git.js';
import { startS3 } from './helpers/lfs-s3.js';

const AWS_EXAMPLE = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

test("AWS's documented pre-signed GET: the same signature and parameters (in the SDK's order: sorted)", () => {
  const url = presignGet({ origin: 'https://examplebucket.s3.amazonaws.com', host: 'examplebucket.s3.amazonaws.com', pathPrefix: '', region: 'us-east-1', service: 's3', extra: [], payload: 'UNSIGNED-PAYLOAD' },
    'test.txt', AWS_EXAMPLE, 86400, new Date('2013-05-24T00:00:00Z'));
  // AWS's page lists the signature last; the SDK (and this) sorts it in with the rest
  const documented = 'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request'
    + '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
  const [base, query] = documented.split('?') as [string, string];
  assert.equal(url, `${base}?${query.split('&').sort().join('&')}`);
});

test('uriEncode: unreserved bytes kept, every other byte %XX in upper case, a lone surrogate as U+FFFD', () => {
  assert.equal(uriEncode("a-Z_0.~ /+%!'()*é", false), "a-Z_0.~%20%2F%2B%25%21%27%28%29%2A%C3%A9");
  assert.equal(uriEncode('a/b c', true), 'a/b%20c');
  assert.equal(uriEncode('\ud800', false), '%EF%BF%BD');
});

const KEYS = [
  'bundles/history.git/1733363000-0123456789ab.bundle',
  "group/a b+c%d!'()*~é/x.bundle",
  'dots/../and/./slashes//twice/',
  'q?a=b&c#frag;semi:colon@at$dollar,comma=eq',
  '日本語/名前.git/ß\u00a0nbsp\ttab',
  'x'.repeat(900),
];
const CLIENTS: Array<[string, ConstructorParameters<typeof S3Client>[0], string]> = [
  ['path-style endpoint with a port', { region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true }, 'bucket'],
  ['AWS, virtual-hosted', { region: 'us-east-1' }, 'examplebucket'],
  ['AWS, a dotted bucket (path-style)', { region: 'eu-west-1' }, 'my.dotted.bucket'],
  ['AWS, another region, a prefix-like bucket', { region: 'ap-southeast-2' }, 'b-1'],
  ['session credentials', { region: 'us-east-1', endpoint: 'https://s3.example.test', forcePathStyle: true, credentials: { ...AWS_EXAMPLE, sessionToken: 'FwoGZXIvYXdzE+/token=with==odd/chars' } }, 'bucket'],
];
const client = (cfg: ConstructorParameters<typeof S3Client>[0]) => new S3Client({ credentials: AWS_EXAMPLE, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED', ...cfg });

test("the SDK's URL, byte for byte: every key, both endpoint styles, regions, a session token", async () => {
  for (const [what, cfg, bucket] of CLIENTS) {
    const c = client(cfg);
    const creds = await c.config.credentials();
    for (const date of [new Date('2026-12-05T01:02:03Z'), new Date('2024-02-29T23:59:59Z')]) {
      const probe = learnTarget(await getSignedUrl(c, new GetObjectCommand({ Bucket: bucket, Key: 'gitwire-probe/k' }), { expiresIn: 3600, signingDate: date }));
      assert.ok(probe, `${what}: the probe URL is understood`);
      for (const key of KEYS) {
        const sdk = await getSignedUrl(c, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: 3600, signingDate: date });
        assert.equal(presignGet(probe.target, key, creds, 3600, date), sdk, `${what}: ${key}`);
      }
    }
    // the class, signing at the current second: the SDK signs the same at the URL's own date
    const p = new GetPresigner(c);
    for (const key of KEYS) {
      const ours = await p.url(bucket, key, 3600);
      const at = /X-Amz-Date=(\d{8}T\d{6}Z)/.exec(ours)![1]!;
      const date = new Date(`${at.slice(0, 4)}-${at.slice(4, 6)}-${at.slice(6, 8)}T${at.slice(9, 11)}:${at.slice(11, 13)}:${at.slice(13, 15)}Z`);
      assert.equal(ours, await getSignedUrl(c, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn: 3600, signingDate: date }), `${what} (GetPresigner): ${key}`);
    }
    c.destroy();
  }
});

/** Whether `url` carries the signature the SDK computes for the request it names (the key in its path, its date and lifetime). */
async function sdkAccepts(c: S3Client, bucket: string, prefix: string, url: string): Promise<boolean> {
  const u = new URL(url);
  const at = u.searchParams.get('X-Amz-Date')!;
  const date = new Date(`${at.slice(0, 4)}-${at.slice(4, 6)}-${at.slice(6, 8)}T${at.slice(9, 11)}:${at.slice(11, 13)}:${at.slice(13, 15)}Z`);
  const raw = url.slice(u.origin.length + prefix.length + 1, url.indexOf('?'));
  const key = decodeURIComponent(raw);
  const expiresIn = Number(u.searchParams.get('X-Amz-Expires'));
  let sdk: string;
  try { sdk = await getSignedUrl(c, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn, signingDate: date }); } catch { return false; }
  return new URL(sdk).searchParams.get('X-Amz-Signature') === u.searchParams.get('X-Amz-Signature');
}

test('a URL changed anywhere (key, date, lifetime, signature, credential) is not one the SDK signs', async () => {
  const c = client(CLIENTS[0]![1]);
  const p = new GetPresigner(c);
  const url = await p.url('bucket', 'group/r.git/1-0123456789ab.bundle', 3600);
  assert.equal(await sdkAccepts(c, 'bucket', '/bucket', url), true);
  const tampered = [
    url.replace('1-0123456789ab.bundle', '2-0123456789ab.bundle'),
    url.replace('/group/r.git/', '/group/../r.git/'),
    url.replace(/X-Amz-Expires=3600/, 'X-Amz-Expires=604800'),
    url.replace(/X-Amz-Date=(\d{8}T\d{4})(\d\d)Z/, (_m, a: string, s: string) => `X-Amz-Date=${a}${String((Number(s) + 1) % 60).padStart(2, '0')}Z`),
    url.replace(/X-Amz-Signature=([0-9a-f])/, (_m, h: string) => `X-Amz-Signature=${h === '0' ? '1' : '0'}`),
  ];
  for (const t of tampered) {
    assert.notEqual(t, url);
    assert.equal(await sdkAccepts(c, 'bucket', '/bucket', t), false, t);
  }
  c.destroy();
});

test('s3rver: the URL downloads the object whatever its key; an expired URL, or one of an unknown key id, is refused', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-presign-');
  mkdirSync(join(t.dir, 's3'));
  const s3 = await startS3(join(t.dir, 's3'), 'bucket', ROOT);
  const saved = { ...process.env };
  try {
    Object.assign(process.env, s3.env);
    const store = new S3Store({ bucket: 'bucket', prefix: 'bundles' });
    const bucket = new BundleBucket({ bucket: 'bucket', prefix: 'bundles' });
    for (const [i, name] of ["group/a b+c%d!'()*~é", 'q?a=b&c#f;s:c@a$d,c', '日本語/名前.git', 'plain/r.git'].entries()) {
      const key = bucket.key(name, `${i + 1}-0123456789ab.bundle`);
      const body = Buffer.from(`bundle ${i} of ${name}\n`);
      await store.client.send(new PutObjectCommand({ Bucket: 'bucket', Key: key, Body: body }));
      const url = await bucket.url(key);
      assert.doesNotMatch(url, /x-amz-user-agent|amz-sdk/i);
      const r = await fetch(url);
      assert.equal(r.status, 200, `${name}: ${url}`);
      assert.deepEqual(Buffer.from(await r.arrayBuffer()), body);
    }
    const key = bucket.key('plain/r.git', '4-0123456789ab.bundle');
    const creds = await store.client.config.credentials();
    const target = learnTarget(await getSignedUrl(store.client, new GetObjectCommand({ Bucket: 'bucket', Key: 'gitwire-probe/k' }), { expiresIn: 60 }))!.target;
    // signed two minutes ago for one: expired
    const old = presignGet(target, key, creds, 60, new Date(Date.now() - 120_000));
    const r1 = await fetch(old);
    assert.equal(r1.status, 403);
    assert.match(await r1.text(), /expired/);
    // a key id the store does not know
    const r2 = await fetch(presignGet(target, key, { ...creds, accessKeyId: 'NOTAKEY' }, 60, new Date()));
    assert.equal(r2.status, 403);
    await r2.arrayBuffer();
    store.client.destroy();
  } finally {
    for (const k of Object.keys(s3.env)) { if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k]; }
    await s3.stop();
    t.cleanup();
  }
});
