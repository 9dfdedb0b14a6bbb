/**
 * One end-to-end suite, run with the installed git client over every
 * transport and protocol version. The reference for each result is the
 * same operation served by `git upload-pack` itself (file://).
 */
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { git, gitEnv, run, tmp } from './git.js';
import { finished } from './child-wait.js';
import { commit, makeRichRepo, makeNamespaceRepo } from './fixtures.js';

export interface TransportHandle {
  /** URL of a repository path relative to the served root */
  url(rel: string): string;
  /** extra `git clone`/`ls-remote` arguments (e.g. --upload-pack) */
  cloneArgs: string[];
  /** environment for the client (e.g. GIT_NAMESPACE for stdio) */
  env?: NodeJS.ProcessEnv;
  close(): Promise<void> | void;
}

export interface StartOptions {
  /** serve under this GIT_NAMESPACE */
  namespace?: string;
  /** concurrent pack-objects allowed (`--max-packs`), where the transport has a server */
  maxPacks?: number;
  /** extra environment for the server */
  env?: NodeJS.ProcessEnv;
}

export interface Transport {
  name: string;
  /** start serving `root` */
  start(root: string, opts?: StartOptions): Promise<TransportHandle>;
  /** isomorphic-git can clone over this transport (its Node client speaks smart HTTP) */
  isomorphicGit?: boolean;
  /** reasons for skipped cases, by case name */
  skip?: Record<string, string>;
}

function refs(dir: string): string {
  return git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: dir });
}
function shallowFile(dir: string): string {
  const gd = git(['rev-parse', '--git-dir'], { cwd: dir }).trim();
  const p = join(dir, gd, 'shallow');
  const p2 = gd.startsWith('/') ? join(gd, 'shallow') : p;
  return existsSync(p2) ? readFileSync(p2, 'utf8').split('\n').sort().join('\n') : '';
}
function objects(dir: string): string {
  return git(['rev-list', '--objects', '--all', '--missing=print'], { cwd: dir }).split('\n').sort().join('\n');
}

/**
 * Rewrite packed-refs as older git and other tools leave it: no
 * `# pack-refs with:` header, records (each with its `^` line) out of order.
 */
