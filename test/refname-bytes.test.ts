/**
 * Ref names are bytes (#24 item 10): a name that is not UTF-8 is pushed,
 * stored, listed and reported with the bytes the client sent, as git does;
 * distinct names never fall onto one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { BIN, git, gitBuf, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { decodeName, encodeName } from '../src/util/byte-name.js';

test('decodeName / encodeName: any bytes round-trip; UTF-8 decodes as it always did', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (a) => {
    const b = Buffer.from(a);
    assert.deepEqual(encodeName(decodeName(b)), b);
  }), { numRuns: 2000 });
  fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 32 }), (s) => {
    const b = Buffer.from(s);
    assert.equal(decodeName(b), b.toString());
    assert.deepEqual(encodeName(s), b);
  }), { numRuns: 1000 });
  // two names that UTF-8 decoding would both turn into U+FFFD U+FFFD stay apart
  assert.notEqual(decodeName(Buffer.from([0xff, 0xfe])), decodeName(Buffer.from([0xfe, 0xff])));
});

/** the ref file names under refs/heads, as bytes (hex) */
function heads(dir: string): string[] {
  return readdirSync(join(dir, 'refs', 'heads'), { encoding: 'buffer' }).map((b) => b.toString('hex')).sort();
}

test('a push of names that are not UTF-8 creates the names sent, as git receive-pack does; the report and the advertisement carry their bytes', () => {
  const t = tmp('gitwire-bytes-');
  try {
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    const tip = commit(src, 'a', { 'a.txt': 'a\n' });
    const out: Record<string, { heads: string[]; stderr: Buffer; adv: Buffer; ls: Buffer }> = {};
    for (const impl of ['git', 'gitwire'] as const) {
      const dir = join(t.dir, `${impl}.git`);
      git(['init', '-q', '--bare', dir]);
      // the refspecs as bytes, through the shell's printf
      const p = run('sh', ['-c', `git push ${impl === 'gitwire' ? `--receive-pack='${BIN} receive-pack'` : ''} "$0" "main:$(printf 'refs/heads/\\377\\376')" "main:$(printf 'refs/heads/\\376\\377')"`, dir], { cwd: src });
      assert.equal(p.status, 0, p.stderr.toString());
      // a loose ref with such a name, written by hand: listed too
      writeFileSync(Buffer.from(join(dir, 'refs', 'heads', 'loose\xff'), 'latin1'), `${tip}\n`);
      const cmd = impl === 'git' ? ['git', 'upload-pack'] : [BIN, 'upload-pack'];
      const adv = run(cmd[0]!, [...cmd.slice(1), '--advertise-refs', dir]).stdout;
      const ls = run(cmd[0]!, [...cmd.slice(1), '--stateless-rpc', dir], { input: '0014command=ls-refs\n00010000', env: { GIT_PROTOCOL: 'version=2' } }).stdout;
      out[impl] = { heads: heads(dir), stderr: p.stderr, adv, ls };
    }
    const w = out.gitwire!, g = out.git!;
    assert.deepEqual(w.heads, ['6c6f6f7365ff', 'feff', 'fffe']);
    assert.deepEqual(w.heads, g.heads);
    // the client's lines name the refs by their bytes
    assert.ok(w.stderr.includes(Buffer.from(' -> \xff\xfe\n', 'latin1')), w.stderr.toString('latin1'));
    assert.deepEqual(w.ls, g.ls);
    // the advertisement, but for the agent capability
    const noAgent = (x: Buffer) => x.toString('latin1').replace(/agent=\S+ ?/, '').slice(4);
    assert.equal(noAgent(w.adv), noAgent(g.adv));
    assert.ok(w.adv.includes(Buffer.from('refs/heads/loose\xff\0', 'latin1')));
    // and git reads what gitwire wrote
    assert.equal(gitBuf(['for-each-ref', '--format=%(refname)'], { cwd: join(t.dir, 'gitwire.git') }).toString('latin1').split('\n').filter(Boolean).length, 3);
  } finally {
    t.cleanup();
  }
});
