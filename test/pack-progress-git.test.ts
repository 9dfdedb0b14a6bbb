/**
 * The "remote: " lines a client shows for a clone or a fetch served by the
 * native producer, against git 2.55's upload-pack: the same lines, with
 * the same final counts (the percent updates in between may differ in
 * number). Three shapes, as git words them:
 *
 * - a clone from one bitmapped pack, sent as it is: no Counting or
 *   Compressing line, "pack-reused N (from 1)";
 * - a clone of a repository without a bitmap, whose pack holds exactly
 *   what is asked: git reuses every entry one by one (no pack reuse
 *   without a bitmap), counts, and searches the entries stored whole;
 * - an incremental fetch, without a bitmap (counted, searched), and from a
 *   bitmapped pack: what git's pack reuse takes is "pack-reused", the
 *   rest (deltas against the client's objects) is counted and reused;
 *   a partial clone (blob:none) from it too.
 *
 * The repositories are made the same every time (fixed dates, one delta
 * thread), so git 2.55's lines are recorded below (made with
 * a git 2.55.0 built from source on 2026-12-04, the repositories made by git
 * 2.39). With GITWIRE_GIT_2_55 set (its prefix) they come from that git
 * instead, run as the server on the same repositories.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';

const ORACLE = process.env.GITWIRE_GIT_2_55 ? join(process.env.GITWIRE_GIT_2_55, 'bin', 'git') : '';

/** git 2.55's final lines (see above) */
const RECORDED: Record<string, string[]> = {
  'clone (bitmap)': ['remote: Enumerating objects: 270, done.', 'remote: Total 270 (delta 0), reused 0 (delta 0), pack-reused 270 (from 1)'],
  'clone (no bitmap)': ['remote: Enumerating objects: 270, done.', 'remote: Counting objects: 100% (270/270), done.', 'remote: Compressing objects: 100% (85/85), done.',
    'remote: Total 270 (delta 154), reused 270 (delta 154), pack-reused 0 (from 0)'],
  // the thin pack's preferred bases (20) are in git's list, and so in its first two counts
  'fetch (no bitmap)': ['remote: Enumerating objects: 110, done.', 'remote: Counting objects: 100% (110/110), done.', 'remote: Compressing objects: 100% (37/37), done.',
    'remote: Total 90 (delta 55), reused 78 (delta 43), pack-reused 0 (from 0)'],
  'fetch (bitmap)': ['remote: Enumerating objects: 90, done.', 'remote: Total 90 (delta 0), reused 0 (delta 0), pack-reused 90 (from 1)'],
  'fetch (bitmap, layered pack)': ['remote: Enumerating objects: 90, done.', 'remote: Total 90 (delta 0), reused 0 (delta 0), pack-reused 90 (from 1)'],
  'clone (bitmap, layered pack, blob:none)': ['remote: Enumerating objects: 120, done.', 'remote: Total 120 (delta 0), reused 0 (delta 0), pack-reused 120 (from 1)'],
  'fetch --deepen (walk)': ['remote: Enumerating objects: 85, done.', 'remote: Counting objects: 100% (78/78), done.', 'remote: Compressing objects: 100% (12/12), done.', 'remote: Total 45 (delta 28), reused 45 (delta 28), pack-reused 0 (from 0)'],
  // a midx written by git 2.39 lists no bitmapped packs (BTMP): git 2.55 reuses from its preferred pack only,
  // under pack.allowPackReuse=multi too (the preferred pack is the fetched one: its thin bases, appended,
  // come after the REF_DELTAs naming them, which the leading whole words take as they stand)
  'clone (midx)': ['remote: Enumerating objects: 270, done.', 'remote: Counting objects: 100% (168/168), done.', 'remote: Compressing objects: 100% (117/117), done.', 'remote: Total 270 (delta 86), reused 100 (delta 30), pack-reused 102 (from 1)'],
  'fetch (midx)': ['remote: Enumerating objects: 90, done.', 'remote: Total 90 (delta 0), reused 0 (delta 0), pack-reused 90 (from 1)'],
  'clone (midx, multi)': ['remote: Enumerating objects: 270, done.', 'remote: Counting objects: 100% (168/168), done.', 'remote: Compressing objects: 100% (117/117), done.', 'remote: Total 270 (delta 86), reused 100 (delta 30), pack-reused 102 (from 1)'],
  'fetch (midx, multi)': ['remote: Enumerating objects: 90, done.', 'remote: Total 90 (delta 0), reused 0 (delta 0), pack-reused 90 (from 1)'],
  // (a delta the encoder would make under the limit only by taking back literals, git gives up on)
  'fetch (bitmap, newest loose)': ['remote: Enumerating objects: 90, done.', 'remote: Counting objects: 100% (90/90), done.', 'remote: Compressing objects: 100% (80/80), done.', 'remote: Total 90 (delta 43), reused 0 (delta 0), pack-reused 0 (from 0)'],
  // 40 new objects are deltas against the client's (older, bigger) objects: counted and reused one by one
  'fetch (bitmap, partly reused)': ['remote: Enumerating objects: 90, done.', 'remote: Counting objects: 100% (40/40), done.', 'remote: Total 90 (delta 40), reused 40 (delta 40), pack-reused 50 (from 1)'],
};

