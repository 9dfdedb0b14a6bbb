/**
 * Progress text of the native producer (src/pack/produce/progress.ts)
 * against real git's pack-objects: the same meters, byte for byte.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { git, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { ProgressMeter, totalLine } from '../src/pack/produce/progress.js';

function meterText(title: string, total: number, upTo: number, clock: () => number = () => 0): string {
  let out = '';
  const m = new ProgressMeter(title, total, (s) => { out += s; }, clock);
  for (let i = 1; i <= upTo; i++) m.display(i);
  m.stop();
  return out;
}

test('progress: "Enumerating objects" and "Counting objects" as pack-objects --progress writes them', () => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'r');
    git(['init', '-q', dir]);
    for (let i = 0; i < 5; i++) commit(dir, `c${i}`, { [`f${i}`]: `${i}\n`.repeat(i + 1), g: `${i}\n` });
    const n = git(['rev-list', '--objects', 'HEAD'], { cwd: dir }).split('\n').filter(Boolean).length;
    const err = run('git', ['pack-objects', '--revs', '--stdout', '--progress'], { cwd: dir, input: 'HEAD\n' }).stderr.toString('latin1');
    const enumerating = err.slice(err.indexOf('Enumerating objects'), err.indexOf('\n', err.indexOf('Enumerating objects')) + 1);
    assert.equal(meterText('Enumerating objects', 0, n), enumerating);
    const at = err.indexOf('Counting objects');
    const counting = err.slice(at, err.indexOf(', done.\n', at) + 8);
    assert.equal(meterText('Counting objects', n, n), counting);
  } finally { t.cleanup(); }
});

test('progress: a meter updates on a percent change, or once a second; a shorter counter is padded over the old one', () => {
  let now = 0;
  let out = '';
  const m = new ProgressMeter('Enumerating objects', 0, (s) => { out += s; }, () => now);
  m.display(1);
  assert.equal(out, '', 'no total: nothing before the timer');
  now = 1000;
  m.display(12345);
  assert.equal(out, 'Enumerating objects: 12345\r');
  m.display(12346);
  assert.equal(out, 'Enumerating objects: 12345\r', 'not again within the second');
  now = 2000;
  m.display(7);
  assert.equal(out, 'Enumerating objects: 12345\rEnumerating objects: 7    \r');
  m.stop();
  assert.match(out, /Enumerating objects: 7, done\.\n$/);
  // a meter that never showed a value says nothing at its end
  let quiet = '';
  new ProgressMeter('Counting objects', 10, (s) => { quiet += s; }).stop();
  assert.equal(quiet, '');
});

test('progress: the closing line in git v2.55\'s words', () => {
  assert.equal(totalLine({ written: 20, writtenDelta: 3, reused: 7, reusedDelta: 2, packReused: 10, packsReused: 1 }),
    'Total 20 (delta 3), reused 7 (delta 2), pack-reused 10 (from 1)\n');
  const g = process.env.GITWIRE_GIT_2_55 ? join(process.env.GITWIRE_GIT_2_55, 'bin', 'git') : '';
  if (!g || !existsSync(g)) return;
  const t = tmp();
  try {
    const dir = join(t.dir, 'r');
    git(['init', '-q', dir]);
    for (let i = 0; i < 3; i++) commit(dir, `c${i}`, { f: `${i}\n` });
    git(['repack', '-adbq'], { cwd: dir });
    const n = git(['rev-list', '--objects', 'HEAD'], { cwd: dir }).split('\n').filter(Boolean).length;
    const err = run(g, ['pack-objects', '--revs', '--stdout', '--progress'], { cwd: dir, input: 'HEAD\n' }).stderr.toString();
    assert.ok(err.endsWith(totalLine({ written: n, writtenDelta: 0, reused: 0, reusedDelta: 0, packReused: n, packsReused: 1 })), err);
  } finally { t.cleanup(); }
});
