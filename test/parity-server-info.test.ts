/**
 * receive.updateServerInfo end to end: after each push, info/refs and
 * objects/info/packs in the gitwire-served repository are byte for byte
 * the files git's own receive-pack writes in its twin (installed git: the
 * files have not changed since long before 2.39). Pushes are small ones
 * (loose objects) and large ones (a pack kept: receive.unpackLimit=1), with
 * annotated tags (the `^{}` lines), a deletion, and an old-style info/packs
 * (`D` lines) that git rewrites.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, push, normalizeClient, type Impl } from './helpers/push.js';

const read = (p: string) => (existsSync(p) ? readFileSync(p, 'latin1') : '<none>');
const files = (d: string) => ({ refs: read(join(d, 'info', 'refs')), packs: read(join(d, 'objects', 'info', 'packs')) });

test('receive.updateServerInfo: info/refs and objects/info/packs after each push are the files git receive-pack writes', () => {
  const t = tmp('gitwire-server-info-');
  try {
    const client = join(t.dir, 'client');
    git(['init', '-q', '-b', 'main', client]);
    commit(client, 'one', { 'a.txt': 'a\n' });
    git(['tag', '-a', '-m', 'v1 tag', 'v1'], { cwd: client });
    git(['tag', '-a', '-m', 'tag of a tag', 'v1-outer', 'v1'], { cwd: client });
    const srv = {} as Record<Impl, string>;
    for (const impl of IMPLS) {
      const d = join(t.dir, impl, 'server.git');
      mkdirSync(join(d, '..'), { recursive: true });
      git(['init', '-q', '--bare', '-b', 'main', d]);
      git(['config', 'receive.updateServerInfo', 'true'], { cwd: d });
      srv[impl] = d;
    }
    const step = (what: string, args: string[], before?: (d: string) => void, packOrderFree = false) => {
      const out = {} as Record<Impl, { code: number; stderr: string }>;
      for (const impl of IMPLS) {
        before?.(srv[impl]);
        out[impl] = push(impl, client, srv[impl], args);
      }
      assert.equal(out.gitwire.code, out.git.code, what);
      assert.equal(normalizeClient(out.gitwire.stderr, srv.gitwire), normalizeClient(out.git.stderr, srv.git), what);
      const a = files(srv.gitwire), b = files(srv.git);
      assert.equal(a.refs, b.refs, what);
      if (!packOrderFree) assert.equal(a.packs, b.packs, what);
      else assert.deepEqual(a.packs.split('\n').sort(), b.packs.split('\n').sort(), what);
    };
    // loose objects, annotated tags (and a tag of a tag: peeled to the commit)
    step('first push', ['main', 'v1', 'v1-outer']);
    assert.match(files(srv.git).refs, /\^\{\}\n/);
    assert.equal(files(srv.git).packs, '\n');
    // a kept pack
    for (let i = 0; i < 3; i++) commit(client, `c${i}`, { [`f${i}.txt`]: `content ${i}\n` });
    step('a pack kept', ['main', 'main:refs/heads/side'], (d) => git(['config', 'receive.unpackLimit', '1'], { cwd: d }));
    assert.match(files(srv.git).packs, /^P pack-[0-9a-f]+\.pack\n\n$/);
    // a second pack: the old file's order is kept, the new pack follows
    commit(client, 'more', { 'g.txt': 'g\n' });
    step('a second pack', ['main']);
    assert.equal(files(srv.git).packs.split('\n').filter((l) => l.startsWith('P ')).length, 2);
    // a deletion (no objects): info/refs loses the branch; an identical file is left alone
    const packsFile = join(srv.gitwire, 'objects', 'info', 'packs');
    const mtime = statSync(packsFile).mtimeMs;
    step('a deletion', [':refs/heads/side']);
    assert.equal(statSync(packsFile).mtimeMs, mtime, 'an unchanged objects/info/packs is not rewritten');
    // an old-style info/packs (a D line) is stale: rewritten from the packs there. Which order
    // git gives several packs then is its own accident: it sorts them by the addresses of their
    // structs in memory (server-info.c compare_info()), so only the lines are compared
    commit(client, 'last', { 'h.txt': 'h\n' });
    step('stale info/packs', ['main'], (d) => {
      const p = join(d, 'objects', 'info', 'packs');
      writeFileSync(p, `D something\n${readFileSync(p, 'latin1')}`);
    }, true);
    assert.equal(files(srv.git).packs.split('\n').filter((l) => l.startsWith('P ')).length, 3);
    // receive.updateServerInfo unset: nothing is written
    const plain = join(t.dir, 'plain.git');
    git(['init', '-q', '--bare', '-b', 'main', plain]);
    assert.equal(push('gitwire', client, plain, ['main']).code, 0);
    assert.equal(existsSync(join(plain, 'info', 'refs')), false);
    assert.equal(existsSync(join(plain, 'objects', 'info', 'packs')), false);
    assert.equal(git(['fsck', '--no-progress'], { cwd: srv.gitwire }), '');
  } finally { t.cleanup(); }
});
