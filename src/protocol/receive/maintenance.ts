/**
 * receive.autogc: after a push, `git maintenance run --auto --quiet
 * --[no-]detach`, as git 2.55's receive-pack runs it (prepare_auto_maintenance):
 * off when maintenance.auto is false (or, unset, when gc.auto <= 0);
 * detached unless maintenance.autoDetach (else gc.autoDetach, else
 * GIT_TEST_MAINT_AUTO_DETACH) says no. Its output goes to the pusher
 * (band 2 with sideband). The wait is asynchronous (the event loop serves
 * others), it takes no pack-objects slot, and while one runs for a
 * repository a second push to it does not start another.
 */
import { realpathSync } from 'node:fs';
import { spawnChild } from '../../util/spawn.js';
import { installedGitAtLeast } from '../../util/git-version.js';
import { parseBool, parseInt_ } from '../../repo/config.js';
import type { Repository } from '../../repo/repository.js';

/** repositories (real common directory) with a maintenance run in progress from this process */
const running = new Set<string>();

/** prepare_auto_maintenance(): the arguments, or undefined when auto-maintenance is off */
export async function autoMaintenanceArgs(repo: Repository, env: NodeJS.ProcessEnv): Promise<string[] | undefined> {
  const c = repo.config;
  let enabled = true;
  const auto = c.get('maintenance.auto');
  if (auto !== undefined) enabled = parseBool(auto, 'maintenance.auto');
  else {
    const gc = c.get('gc.auto');
    if (gc !== undefined && gc !== null) enabled = parseInt_(gc, 'gc.auto') > 0;
  }
  if (!enabled) return undefined;
  // `maintenance run --detach` (and receive-pack running maintenance) is git >= 2.47:
  // with an older installed git, what its own receive-pack runs
  if (!(await installedGitAtLeast(env, 2, 47))) return ['gc', '--auto', '--quiet'];
  let detach: boolean;
  const md = c.get('maintenance.autodetach'), gd = c.get('gc.autodetach');
  if (md !== undefined) detach = parseBool(md, 'maintenance.autodetach');
  else if (gd !== undefined) detach = parseBool(gd, 'gc.autodetach');
  else detach = env.GIT_TEST_MAINT_AUTO_DETACH === undefined ? true : parseBool(env.GIT_TEST_MAINT_AUTO_DETACH, 'GIT_TEST_MAINT_AUTO_DETACH');
  return ['maintenance', 'run', '--auto', '--quiet', detach ? '--detach' : '--no-detach'];
}

export interface MaintenanceOptions {
  repo: Repository;
  env: NodeJS.ProcessEnv;
  onOutput: (b: Buffer) => void;
  backedUp?: () => Promise<void> | undefined;
}

/** Run auto-maintenance once the push is done; resolves when it finished (or was not started). */
export async function runAutoMaintenance(o: MaintenanceOptions): Promise<void> {
  const args = await autoMaintenanceArgs(o.repo, o.env);
  if (!args) return Promise.resolve();
  let key: string;
  try { key = realpathSync(o.repo.commonDir); } catch { key = o.repo.commonDir; }
  if (running.has(key)) return Promise.resolve();
  running.add(key);
  return new Promise<void>((done) => {
    const finish = () => { running.delete(key); done(); };
    let child;
    try {
      child = spawnChild('git', args, { cwd: o.repo.gitDir, env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch { finish(); return; }
    // stdout_to_stderr: both reach the pusher
    for (const s of [child.stdout!, child.stderr!]) {
      s.on('data', (b: Buffer) => {
        o.onOutput(b);
        const wait = o.backedUp?.();
        if (wait) { s.pause(); void wait.then(() => s.resume(), () => s.resume()); }
      });
    }
    child.on('error', finish);
    child.on('close', finish);
  });
}
