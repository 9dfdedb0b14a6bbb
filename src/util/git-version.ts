/**
 * The installed git's version, for the few places where gitwire runs a git
 * helper whose arguments changed between versions (rev-list's
 * --exclude-hidden is 2.40, maintenance's --detach 2.47, reftable 2.45). Asked once per
 * process through the spawn path (`git version`), never with spawnSync:
 * serve's event loop is not held while git starts.
 */
import { spawnChild } from './spawn.js';

interface GitVersion { major: number; minor: number; text: string }

let asked: Promise<GitVersion | undefined> | undefined;

function installedGitVersion(env: NodeJS.ProcessEnv): Promise<GitVersion | undefined> {
  asked ??= new Promise((done) => {
    let out = '';
    let child;
    try { child = spawnChild('git', ['version'], { env, stdio: ['ignore', 'pipe', 'ignore'] }); } catch { done(undefined); return; }
    child.stdout!.on('data', (b: Buffer) => { out += b.toString('latin1'); });
    child.on('error', () => done(undefined));
    child.on('close', () => {
      const m = /git version ((\d+)\.(\d+)\S*)/.exec(out);
      done(m ? { major: Number(m[2]), minor: Number(m[3]), text: m[1]! } : undefined);
    });
  });
  return asked;
}

/** true when the installed git is at least `major.minor` (false when it cannot be told) */
export async function installedGitAtLeast(env: NodeJS.ProcessEnv, major: number, minor: number): Promise<boolean> {
  const v = await installedGitVersion(env);
  return !!v && (v.major > major || (v.major === major && v.minor >= minor));
}

/** `2.39.5`, as `git version` says it; undefined when no git answers */
export async function installedGitText(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  return (await installedGitVersion(env))?.text;
}

/** the first git whose pack-objects, index-pack and unpack-objects open a reftable repository (`extensions.refStorage`) */
export const REFTABLE_GIT = '2.45';

/**
 * What a client is told when the work needs a git helper (`fetch`:
 * pack-objects; `push`: index-pack) that cannot open this reftable
 * repository, instead of that helper's own `unknown repository extension
 * found: refstorage`; undefined when the repository is not reftable or the
 * installed git can.
 */
export async function reftableRefusal(format: string, env: NodeJS.ProcessEnv, what: 'fetch' | 'push'): Promise<string | undefined> {
  if (format !== 'reftable') return undefined;
  const [major, minor] = REFTABLE_GIT.split('.').map(Number) as [number, number];
  if (await installedGitAtLeast(env, major, minor)) return undefined;
  const v = await installedGitText(env);
  return `this repository keeps its refs in the reftable format, and ${what === 'fetch' ? 'sending a pack' : 'receiving a push'} runs git on the server, whose version ${v ?? '(none found)'} cannot read it: git ${REFTABLE_GIT} or later is needed`;
}