function content(i: number, lines: number): string {
  let s = '';
  for (let k = 0; k < lines; k++) s += `file ${i} line ${k}: ${(k * 7919 + i * 104729) % 100003}\n`;
  return s;
}

/** 30 commits over 12 files that grow and change (deltas), some tiny files (< 50 bytes: never searched). */
function build(dir: string, upTo: number, from = 0, shrink = false): void {
  if (from === 0) git(['init', '-q', '-b', 'main', dir]);
  for (let c = from; c < upTo; c++) {
    const files: Record<string, string> = { [`tiny/${c % 5}`]: `${c}\n` };
    for (let f = 0; f < 12; f++) if ((c + f) % 3 === 0) files[`src/f${f}.txt`] = content(f, shrink ? 160 - c * 3 + f : 40 + c * 3 + f) + `edit ${c}\n`;
    commit(dir, `commit ${c}`, files);
  }
}

/** The lines that end a meter, and the Total line, as the client shows them. */
function finalLines(stderr: string): string[] {
  return stderr.split(/[\r\n]/).filter((l) => l.startsWith('remote: ') && /(, done\.|^remote: Total )/.test(l)).map((l) => l.trimEnd());
}

function progressOf(args: string[], uploadPack: string, cwd?: string): string[] {
  // the client is git 2.55 when there is one: the upload-pack it starts runs the `git pack-objects` found first
  // on the PATH its client set up (a git 2.39 client's would be 2.39's, which words its Total line otherwise)
  const r = run(ORACLE && existsSync(ORACLE) ? ORACLE : 'git', [...args.slice(0, 1), '--progress', `--upload-pack=${uploadPack}`, ...args.slice(1)], { cwd });
  assert.equal(r.status, 0, r.stderr.toString());
  return finalLines(r.stderr.toString());
}

