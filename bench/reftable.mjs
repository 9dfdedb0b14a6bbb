/**
 * Reftable rows of `npm run bench` (called once from bench/run.mjs):
 *
 * - ls-remote (v0, v2) on refs-11k and refs-1m stored as reftable (`git
 *   refs migrate` of the fixtures: one table each; fixtures.mjs
 *   reftableTwin), CPU and peak RSS of gitwire upload-pack against git
 *   2.55's upload-pack;
 * - a push of 5,000 new refs into a reftable repository, gitwire
 *   receive-pack against git 2.55's receive-pack (one table written).
 *
 * git cannot serve reftable before 2.45, so both sides and the client are
 * the git that GITWIRE_GIT_2_55 names (an install prefix); without it the
 * rows are skipped with a message.
 */
import { spawnSync, execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export async function reftableCases({ measure, timeWrap, TMP, fx, BIN, refs1m, small, log }) {
  const prefix = process.env.GITWIRE_GIT_2_55;
  const OG = prefix ? join(prefix, 'bin', 'git') : '';
  if (!OG || !existsSync(OG)) {
    log('reftable rows skipped: they need git >= 2.45 (set GITWIRE_GIT_2_55 to the install prefix of a git 2.55)');
    return;
  }
  // the helpers both servers run (pack-objects, index-pack) must know reftable too
  const env = { ...fx.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH}` };
  const og = (args, opts = {}) => execFileSync(OG, args, { env, maxBuffer: 1 << 30, ...opts }).toString();
  const SERVERS = {
    git: { upload: `${OG} upload-pack`, receive: `${OG} receive-pack` },
    gitwire: { upload: `${BIN} upload-pack`, receive: `${BIN} receive-pack` },
  };
  let seq = 0;
  const served = (clientArgs, server, { cwd } = {}) => {
    const w = timeWrap(server);
    const t0 = process.hrtime.bigint();
    const r = spawnSync(OG, clientArgs(w.cmd), { cwd, env, stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status !== 0) throw new Error(`git ${clientArgs('<server>').join(' ')} failed: ${r.stderr}`);
    return { wallMs, ...w.read() };
  };

  // reftable twins of refs-11k and refs-1m (fixtures.mjs: refs migrated by this git, made once)
  const twins = [['refs-11k as reftable', fx.reftableTwin(await fx.refs11k(), OG)]];
  if (refs1m) twins.push(['refs-1m as reftable', fx.reftableTwin(refs1m, OG)]);
  for (const [fixture, dir] of twins) {
    for (const v of [0, 2]) {
      await measure(`ls-remote-v${v}-reftable`, fixture, (kind) => served((w) => ['-c', `protocol.version=${v}`, 'ls-remote', `--upload-pack=${w}`, dir], SERVERS[kind].upload), { strace: false });
    }
  }

  // push 5,000 new refs: a client with 5,000 branches on commits the server has
  const base = join(TMP, 'reftable-push-base.git');
  const client = join(TMP, 'reftable-push-client');
  if (!existsSync(base)) {
    og(['clone', '-q', '--bare', '--ref-format=reftable', small, base]);
    og(['clone', '-q', '--bare', small, client]);
    const head = og(['rev-parse', 'HEAD'], { cwd: client }).trim();
    const lines = [];
    for (let i = 0; i < 5000; i++) lines.push(`create refs/heads/new/b${String(i).padStart(4, '0')} ${head}`);
    og(['update-ref', '--stdin'], { cwd: client, input: `${lines.join('\n')}\n` });
  }
  await measure('push-5000-refs-reftable', 'small, 5,000 new refs into reftable', (kind) => {
    const dest = join(TMP, `reftable-push-${++seq}.git`);
    execFileSync('cp', ['-a', base, dest]);
    try { return served((w) => ['-C', client, 'push', '-q', `--receive-pack=${w}`, dest, 'refs/heads/new/*:refs/heads/new/*'], SERVERS[kind].receive); }
    finally { rmSync(dest, { recursive: true, force: true }); }
  }, { strace: false });
}
