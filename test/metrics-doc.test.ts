/**
 * docs/metrics.md lists every metric with its type and labels (issue #27):
 * the table is compared with what a running server exposes after clones
 * (pack cache on, a pack-objects slot limit) and pushes, one rejected. Also:
 * the pack-objects slot wait is observed, cache lookups count by result.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import bcrypt from 'bcryptjs';
import { ROOT, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe } from './helpers/server-process.js';

interface Doc { type: string; labels: string[] }

function documented(): Map<string, Doc> {
  const md = readFileSync(join(ROOT, 'docs', 'metrics.md'), 'utf8');
  const out = new Map<string, Doc>();
  for (const m of md.matchAll(/^\| `(gitwire_[a-z_]+)` \| (counter|gauge|histogram) \| ?([^|]*?) ?\|/gm)) {
    out.set(m[1]!, { type: m[2]!, labels: [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((x) => x[1]!) });
  }
  return out;
}

function exposed(text: string): { types: Map<string, string>; labels: Map<string, string[]> } {
  const types = new Map<string, string>();
  const labels = new Map<string, string[]>();
  for (const m of text.matchAll(/^# TYPE (gitwire_\S+) (\S+)$/gm)) types.set(m[1]!, m[2]!);
  for (const m of text.matchAll(/^(gitwire_[a-z_]+?)(?:_bucket|_sum|_count)?\{([^}]*)\} /gm)) {
    const name = types.has(m[1]!) ? m[1]! : m[0].slice(0, m[0].indexOf('{'));
    const ls = [...m[2]!.matchAll(/([a-z_]+)="/g)].map((x) => x[1]!).filter((l) => l !== 'le');
    if (ls.length) labels.set(name, ls);
  }
  return { types, labels };
}

test('docs/metrics.md names every exposed metric, with its type and labels', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-metrics-doc-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'base', { 'a.txt': 'a\n' });
  const root = join(t.dir, 'root');
  mkdirSync(root);
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  const htpasswd = join(t.dir, 'htpasswd');
  writeFileSync(htpasswd, `alice:${bcrypt.hashSync('pw', 4)}\n`);
  const s = await startServe(root, ['--http', '0', '--metrics', '0', '--quiet', '--pack-cache', join(t.dir, 'cache'), '--max-packs', '1', '--htpasswd', htpasswd,
    // per-client limits generous enough to refuse nothing: their metrics are exposed too
    '--anonymous-rate', '1000', '--saturation-delay', '10000',
    // a webhook (to a port nobody answers on): its metrics are exposed too
    '--webhook', 'http://127.0.0.1:9/hook',
    // bundles offered: their metrics are exposed too
    '--bundles', 'serve']);
  try {
    const url = `http://127.0.0.1:${s.httpPort}/repo.git`;
    for (let i = 0; i < 3; i++) git(['clone', '-q', url, join(t.dir, `c${i}`)]);
    commit(w, 'next', { 'b.txt': 'b\n' });
    git(['push', '-q', `http://alice:pw@127.0.0.1:${s.httpPort}/repo.git`, 'main'], { cwd: w });
    git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: w });
    commit(w, 'diverged', { 'c.txt': 'c\n' });
    // the client does not send a non-fast-forward it knows of: --force, and the repository refuses it
    git(['config', 'receive.denyNonFastForwards', 'true'], { cwd: join(root, 'repo.git') });
    const rejected = spawnSync('git', ['push', '-q', '--force', `http://alice:pw@127.0.0.1:${s.httpPort}/repo.git`, 'main'], { cwd: w, env: gitEnv, encoding: 'utf8' });
    assert.notEqual(rejected.status, 0);
    assert.match(rejected.stderr, /non-fast-forward/);

    const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
    const { types, labels } = exposed(text);
    const doc = documented();
    assert.deepEqual([...types.keys()].sort(), [...doc.keys()].sort(), 'the same metrics');
    for (const [name, d] of doc) {
      assert.equal(types.get(name), d.type, `${name}: type`);
      const seen = labels.get(name);
      if (seen || d.labels.length) assert.deepEqual(seen, d.labels, `${name}: labels`);
    }
    assert.match(text, /gitwire_pack_objects_queue_wait_seconds_count [1-9]/, 'every pack-objects slot is observed');
    // a first sighting is a miss not stored, the second a miss stored, the third a hit
    assert.match(text, /gitwire_pack_cache_lookups_total\{result="miss"\} 2\n/);
    assert.match(text, /gitwire_pack_cache_lookups_total\{result="hit"\} 1\n/);
    assert.match(text, /gitwire_pack_cache_hits_total 1\n/);
    assert.match(text, /gitwire_pack_cache_entries 1\n/);
    assert.match(text, /gitwire_push_rejections_total\{reason="non-fast-forward"\} 1\n/);
    assert.match(text, /gitwire_requests_total\{service="receive-pack",transport="http",protocol="0",command="receive-pack",outcome="ok"\} 1\n/);
  } finally { await s.stop(); t.cleanup(); }
});