export function writeHeaderlessPackedRefs(dir: string): void {
  const p = join(dir, 'packed-refs');
  const lines = readFileSync(p, 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  const groups: string[][] = [];
  for (const l of lines) { if (l.startsWith('^')) groups[groups.length - 1]!.push(l); else groups.push([l]); }
  // reversed, then the first half moved to the end: neither order is sorted
  groups.reverse();
  const half = groups.splice(0, groups.length >> 1);
  writeFileSync(p, `${[...groups, ...half].flat().join('\n')}\n`);
}

/**
 * git t5500's 'deepen beyond merged branch' history: one → two → three
 * on main, four → five on a branch from three, then a --no-ff merge.
 * Returns the bare repository `<dir>/<name>/repo.git`.
 */
export function makeDeepenMergeRepo(dir: string, name: string): string {
  const w = join(dir, name, 'work');
  git(['init', '-q', '-b', 'main', w]);
  for (const m of ['one', 'two', 'three']) commit(w, m, {});
  git(['switch', '-q', '-c', 'branch'], { cwd: w });
  for (const m of ['four', 'five']) commit(w, m, {});
  git(['switch', '-q', 'main'], { cwd: w });
  git(['merge', '-q', '--no-ff', '-m', 'merge', 'branch'], { cwd: w });
  const bare = join(dir, name, 'repo.git');
  git(['clone', '-q', '--bare', '--no-local', w, bare]);
  return bare;
}

export function transportSuite(t: Transport, versions: Array<0 | 1 | 2>): void {
  for (const v of versions) {
    describe(`${t.name} protocol v${v}`, () => {
      let root: ReturnType<typeof tmp>;
      let h: TransportHandle;
      let src: string;
      const pv = ['-c', `protocol.version=${v}`];
      const work = () => join(root.dir, 'work');
      const ours = (args: string[], cwd?: string, env?: NodeJS.ProcessEnv) =>
        git([...pv, ...args], { cwd, env: { ...h.env, ...env } });
      const ref = (args: string[], cwd?: string) => git([...pv, ...args], { cwd });
      const skip = (name: string) => t.skip?.[name] ? { skip: t.skip[name] } : {};

      before(async () => {
        root = tmp(`gitwire-e2e-${t.name}-v${v}-`);
        mkdirSync(join(root.dir, 'srv'));
        mkdirSync(join(root.dir, 'work'));
        const built = makeRichRepo(join(root.dir, 'srv'));
        src = join(root.dir, 'srv', 'repo.git');
        git(['clone', '-q', '--bare', '--no-local', built, src]);
        git(['--git-dir', src, 'update-ref', 'refs/merge-requests/1/head', 'main~2']);
        git(['--git-dir', src, 'config', 'uploadpack.allowFilter', 'true']);
        h = await t.start(join(root.dir, 'srv'));
      });
      after(async () => { await h.close(); root.cleanup(); });

      test('ls-remote, with and without patterns', skip('ls-remote'), () => {
        const mine = ours(['ls-remote', ...h.cloneArgs, h.url('repo.git')]);
        const theirs = ref(['ls-remote', src]);
        assert.equal(mine, theirs);
        const pat = ours(['ls-remote', ...h.cloneArgs, h.url('repo.git'), 'refs/heads/feat*', 'v1*']);
        assert.equal(pat, ref(['ls-remote', src, 'refs/heads/feat*', 'v1*']));
        assert.match(pat, /refs\/heads\/feature\/x/);
      });

      test('clone (non-bare and bare) matches a clone served by git', skip('clone'), () => {
        const a = join(work(), 'clone-a');
        ours(['clone', '-q', ...h.cloneArgs, h.url('repo.git'), a]);
        const b = join(work(), 'clone-b');
        ref(['clone', '-q', '--no-local', src, b]);
        git(['fsck', '--strict'], { cwd: a });
        assert.equal(refs(a), refs(b));
        assert.equal(git(['rev-parse', 'HEAD'], { cwd: a }), git(['rev-parse', 'HEAD'], { cwd: b }));
        const c = join(work(), 'clone-bare.git');
        ours(['clone', '-q', '--bare', ...h.cloneArgs, h.url('repo.git'), c]);
        git(['fsck', '--strict'], { cwd: c });
        const d = join(work(), 'clone-bare-ref.git');
        ref(['clone', '-q', '--bare', '--no-local', src, d]);
        assert.equal(refs(c), refs(d), 'bare clone refs match a bare clone served by git');
        assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: c }), git(['symbolic-ref', 'HEAD'], { cwd: d }));
        assert.equal(objects(c), objects(src));
      });

      test('incremental fetch over many rounds after new commits on several branches', skip('fetch'), () => {
        const a = join(work(), 'inc');
        ours(['clone', '-q', ...h.cloneArgs, h.url('repo.git'), a]);
        // a long local history the server lacks forces several negotiation rounds
        for (let i = 0; i < 40; i++) commit(a, `local ${i}`, { [`l${i}`]: `${i}\n` });
        const w = join(work(), 'pusher');
        git(['clone', '-q', src, w]);
        commit(w, 'server main', { 's1': 'x\n' });
        git(['push', '-q', 'origin', 'HEAD:main'], { cwd: w });
        git(['checkout', '-q', '-b', 'b2', 'origin/feature/x'], { cwd: w });
        commit(w, 'server feature', { 's2': 'y\n' });
        git(['push', '-q', 'origin', 'HEAD:feature/x', 'HEAD:refs/heads/new-branch'], { cwd: w });
        git(['tag', '-a', '-m', 'new tag', 'v3.0', 'origin/main'], { cwd: w });
        git(['push', '-q', 'origin', 'v3.0'], { cwd: w });
        ours(['fetch', '-q', 'origin'], a);
        git(['fsck'], { cwd: a });
        const remoteRefs = refs(a).split('\n').filter((l) => l.includes('refs/remotes/') || l.includes('refs/tags/')).join('\n');
        const srcRefs = refs(src).split('\n').filter((l) => l.includes('refs/heads/') || l.includes('refs/tags/')).map((l) => l.replace('refs/heads/', 'refs/remotes/origin/')).sort();
        for (const l of srcRefs) assert.ok(remoteRefs.includes(l), `missing ${l}`);
        assert.ok(remoteRefs.includes('refs/tags/v3.0'), 'tag followed');
      });

      test('shallow: --depth, --deepen, --shallow-since, --shallow-exclude, --unshallow', skip('shallow'), () => {
        const cases: Array<[string, string[], string[]?]> = [
          ['depth', ['--depth', '2']],
          ['since', ['--shallow-since', '1700000900']],
          ['exclude', ['--shallow-exclude', 'v1.0']],
        ];
        for (const [name, args] of cases) {
          const a = join(work(), `sh-${name}`);
          const b = join(work(), `sh-${name}-ref`);
          ours(['clone', '-q', ...args, ...h.cloneArgs, h.url('repo.git'), a]);
          ref(['clone', '-q', ...args, `file://${src}`, b]);
          assert.equal(shallowFile(a), shallowFile(b), `${name} shallow boundary`);
          assert.equal(objects(a), objects(b), `${name} objects`);
          git(['fsck'], { cwd: a });
        }
        const a = join(work(), 'sh-depth');
        const b = join(work(), 'sh-depth-ref');
        ours(['fetch', '-q', '--deepen=3'], a);
        ref(['fetch', '-q', '--deepen=3'], b);
        assert.equal(shallowFile(a), shallowFile(b), 'deepen');
        ours(['fetch', '-q', '--unshallow'], a);
        assert.equal(shallowFile(a), '');
        assert.equal(git(['rev-parse', '--is-shallow-repository'], { cwd: a }).trim(), 'false');
        git(['fsck'], { cwd: a });
      });

      test('partial clone with blob:none, then a lazy fetch of a missing blob', skip('partial'), () => {
        const a = join(work(), 'partial');
        // v0/v1 clients only ask for unadvertised objects when the server says it allows them
        if (v < 2) git(['--git-dir', src, 'config', 'uploadpack.allowAnySHA1InWant', 'true']);
        try {
          ours(['clone', '-q', '--no-checkout', '--filter=blob:none', ...h.cloneArgs, h.url('repo.git'), a]);
          const missing = git(['rev-list', '--objects', '--all', '--missing=print'], { cwd: a }).split('\n').filter((l) => l.startsWith('?'));
          assert.ok(missing.length > 5, 'blobs are missing');
          ours(['checkout', '-q', 'main'], a);
          assert.ok(existsSync(join(a, 'a.txt')));
          const still = git(['rev-list', '--objects', 'HEAD^{tree}', '--missing=print'], { cwd: a }).split('\n').filter((l) => l.startsWith('?'));
          assert.deepEqual(still, []);
        } finally {
          if (v < 2) git(['--git-dir', src, 'config', '--unset', 'uploadpack.allowAnySHA1InWant']);
        }
      });

      test('fetch by object id under each allow setting', skip('by-id'), () => {
        const tip = git(['--git-dir', src, 'rev-parse', 'main']).trim();
        const tips = new Set(git(['--git-dir', src, 'show-ref', '-d']).split('\n').map((l) => l.split(' ')[0]));
        const inner = git(['--git-dir', src, 'rev-list', 'main']).split('\n').filter((c) => c && !tips.has(c))[2]!;
        // a commit reachable only from a hidden ref
        const secret = git(['--git-dir', src, 'commit-tree', '-m', 'secret', 'main^{tree}']).trim();
        git(['--git-dir', src, 'update-ref', 'refs/hidden/secret', secret]);
        const url = h.url('repo.git');
        let n = 0;
        const fetch = (oid: string) => {
          const a = join(work(), `byid-${n++}`);
          git(['init', '-q', a]);
          return run('git', [...pv, 'fetch', '-q', ...h.cloneArgs, url, oid], { cwd: a, env: h.env });
        };
        const touched = new Set<string>();
        const set = (k: string, val: string | undefined) => {
          touched.add(k);
          return val === undefined ? git(['--git-dir', src, 'config', '--unset-all', k]) : git(['--git-dir', src, 'config', k, val]);
        };
        set('uploadpack.hideRefs', 'refs/hidden');
        try {
          assert.equal(fetch(tip).status, 0, 'tips are always fetchable by id');
          let r = fetch(inner);
          if (v < 2) {
            assert.notEqual(r.status, 0, 'a non-tip is refused by default');
            assert.match(r.stderr.toString(), /not our ref|Server does not allow request for unadvertised object/);
          } else {
            assert.equal(r.status, 0, 'v2 serves reachable objects by id, as git does');
          }
          r = fetch(secret);
          assert.notEqual(r.status, 0, 'a commit reachable only from a hidden ref is refused');
          set('uploadpack.allowTipSHA1InWant', 'true');
          assert.equal(fetch(secret).status, 0, 'hidden tip with allowTipSHA1InWant');
          set('uploadpack.allowTipSHA1InWant', undefined);
          set('uploadpack.allowReachableSHA1InWant', 'true');
          assert.equal(fetch(inner).status, 0, 'reachable with allowReachableSHA1InWant');
          set('uploadpack.allowReachableSHA1InWant', undefined);
          set('uploadpack.allowAnySHA1InWant', 'true');
          assert.equal(fetch(secret).status, 0, 'anything with allowAnySHA1InWant');
          set('uploadpack.allowAnySHA1InWant', undefined);
        } finally {
          // whatever failed, every setting this test made is undone
          for (const k of touched) run('git', ['--git-dir', src, 'config', '--unset-all', k]);
          git(['--git-dir', src, 'update-ref', '-d', 'refs/hidden/secret']);
        }
      });

      test('hidden refs are not advertised', skip('hidden'), () => {
        git(['--git-dir', src, 'config', 'uploadpack.hideRefs', 'refs/merge-requests']);
        try {
          const mine = ours(['ls-remote', ...h.cloneArgs, h.url('repo.git')]);
          assert.doesNotMatch(mine, /merge-requests/);
          assert.equal(mine, ref(['ls-remote', src]));
        } finally {
          git(['--git-dir', src, 'config', '--unset-all', 'uploadpack.hideRefs']);
        }
      });

      test('empty repository clone', skip('empty'), () => {
        const e = join(root.dir, 'srv', 'empty.git');
        git(['init', '-q', '--bare', '-b', 'trunk', e]);
        const a = join(work(), 'empty-clone');
        const r = run('git', [...pv, 'clone', ...h.cloneArgs, h.url('empty.git'), a], { env: h.env });
        assert.equal(r.status, 0, r.stderr.toString());
        assert.match(r.stderr.toString(), /cloned an empty repository/);
        if (v === 2) assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: a }).trim(), 'refs/heads/trunk', 'unborn HEAD via ls-refs unborn');
      });

      test('SHA-256 repository clone and fetch', skip('sha256'), () => {
        const d = join(root.dir, 'srv', 's256');
        mkdirSync(d, { recursive: true });
        const built = makeRichRepo(d, { objectFormat: 'sha256' });
        git(['clone', '-q', '--bare', '--no-local', built, join(root.dir, 'srv', 's256.git')]);
        const a = join(work(), 's256-clone');
        ours(['clone', '-q', ...h.cloneArgs, h.url('s256.git'), a]);
        assert.equal(git(['rev-parse', '--show-object-format'], { cwd: a }).trim(), 'sha256');
        git(['fsck'], { cwd: a });
        assert.equal(objects(a), objects(join(root.dir, 'srv', 's256.git')));
      });

      test('v2 extras: --server-option is accepted, want-ref with uploadpack.allowRefInWant', v !== 2 ? { skip: 'server options and want-ref are protocol v2 features' } : skip('v2-extras'), () => {
        const out = ours(['ls-remote', '-o', 'key=value', '--server-option=another', ...h.cloneArgs, h.url('repo.git'), 'refs/heads/main']);
        assert.match(out, /refs\/heads\/main/);
        git(['--git-dir', src, 'config', 'uploadpack.allowRefInWant', 'true']);
        try {
          const a = join(work(), 'want-ref');
          ours(['clone', '-q', '--bare', ...h.cloneArgs, h.url('repo.git'), a]);
          const w = join(work(), 'want-ref-pusher');
          git(['clone', '-q', src, w]);
          commit(w, 'for want-ref', { 'wr': 'x\n' });
          git(['push', '-q', 'origin', 'HEAD:refs/heads/wr-branch'], { cwd: w });
          const r = run('git', [...pv, '-c', 'fetch.negotiationAlgorithm=noop', 'fetch', '-o', 'x=y', h.url('repo.git'), 'refs/heads/wr-branch'], { cwd: a, env: { ...h.env, GIT_TRACE_PACKET: join(work(), 'want-ref.trace') } });
          assert.equal(r.status, 0, r.stderr.toString());
          assert.equal(git(['rev-parse', 'FETCH_HEAD'], { cwd: a }).trim(), git(['--git-dir', src, 'rev-parse', 'refs/heads/wr-branch']).trim());
          assert.match(readFileSync(join(work(), 'want-ref.trace'), 'utf8'), /want-ref refs\/heads\/wr-branch/, 'the client used want-ref');
        } finally {
          git(['--git-dir', src, 'config', '--unset', 'uploadpack.allowRefInWant']);
        }
      });

      test('clone when packed-refs has no header (unsorted) and a loose ref shadows a packed one', skip('headerless-packed-refs'), () => {
        const d = join(root.dir, 'srv', 'headerless.git');
        git(['clone', '-q', '--bare', '--no-local', src, d]);
        git(['pack-refs', '--all'], { cwd: d });
        writeHeaderlessPackedRefs(d);
        // a loose ref with another value than its packed entry: git advertises only the loose one
        const other = git(['--git-dir', d, 'rev-parse', 'main~1']).trim();
        mkdirSync(join(d, 'refs', 'heads', 'feature'), { recursive: true });
        writeFileSync(join(d, 'refs', 'heads', 'feature', 'x'), `${other}\n`);
        const a = join(work(), 'headerless');
        const r = run('git', [...pv, 'clone', '-q', '--bare', ...h.cloneArgs, h.url('headerless.git'), a], { env: h.env });
        assert.equal(r.status, 0, r.stderr.toString());
        const b = join(work(), 'headerless-ref');
        ref(['clone', '-q', '--bare', '--no-local', d, b]);
        assert.equal(refs(a), refs(b));
        assert.match(refs(a), new RegExp(`${other} refs/heads/feature/x`));
        assert.equal(ours(['ls-remote', ...h.cloneArgs, h.url('headerless.git')]), ref(['ls-remote', d]));
      });

      test('fetch --deepen=1 beyond a merged branch sends every commit the shallow list names', skip('deepen-merge'), () => {
        const d = makeDeepenMergeRepo(join(root.dir, 'srv'), `deepen-merge-v${v}`);
        const name = (c: string) => git(['--git-dir', d, 'log', '-1', '--format=%s', c]).trim();
        const a = join(work(), 'deepen-merge.git');
        ours(['clone', '-q', '--bare', '--depth', '3', ...h.cloneArgs, h.url(`deepen-merge-v${v}/repo.git`), a]);
        assert.deepEqual(shallowFile(a).split('\n').filter(Boolean).map(name).sort(), ['four', 'two']);
        ours(['fetch', '-q', ...h.cloneArgs, 'origin', '--deepen=1'], a);
        // git t5500 'fetching deepen beyond merged branch': every shallow commit is present
        const have = new Set(git(['rev-list', '--all'], { cwd: a }).split('\n').filter(Boolean));
        const shallow = shallowFile(a).split('\n').filter(Boolean);
        for (const c of shallow) assert.ok(have.has(c), `shallow ${name(c)} is in the repository`);
        // git 2.54+ (recorded with 2.55): the only boundary is 'one', and all six commits arrive
        assert.deepEqual(shallow.map(name), ['one']);
        assert.equal(have.size, 6);
        git(['fsck'], { cwd: a });
      });

      const isoSkip = !t.isomorphicGit ? { skip: `isomorphic-git has no ${t.name} transport` }
        : v !== 0 ? { skip: 'isomorphic-git speaks protocol v1 only: run once, under v0' } : skip('isomorphic-git');
      test('isomorphic-git clones through --max-packs 1 while another clone holds the slot', { ...isoSkip, timeout: 120_000 }, async () => {
        const { default: igit } = await import('isomorphic-git');
        const { default: ihttp } = await import('isomorphic-git/http/node');
        const fs = await import('node:fs');
        // the first pack-objects holds the only slot for 7 s; isomorphic-git gives up on a
        // request that is silent for about 5 s, so it lives through the queue only by its keepalives
        const marker = join(work(), 'iso-holder-started');
        const hook = join(work(), 'iso-hold-first.sh');
        writeFileSync(hook, `#!/bin/sh\nif mkdir '${marker}' 2>/dev/null; then sleep 7; fi\nexec "$@"\n`);
        chmodSync(hook, 0o755);
        const hh = await t.start(join(root.dir, 'srv'), { maxPacks: 1, env: { GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}'` } });
        try {
          const holderDir = join(work(), 'iso-holder');
          const holder = spawn('git', [...pv, 'clone', '-q', ...hh.cloneArgs, hh.url('repo.git'), holderDir], { env: { ...gitEnv, ...hh.env }, stdio: 'ignore', detached: true });
          // killed if it has not finished in a minute (also when the test fails before waiting for it)
          const holderExit = finished(holder, 'the holder clone', { timeoutMs: 60_000, group: true }).then((f) => f.code);
          for (let i = 0; i < 500 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 20));
          assert.ok(existsSync(marker), 'the holder took the slot');
          const dir = join(work(), 'iso-clone');
          const messages: string[] = [];
          await igit.clone({ fs, http: ihttp, dir, url: hh.url('repo.git'), singleBranch: false, onMessage: (m: string) => { messages.push(m); } });
          assert.match(messages.join(''), /waiting for a pack-objects slot/, 'it was queued');
          assert.equal(await holderExit, 0, 'the holder finished');
          assert.equal(git(['rev-parse', 'HEAD'], { cwd: dir }).trim(), git(['--git-dir', src, 'rev-parse', 'main']).trim());
          git(['fsck'], { cwd: dir });
          assert.equal(git(['rev-list', '--all'], { cwd: dir }).split('\n').length, git(['--git-dir', src, 'rev-list', '--branches', '--tags']).split('\n').length);
        } finally {
          await hh.close();
        }
      });

      test('namespaces', skip('namespace'), async () => {
        const nsRepo = makeNamespaceRepo(join(root.dir, 'srv'));
        const nsBare = join(root.dir, 'srv', 'ns.git');
        git(['clone', '-q', '--mirror', nsRepo, nsBare]);
        const nh = await t.start(join(root.dir, 'srv'), { namespace: 'foo' });
        try {
          const out = git([...pv, 'ls-remote', ...nh.cloneArgs, nh.url('ns.git')], { env: nh.env });
          const expected = git([...pv, 'ls-remote', nsBare], { env: { GIT_NAMESPACE: 'foo' } });
          assert.equal(out, expected);
          assert.match(out, /refs\/heads\/secret/);
          assert.doesNotMatch(out, /refs\/heads\/visible/);
        } finally {
          await nh.close();
        }
      });
    });
  }
}
