/**
 * check_connected() (connected.c): every new tip must reach only objects
 * the repository (plus the quarantine) has, stopping at existing refs:
 * `git rev-list --objects --stdin --not --all --quiet --alternate-refs`
 * in the quarantine's environment.
 */
import { spawnSync } from 'node:child_process';
import { spawnChild } from '../../util/spawn.js';

let excludeHiddenSupported: boolean | undefined;
/** `--exclude-hidden` is git >= 2.40 */
function supportsExcludeHidden(env: NodeJS.ProcessEnv): boolean {
  if (excludeHiddenSupported === undefined) {
    const r = spawnSync('git', ['version'], { env, encoding: 'latin1' });
    const m = /git version (\d+)\.(\d+)/.exec(r.stdout ?? '');
    excludeHiddenSupported = !!m && (Number(m[1]) > 2 || (Number(m[1]) === 2 && Number(m[2]) >= 40));
  }
  return excludeHiddenSupported;
}

export interface ConnectivityOptions {
  gitDir: string;
  env: NodeJS.ProcessEnv;
  progress: boolean;
  shallowFile?: string;
  /** hidden refs are not counted as the client's proof of having objects (only passed when some are configured) */
  excludeHidden?: string;
  onStderr?: (b: Buffer) => void;
}

/** true when every id in `tips` is connected */
export function checkConnected(tips: Buffer[], o: ConnectivityOptions): Promise<boolean> {
  if (tips.length === 0) return Promise.resolve(true);
  const args: string[] = [];
  if (o.shallowFile) args.push('--shallow-file', o.shallowFile);
  args.push('rev-list', '--objects', '--stdin', '--not');
  if (o.excludeHidden && supportsExcludeHidden(o.env)) args.push(`--exclude-hidden=${o.excludeHidden}`);
  args.push('--all', '--quiet', '--alternate-refs');
  if (o.progress) args.push('--progress=Checking connectivity');
  return new Promise((resolve) => {
    const child = spawnChild('git', args, { cwd: o.gitDir, env: o.env, stdio: ['pipe', 'ignore', o.onStderr ? 'pipe' : 'ignore'] });
    child.stderr?.on('data', (b: Buffer) => o.onStderr!(b));
    child.stdin!.on('error', () => { /* exit status decides */ });
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0));
    child.stdin!.end(tips.map((t) => `${t.toString('hex')}\n`).join(''));
  });
}
