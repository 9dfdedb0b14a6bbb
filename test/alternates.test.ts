/**
 * objects/info/alternates with C-quoted paths (git's quote_c_style): the one
 * reader (src/repo/alternates.ts) used by the object database, the storage
 * check and receive-pack's `.have` lines, against what git itself reads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { Repository } from '../src/repo/repository.js';
import { quoteAlternate, readAlternates, unquoteC } from '../src/repo/alternates.js';
import { storageOutside } from '../src/transport/paths.js';

test('unquoteC reads what quote_c_style writes, octal bytes included; bad quoting is refused', () => {
  assert.equal(unquoteC('"a\\"b\\\\c\\td\\n"'), 'a"b\\c\td\n');
  assert.equal(unquoteC('"caf\\303\\251"'), 'café');
  for (const p of ['x:y', '"lead', 'tab\t:nl\nctl\x01']) assert.equal(unquoteC(quoteAlternate(p)), p);
  for (const bad of ['"a', '"a\\q"', '"a\\3"', '"a"b"']) assert.equal(unquoteC(bad), undefined, bad);
});

test('a C-quoted alternate (octal escapes, a colon, a quote) is read as git reads it', () => {
  const t = tmp('gitwire-alt-');
  try {
    // the lender's directory name needs quoting: a non-ASCII name, a colon and a double quote
    const lenderDir = join(t.dir, 'root', 'lend:é"r');
    mkdirSync(join(t.dir, 'root'));
    git(['init', '-q', lenderDir]);
    const tip = commit(lenderDir, 'lent', { 'f.txt': 'lent\n' });
    const borrower = join(t.dir, 'root', 'b.git');
    git(['init', '-q', '--bare', borrower]);
    const quoted = '"' + [...Buffer.from(join(lenderDir, '.git', 'objects'))].map((c) =>
      c === 0x22 ? '\\"' : c === 0x5c ? '\\\\' : c >= 0x80 ? `\\${c.toString(8)}` : String.fromCharCode(c)).join('') + '"';
    writeFileSync(join(borrower, 'objects', 'info', 'alternates'), `# a comment\n${quoted}\n`);
    // git reads it
    assert.equal(git(['--git-dir', borrower, 'cat-file', '-t', tip]).trim(), 'commit');
    // and so does gitwire, through the one reader
    assert.deepEqual(readAlternates(join(borrower, 'objects')).dirs, [join(lenderDir, '.git', 'objects')]);
    const repo = new Repository(borrower, borrower, process.env);
    try { assert.equal(repo.commit(Buffer.from(tip, 'hex'))?.parents.length, 0); } finally { repo.close(); }
    assert.equal(storageOutside(join(t.dir, 'root'), borrower), undefined, 'inside the root');
    assert.match(storageOutside(join(t.dir, 'root', 'b.git'), borrower) ?? '', /alternates/, 'outside a narrower root');
    // a line whose quoting cannot be read is refused by the storage check (fail closed) and skipped by the reader
    writeFileSync(join(borrower, 'objects', 'info', 'alternates'), '"broken\\q"\n');
    assert.deepEqual(readAlternates(join(borrower, 'objects')), { dirs: [], unreadable: ['"broken\\q"'] });
    assert.match(storageOutside(join(t.dir, 'root'), borrower) ?? '', /cannot be read/);
  } finally { t.cleanup(); }
});