/** The repositories (made once), and a run of one case with a given upload-pack. */
function fixtures(dir: string): Record<string, (up: string, n: number) => string[]> {
  // the server: 20 commits a client has, then 10 more; one pack, with and without a bitmap
  const work = join(dir, 'work');
  build(work, 20);
  const client = join(dir, 'client.git');
  git(['clone', '-q', '--bare', '--no-local', work, client]);
  build(work, 30, 20);
  const plain = join(dir, 'plain.git');
  git(['clone', '-q', '--bare', '--no-local', work, plain]);
  // (a bare repository's repack writes a bitmap unless told not to)
  git(['-c', 'pack.threads=1', '-c', 'repack.writeBitmaps=false', 'repack', '-adq', '-f'], { cwd: plain });
  assert.ok(!readdirSync(join(plain, 'objects', 'pack')).some((f) => f.endsWith('.bitmap')));
  const bitmapped = join(dir, 'bitmapped.git');
  cpSync(plain, bitmapped, { recursive: true });
  git(['-c', 'pack.threads=1', 'repack', '-adbq'], { cwd: bitmapped });
  const fetch = (from: string) => (up: string, n: number) => {
    const c = join(dir, `f${n}`);
    cpSync(client, c, { recursive: true });
    return progressOf(['fetch', `file://${from}`, '+refs/heads/*:refs/heads/*'], up, c);
  };
  // a bitmapped pack whose newer half was packed onto the older one (`repack -adb` without -f: the old
  // entries and their deltas stay; what is new is searched against everything): git's pack reuse takes
  // some of a fetch, the rest is counted, reused one by one or compressed
  // the client's 20 commits packed whole (`repack` flags), then the 10 newer fetched (`fetchConfig`)
  const grown = (name: string, repack: string, fetchConfig: string[]) => {
    const r = join(dir, name);
    git(['clone', '-q', '--bare', '--no-local', client, r]);
    git(['-c', 'pack.threads=1', 'repack', repack, '-f'], { cwd: r });
    git([...fetchConfig, 'fetch', '-q', work, '+refs/heads/*:refs/heads/*'], { cwd: r });
    return r;
  };
  const layered = grown('layered.git', '-adbq', []);
  git(['-c', 'pack.threads=1', 'repack', '-adbq'], { cwd: layered });
  // the same, with the newest commits loose (pushed after the bitmap was written): all counted and searched
  const loose = grown('loose.git', '-adbq', ['-c', 'fetch.unpackLimit=100000']);
  git(['config', 'uploadpack.allowFilter', 'true'], { cwd: layered });
  // files that shrink: the newer objects are stored as deltas against the older, bigger ones, which a
  // fetch's client has: those git's pack reuse cannot take (their bases are not sent); the rest it takes
  const sw = join(dir, 'shrink-work');
  build(sw, 20, 0, true);
  const shrinkClient = join(dir, 'shrink-client.git');
  git(['clone', '-q', '--bare', '--no-local', sw, shrinkClient]);
  const shrink = join(dir, 'shrink.git');
  git(['clone', '-q', '--bare', '--no-local', sw, shrink]);
  git(['-c', 'pack.threads=1', 'repack', '-adbq', '-f'], { cwd: shrink });
  build(sw, 30, 20, true);
  git(['fetch', '-q', sw, '+refs/heads/*:refs/heads/*'], { cwd: shrink });
  git(['-c', 'pack.threads=1', 'repack', '-adbq'], { cwd: shrink });
  // a multi-pack bitmap over two packs (the newer one a fetched thin pack, its bases appended): git reuses
  // from the preferred pack, or with pack.allowPackReuse=multi from both when the midx lists its bitmapped
  // packs (BTMP, written by git 2.44 and later: by git 2.55 when it is here, else the installed git's midx
  // has none, and git 2.55 reuses from the preferred pack alone)
  const midx = grown('midx.git', '-adq', ['-c', 'fetch.unpackLimit=1']);
  // (recording: the installed git's midx, which is what a run without git 2.55 compares against)
  // the preferred pack named (else git picks by the packs' times, which a second can tie): the fetched one
  const packDir = join(midx, 'objects', 'pack');
  const fetched = readdirSync(packDir).filter((f) => f.endsWith('.pack')).find((f) => !existsSync(join(packDir, f.replace(/\.pack$/, '.bitmap'))));
  assert.ok(fetched);
  const mw = run(ORACLE && existsSync(ORACLE) && !process.env.GITWIRE_RECORD ? ORACLE : 'git', ['multi-pack-index', 'write', '--bitmap', `--preferred-pack=${fetched}`], { cwd: midx });
  assert.equal(mw.status, 0, mw.stderr.toString());
  assert.ok(readdirSync(join(midx, 'objects', 'pack')).some((f) => /^multi-pack-index-.*\.bitmap$/.test(f)));
  const withReuse = (mode: string, go: (up: string, n: number) => string[]) => (up: string, n: number) => {
    git(['config', 'pack.allowPackReuse', mode], { cwd: midx });
    return go(up, n);
  };
  return {
    'clone (midx)': withReuse('single', (up, n) => progressOf(['clone', '--bare', '--no-local', `file://${midx}`, join(dir, `c${n}`)], up)),
    'fetch (midx)': withReuse('single', fetch(midx)),
    'clone (midx, multi)': withReuse('multi', (up, n) => progressOf(['clone', '--bare', '--no-local', `file://${midx}`, join(dir, `c${n}`)], up)),
    'fetch (midx, multi)': withReuse('multi', fetch(midx)),
    'fetch --deepen (walk)': (up, n) => {
      const c = join(dir, `d${n}`);
      git(['clone', '-q', '--bare', '--depth=3', `file://${plain}`, c]);
      return progressOf(['fetch', '--deepen=5', `file://${plain}`], up, c);
    },
    'fetch (bitmap, partly reused)': (up, n) => {
      const c = join(dir, `f${n}`);
      cpSync(shrinkClient, c, { recursive: true });
      return progressOf(['fetch', `file://${shrink}`, '+refs/heads/*:refs/heads/*'], up, c);
    },
    'fetch (bitmap, layered pack)': fetch(layered),
    'fetch (bitmap, newest loose)': fetch(loose),
    'clone (bitmap, layered pack, blob:none)': (up, n) => progressOf(['clone', '--bare', '--no-local', '--filter=blob:none', `file://${layered}`, join(dir, `c${n}`)], up),
    'clone (bitmap)': (up, n) => progressOf(['clone', '--bare', '--no-local', `file://${bitmapped}`, join(dir, `c${n}`)], up),
    'clone (no bitmap)': (up, n) => progressOf(['clone', '--bare', '--no-local', `file://${plain}`, join(dir, `c${n}`)], up),
    'fetch (no bitmap)': fetch(plain),
    'fetch (bitmap)': fetch(bitmapped),
  };
}

