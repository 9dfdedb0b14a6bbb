/**
 * Bundles in S3-compatible storage (`--bundles auto --bundle-store
 * s3://…`), against s3rver: the server makes the bundle after its clones,
 * uploads it, keeps its header alone, and lists a pre-signed URL of the
 * bucket; clones take the bundle from there (git 2.39 with --bundle-uri,
 * git 2.55 with transfer.bundleURI when present), and no bundle byte passes
 * through gitwire: its route has nothing to serve, and no download is logged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, git, gitEnv, run, tmp } from './helpers/git.js';
import { GIT_2_55, gitWith, makeBitmapRepo } from './helpers/bitmap-repo.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { startS3 } from './helpers/lfs-s3.js';
import { bundleDir, listBundles, parseBundleHeader } from '../src/bundle/index.js';

function requests(p: ServerProc): Array<Record<string, unknown>> {
  return p.logs.flatMap((l) => { try { const j = JSON.parse(l) as Record<string, unknown>; return j.msg === 'request' ? [j] : []; } catch { return []; } });
}
const refsOf = (url: string, bin = 'git') => {
  const r = run(bin, ['ls-remote', url]);
  assert.equal(r.status, 0, r.stderr.toString());
  return r.stdout.toString().split('\n').filter((l) => l && !l.endsWith('^{}') && !l.includes('\trefs/bundles/')).sort().join('\n');
};

test('S3: made after the clones, uploaded, offered by a signed URL; clones take it from the bucket, none of its bytes from gitwire', { timeout: 180_000 }, async () => {
  const t = tmp('gitwire-bundle-s3-');
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const repo = makeBitmapRepo(root, 'r.git', { commits: 30 });
  const s3 = await startS3(join(t.dir, 's3'), 'bucket', ROOT);
  let s: ServerProc | undefined;
  try {
    s = await startServe(root, ['--http', '0', '--bundles', 'auto', '--bundle-min-size', '0', '--bundle-store', 's3://bucket/bundles'], s3.env);
    const url = `http://127.0.0.1:${s.httpPort}/r.git`;
    for (let i = 0; i < 3; i++) git(['clone', '-q', '--bare', url, join(t.dir, `warm${i}`)]);
    let b;
    for (let i = 0; i < 500 && !(b = listBundles(bundleDir({ commonDir: repo }))[0]); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(b, 'the third clone made the bundle');
    // here: its header alone
    assert.ok(statSync(b.file).size < 4096, `the local file is the header (${statSync(b.file).size} bytes)`);
    const list = Buffer.from(await (await fetch(`${url}/git-upload-pack`, {
      method: 'POST', body: '0017command=bundle-uri\n00010000', headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request' },
    })).arrayBuffer()).toString('latin1');
    const m = /bundle\.gitwire\.uri=(http:\/\/127\.0\.0\.1:(\d+)\/bucket\/bundles\/r\.git\/[^?]+\?[^\n]*?)[0-9a-f]{4}bundle\.gitwire\.creationtoken=/.exec(list);
    assert.ok(m, `a signed URL of the bucket: ${list}`);
    assert.equal(Number(m[2]), s3.port);
    const signed = m[1]!;
    const body = Buffer.from(await (await fetch(signed)).arrayBuffer());
    const header = parseBundleHeader(body);
    assert.ok(header.refs.length > 3);
    const file = join(t.dir, 'from-s3.bundle');
    writeFileSync(file, body);
    const verifier = join(t.dir, 'verifier');
    git(['init', '-q', verifier]);
    assert.equal(run('git', ['bundle', 'verify', file], { cwd: verifier }).status, 0);
    // the route serves nothing: the bytes are the bucket's
    const local = await fetch(`${url}/info/bundles/${b.name}`);
    assert.equal(local.status, 404);
    await local.arrayBuffer();
    // git 2.39, pointed at the signed URL
    const before = requests(s!).length;
    const c239 = join(t.dir, 'c239');
    const r = run('git', ['clone', '-q', '--bare', `--bundle-uri=${signed}`, url, c239]);
    assert.equal(r.status, 0, r.stderr.toString());
    git(['fsck', '--strict', '--no-dangling'], { cwd: c239 });
    assert.equal(refsOf(c239), refsOf(url));
    if (GIT_2_55) {
      const c255 = join(t.dir, 'c255');
      const r2 = run(GIT_2_55, ['-c', 'transfer.bundleURI=true', 'clone', '-q', '--bare', url, c255], { env: { ...gitEnv } });
      assert.equal(r2.status, 0, r2.stderr.toString());
      gitWith(GIT_2_55, ['fsck', '--strict', '--no-dangling'], c255);
      assert.equal(refsOf(c255, GIT_2_55), refsOf(url, GIT_2_55));
      // it unbundled what it downloaded (refs/bundles/*); with nothing newer on the server it needs no fetch at all
      assert.match(gitWith(GIT_2_55, ['for-each-ref', 'refs/bundles/'], c255).toString(), /refs\/bundles\/heads\/main/);
    }
    for (let i = 0; i < 100 && !requests(s!).slice(before).some((e) => e.command === 'fetch'); i++) await new Promise((res) => setTimeout(res, 20));
    const lines = requests(s!).slice(before);
    assert.deepEqual(lines.filter((e) => e.command === 'bundle' && e.status !== 404), [], 'no bundle byte from gitwire');
    const fetches = lines.filter((e) => e.command === 'fetch');
    assert.ok(fetches.length >= 1);
    for (const f of fetches) assert.equal(f.bundle, 'taken');
  } finally {
    await s?.stop();
    await s3.stop();
    t.cleanup();
  }
});
