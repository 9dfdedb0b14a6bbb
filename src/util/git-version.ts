/**
 * The installed git's version, for the few places where gitwire runs a git
 * helper whose arguments changed between versions (rev-list's
 * --exclude-hidden is 2.40, maintenance's --detach 2.47). Asked once per
 * process through the spawn path (`git version`), never with spawnSync:
 * serve's event loop is not held while git starts.
 */
import { spawnChild } from './spawn.js';

let asked: Promise<[number, number] | undefined> | undefined;

function installedGitVersion(env: NodeJS.ProcessEnv): Promise<[number, number] | undefined> {
  asked ??= new Promise((done) => {
    let out = '';
    let child;
    try { child = spawnChild('git', ['version'], { env, stdio: ['ignore', 'pipe', 'ignore'] }); } catch { done(undefined); return; }
    child.stdout!.on('data', (b: Buffer) => { out += b.toString('latin1'); });
    child.on('error', () => done(undefined));
    child.on('close', () => {
      const m = /git version (\d+)\.(\d+)/.exec(out);
      done(m ? [Number(m[1]), Number(m[2])] : undefined);
    });
  });
  return asked;
}

/** true when the installed git is at least `major.minor` (false when it cannot be told) */
export async function installedGitAtLeast(env: NodeJS.ProcessEnv, major: number, minor: number): Promise<boolean> {
  const v = await installedGitVersion(env);
  return !!v && (v[0] > major || (v[0] === major && v[1] >= minor));
}
