/**
 * receive.autogc end to end: after a push, gitwire runs auto-maintenance in
 * the repository as git's receive-pack does (git 2.55: `git maintenance run
 * --auto --quiet --[no-]detach`; with an installed git older than 2.47,
 * that git's own `gc --auto --quiet`). A push that makes more packs than
 * gc.autoPackLimit leaves one pack, as with `git receive-pack`;
 * receive.autogc=false and gc.auto=0 leave two.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, push, normalizeClient, type Impl } from './helpers/push.js';

function packs(dir: string): number {
  const m = /^packs: (\d+)$/m.exec(git(['count-objects', '-v'], { cwd: dir }));
  return Number(m![1]);
}

test('receive.autogc: a push past gc.autoPackLimit is repacked afterwards, as with git receive-pack; receive.autogc=false and gc.auto=0 turn it off', () => {
  const t = tmp('gitwire-autogc-');
  try {
    const client = join(t.dir, 'client');
    git(['init', '-q', '-b', 'main', client]);
    const cases: Array<{ name: string; config: Array<[string, string]>; packed: boolean }> = [
      { name: 'gc.autoPackLimit=1', config: [['gc.autoPackLimit', '1'], ['gc.autoDetach', 'false'], ['maintenance.autoDetach', 'false']], packed: true },
      { name: 'receive.autogc=false', config: [['gc.autoPackLimit', '1'], ['receive.autogc', 'false']], packed: false },
      { name: 'gc.auto=0', config: [['gc.autoPackLimit', '1'], ['gc.auto', '0']], packed: false },
    ];
    let n = 0;
    for (const c of cases) {
      for (let i = 0; i < 4; i++) commit(client, `c${n++}`, { [`f${n}.txt`]: `content ${n}\n` });
      const srv = {} as Record<Impl, string>;
      const out = {} as Record<Impl, { code: number; stderr: string }>;
      for (const impl of IMPLS) {
        const d = join(t.dir, c.name, impl, 'server.git');
        mkdirSync(join(d, '..'), { recursive: true });
        git(['init', '-q', '--bare', '-b', 'main', d]);
        for (const [k, v] of [...c.config, ['receive.unpackLimit', '1']]) git(['config', k!, v!], { cwd: d });
        srv[impl] = d;
        // two pushes, two packs: the second is past gc.autoPackLimit
        push(impl, client, d, ['main~2:refs/heads/main']);
        out[impl] = push(impl, client, d, ['main']);
      }
      assert.equal(out.gitwire.code, out.git.code, c.name);
      assert.equal(normalizeClient(out.gitwire.stderr, srv.gitwire), normalizeClient(out.git.stderr, srv.git), c.name);
      assert.equal(packs(srv.gitwire), packs(srv.git), `${c.name}: packs`);
      assert.equal(packs(srv.gitwire), c.packed ? 1 : 2, c.name);
      assert.equal(git(['fsck', '--no-progress'], { cwd: srv.gitwire }), '');
    }
  } finally { t.cleanup(); }
});