function compare(names: string[]): void {
  const t = tmp();
  try {
    const cases = fixtures(t.dir);
    let n = 0;
    const oracle = ORACLE && existsSync(ORACLE);
    for (const name of names) {
      const go = cases[name]!;
      const ours = go(`${BIN} upload-pack`, ++n);
      const want = oracle ? go(`${ORACLE} upload-pack`, ++n) : RECORDED[name]!;
      if (process.env.GITWIRE_RECORD) process.stdout.write(`RECORD ${JSON.stringify(name)}: ${JSON.stringify(want)},\n`);
      assert.deepEqual(ours, want, `${name}: ours ${JSON.stringify(ours)}, git 2.55 ${JSON.stringify(want)}`);
    }
  } finally { t.cleanup(); }
}

test('progress lines of a clone (bitmap or not) and of a fetch without a bitmap: the ones git 2.55 shows, with its final counts', { timeout: 120_000 }, () => {
  compare(['clone (bitmap)', 'clone (no bitmap)', 'fetch (no bitmap)']);
});

// git 2.55's pack reuse (pack-bitmap.c's reuse_partial_packfile_from_bitmap()) takes what a bitmapped fetch
// needs of the bitmap's pack whole or as deltas whose base it takes too: "pack-reused", never counted or
// searched; what is left is counted, and reused one by one or searched
// a deepening fetch is walked (no bitmap for shallow requests); its thin pack's preferred bases come from
// several boundary trees, and git's Enumerating count is every object it met, the same one at two paths or
// in two trees counted again (nr_seen), where Counting has each once
test('progress lines of a fetch --deepen, as git 2.55 words them', { timeout: 120_000 }, () => {
  compare(['fetch --deepen (walk)']);
});

test('progress lines of a clone and a fetch from a multi-pack bitmap, pack reuse single and multi, as git 2.55 words them', { timeout: 120_000 }, () => {
  compare(['clone (midx)', 'fetch (midx)', 'clone (midx, multi)', 'fetch (midx, multi)']);
});

test('progress lines of a fetch from a bitmapped pack, as git 2.55 words them', { timeout: 120_000 }, () => {
  compare(['fetch (bitmap)', 'fetch (bitmap, layered pack)', 'clone (bitmap, layered pack, blob:none)', 'fetch (bitmap, partly reused)', 'fetch (bitmap, newest loose)']);
});
