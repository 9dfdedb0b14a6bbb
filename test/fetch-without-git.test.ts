/**
 * No `git` on the fetch path (issue #37, item 7): `serve` with no git on its
 * PATH starts, and answers ls-remote, clone, fetch, shallow and partial
 * clone over HTTP and git:// with packs it makes itself; every result
 * passes `git fsck --strict`. A push there is refused with an error that
 * names what is missing, never a broken stream.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { git, run, tmp } from './helpers/git.js';
import { commit, makeRichRepo } from './helpers/fixtures.js';
import { startServe, type ServerProc } from './helpers/server-process.js';

let t: ReturnType<typeof tmp>;
let srv: ServerProc;
let root: string;

before(async () => {
  t = tmp('gitwire-nogit-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const rich = makeRichRepo(t.dir);
  git(['clone', '-q', '--bare', rich, join(root, 'rich.git')]);
  // a PATH with node and sh only: no git
  const bin = join(t.dir, 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, join(bin, 'node'));
  assert.notEqual(run('sh', ['-c', 'command -v git'], { env: { PATH: bin } }).status, 0);
  srv = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--enable', 'receive-pack'], { PATH: bin });
});

after(async () => {
  await srv?.stop();
  t?.cleanup();
});

function fsckStrict(dir: string): void {
  const r = run('git', ['-C', dir, 'fsck', '--strict', '--no-progress']);
  assert.equal(r.status, 0, `fsck --strict: ${r.stderr.toString()}`);
}

test('serve starts without git and says what needs it', async () => {
  // the start-up summary follows the listeners' lines
  for (let i = 0; i < 100 && !srv.logs.some((l) => l.includes('gitwire serve:')); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(srv.logs.some((l) => l.includes('git: none found (push needs it)')), srv.logs.join('\n'));
});

for (const proto of ['2', '0']) {
  for (const via of ['http', 'git'] as const) {
    const url = () => via === 'http' ? `http://127.0.0.1:${srv.httpPort}/rich.git` : `git://127.0.0.1:${srv.gitPort}/rich.git`;

    test(`protocol v${proto} over ${via}: ls-remote, clone, shallow, partial and incremental fetch with no git on the server`, () => {
      const c = ['-c', `protocol.version=${proto}`];
      const ls = git([...c, 'ls-remote', url()]);
      assert.match(ls, /refs\/heads\/main/);
      const dest = join(t.dir, `clone-${via}-${proto}`);
      git([...c, 'clone', '-q', '--mirror', url(), dest]);
      fsckStrict(dest);
      assert.equal(git(['-C', dest, 'for-each-ref']), git(['-C', join(root, 'rich.git'), 'for-each-ref']));
      const shallow = join(t.dir, `shallow-${via}-${proto}`);
      git([...c, 'clone', '-q', '--bare', '--depth', '2', url(), shallow]);
      fsckStrict(shallow);
      assert.equal(git(['-C', shallow, 'rev-list', '--count', 'HEAD']).trim(), '2');
      git([...c, '-C', shallow, 'fetch', '-q', '--deepen', '3']);
      assert.equal(git(['-C', shallow, 'rev-list', '--count', 'HEAD']).trim(), '5');
      fsckStrict(shallow);
      if (proto === '2') {
        const partial = join(t.dir, `partial-${via}-${proto}`);
        git([...c, 'clone', '-q', '--bare', '--filter=blob:none', url(), partial]);
        // the promisor objects are fetched lazily, from the same server
        git(['-C', partial, 'cat-file', '-p', 'HEAD:a.txt']);
        fsckStrict(partial);
      }
    });
  }
}

test('an incremental fetch after new commits, with no git on the server', () => {
  const url = `http://127.0.0.1:${srv.httpPort}/rich.git`;
  const dest = join(t.dir, 'incremental');
  git(['clone', '-q', url, dest]);
  // new history on the server (written by this test's git, not the server's)
  const work = join(t.dir, 'work');
  git(['clone', '-q', join(root, 'rich.git'), work]);
  for (let i = 0; i < 3; i++) commit(work, `more ${i}`, { 'a.txt': `changed ${i}\n`.repeat(100), [`n/${i}.txt`]: `new ${i}\n` });
  git(['-C', work, 'push', '-q', 'origin', 'HEAD:main']);
  git(['-C', dest, 'fetch', '-q']);
  assert.equal(git(['-C', dest, 'rev-parse', 'origin/main']), git(['-C', join(root, 'rich.git'), 'rev-parse', 'main']));
  fsckStrict(dest);
});

test('a push with no git on the server is refused, naming what is missing', () => {
  const dest = join(t.dir, 'pusher');
  git(['clone', '-q', `http://127.0.0.1:${srv.httpPort}/rich.git`, dest]);
  commit(dest, 'to push', { 'p.txt': 'p\n' });
  const r = run('git', ['-C', dest, 'push', `git://127.0.0.1:${srv.gitPort}/rich.git`, 'HEAD:refs/heads/pushed']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr.toString(), /pushing needs git on the server/);
  assert.equal(run('git', ['-C', join(root, 'rich.git'), 'rev-parse', '--verify', '-q', 'refs/heads/pushed']).status, 1);
});
