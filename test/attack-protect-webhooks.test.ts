/**
 * The protected-ref check and the webhook queue attacked (shared/ATTACK.md,
 * issue #38): an AGit ref 30,000 components deep, and a push of refs with
 * 60 KiB names against a webhook. Each is answered (refused, or bounded)
 * without holding the event loop: a timer's worst lateness while it runs is
 * reported and loosely bounded.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt } from './helpers/pkt.js';
import { startServer } from '../src/transport/server.js';
import { Webhooks } from '../src/admin/webhooks.js';

const ZERO = '0'.repeat(40);
const t = tmp('gitwire-attack-protect-');
after(() => t.cleanup());

/** the worst lateness of a 10 ms timer while `f` runs */
async function lateness<T>(f: () => Promise<T>): Promise<{ value: T; worstMs: number }> {
  let worst = 0;
  let last = performance.now();
  const iv = setInterval(() => { const now = performance.now(); worst = Math.max(worst, now - last - 10); last = now; }, 10);
  try { return { value: await f(), worstMs: worst }; } finally { clearInterval(iv); }
}

function rawPush(port: number, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/r.git/git-receive-pack', headers: { 'Content-Type': 'application/x-git-receive-pack-request' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('an AGit ref 30,000 components deep is refused as protected, at once, without holding the event loop', { timeout: 60_000 }, async () => {
  const root = join(t.dir, 'agit');
  mkdirSync(root);
  const w = join(t.dir, 'agit-work');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { 'a.txt': 'a\n' });
  const dir = join(root, 'r.git');
  git(['clone', '-q', '--bare', w, dir]);
  git(['config', 'receive.procReceiveRefs', 'refs/for'], { cwd: dir });
  const main = git(['rev-parse', 'main'], { cwd: dir }).trim();
  const s = await startServer({ root, http: 0, receivePack: true, spawnHelper: false, protectedRefs: () => (ref) => ref === 'refs/heads/main' });
  try {
    const deep = `refs/for/${'a/'.repeat(30_000)}t`;
    const { value, worstMs } = await lateness(() => rawPush(s.httpPort!, pkt([`${ZERO} ${ZERO} ${deep}\0report-status`, '0000'])));
    assert.match(value, /ng refs\/for\/a\/a\/[a/]*t protected ref/);
    console.log(`deep AGit ref: worst timer lateness ${worstMs.toFixed(1)} ms`);
    assert.ok(worstMs < 1000, `the event loop was held ${worstMs} ms`);
    assert.equal(git(['rev-parse', 'main'], { cwd: dir }).trim(), main);
    // an old id the server has no object for is not a fast-forward (as receive.denyNonFastForwards has it)
    const head = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1');
    const empty = Buffer.concat([head, createHash('sha1').update(head).digest()]);
    const missing = await rawPush(s.httpPort!, Buffer.concat([pkt([`${'de'.repeat(20)} ${main} refs/heads/main\0report-status side-band-64k`, '0000']), empty]));
    assert.match(missing, /ng refs\/heads\/main protected ref/);
    assert.match(missing, /error: denying non-fast-forward refs\/heads\/main \(protected ref\)/);
  } finally { await s.shutdown(0); }
});

test('a push of 1,000 refs with 60 KiB names: the webhook body stays bounded (256 KiB of refs), built without holding the event loop', { timeout: 60_000 }, async () => {
  const bodies: Buffer[] = [];
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => { bodies.push(Buffer.concat(chunks)); res.writeHead(204); res.end(); });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const w = new Webhooks({ targets: [{ url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/` }, { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/2` }], secret: 'k' });
  try {
    const refs = Array.from({ length: 1000 }, (_, i) => ({ ref: `refs/heads/${String(i).padStart(4, '0')}${'x'.repeat(60 << 10)}`, old: ZERO, new: 'a'.repeat(40) }));
    // push() is synchronous: its whole run is what it holds the loop for
    const t0 = performance.now();
    w.push({ repository: 'r', transport: 'http', refs });
    const heldMs = performance.now() - t0;
    console.log(`1,000 refs of 60 KiB: push() held the loop ${heldMs.toFixed(1)} ms`);
    assert.ok(heldMs < 500, `push() took ${heldMs} ms`);
    for (let i = 0; i < 100 && bodies.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(bodies.length, 2);
    for (const b of bodies) {
      assert.ok(b.length < 300 << 10, `body of ${b.length} bytes`);
      const ev = JSON.parse(b.toString()) as { refs: unknown[]; refsNotListed: number };
      assert.equal(ev.refs.length + ev.refsNotListed, 1000);
      assert.ok(ev.refs.length >= 1);
    }
  } finally { await w.close(); srv.close(); }
});
