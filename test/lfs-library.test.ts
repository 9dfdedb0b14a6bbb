/**
 * LFS through the library: `startServer({ lfs })` with a store of one's
 * own, `authenticate`/`authorize` seeing the services `lfs-download` and
 * `lfs-upload`, and a store that fails as a full disk does (writes to
 * /dev/full give ENOSPC): the real git-lfs client gets the per-object
 * error and nothing is left behind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWriteStream, existsSync, readdirSync, writeFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RequestInfo } from '../src/index.js';
import { LocalRepositoryStore, LfsService, type LfsStore } from '../src/lfs/index.js';
import { parseBasic } from '../src/transport/htpasswd.js';
import { git, tmp } from './helpers/git.js';
import { gitRun, haveGitLfs, lfsHome, setCredentials, writeBlob } from './helpers/lfs.js';

/** the local store, except that an upload's bytes go to /dev/full */
class FullDisk extends LocalRepositoryStore {
  protected override openTemp(oid: string): { file: string; out: WriteStream } {
    const file = join(this.tmp, `${oid}-full`);
    writeFileSync(file, '');
    return { file, out: createWriteStream('/dev/full', { flags: 'w' }) };
  }
}
const fullDisk: LfsStore = { forRepository: (gitDir) => new FullDisk(join(gitDir, 'lfs')) };

test('library: authorize sees lfs-download and lfs-upload; a full disk gives git-lfs a per-object error, nothing stored', { skip: haveGitLfs && existsSync('/dev/full') ? false : 'needs git-lfs and /dev/full' }, async () => {
  const t = tmp('gitwire-lfs-lib-');
  git(['init', '-q', '--bare', '-b', 'main', join(t.dir, 'r.git')]);
  const seen: string[] = [];
  const server = await startServer({
    root: t.dir, http: 0, spawnHelper: false,
    lfs: new LfsService({ store: fullDisk }),
    authenticate: (info: RequestInfo) => {
      const c = parseBasic(info.req?.headers.authorization);
      if (c?.user === 'lib' && c.password === 'pw') { info.user = 'lib'; return true; }
      return { status: 401, message: 'Authentication required', headers: { 'WWW-Authenticate': 'Basic realm="lib"' } };
    },
    authorize: (info: RequestInfo) => { seen.push(info.service ?? ''); return true; },
    receivePack: true,
  });
  try {
    // git-lfs retries a 5xx with back-off (8 times by default): once is enough here
    const h = lfsHome(join(t.dir, 'home'), { 'lfs.transfer.maxretries': '1', 'lfs.transfer.maxretrydelay': '1' });
    setCredentials(h, server.httpPort!, 'lib', 'pw');
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    assert.equal((await gitRun(['lfs', 'track', '*.bin'], w, h.env)).code, 0);
    writeBlob(join(w, 'a.bin'), 300_000);
    assert.equal((await gitRun(['add', '-A'], w, h.env)).code, 0);
    assert.equal((await gitRun(['commit', '-q', '-m', 'a'], w, h.env)).code, 0);
    const r = await gitRun(['lfs', 'push', `http://127.0.0.1:${server.httpPort}/r.git`, 'main'], w, h.env);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /no space left on device/, r.stderr);
    assert.ok(seen.includes('lfs-upload'), seen.join(' '));
    const lfsDir = join(t.dir, 'r.git', 'lfs');
    assert.ok(!existsSync(join(lfsDir, 'objects')), 'no object');
    assert.deepEqual(readdirSync(join(lfsDir, 'tmp')), [], 'no temporary file');
    // a download batch is asked as lfs-download
    seen.length = 0;
    const res = await fetch(`http://127.0.0.1:${server.httpPort}/r.git/info/lfs/objects/batch`, {
      method: 'POST', headers: { Authorization: `Basic ${Buffer.from('lib:pw').toString('base64')}`, 'Content-Type': 'application/vnd.git-lfs+json' },
      body: JSON.stringify({ operation: 'download', objects: [] }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(seen, ['lfs-download']);
  } finally { await server.shutdown(100); t.cleanup(); }
});
