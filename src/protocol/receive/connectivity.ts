/**
 * check_connected() (connected.c): every new tip must reach only objects
 * the repository (plus the quarantine) has, stopping at existing refs:
 * `git rev-list --objects --stdin --not --all --quiet --alternate-refs`
 * in the quarantine's environment.
 */
import { spawnChild } from '../../util/spawn.js';
import { installedGitAtLeast } from '../../util/git-version.js';

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
export async function checkConnected(tips: Buffer[], o: ConnectivityOptions): Promise<boolean> {
  if (tips.length === 0) return true;
  const args: string[] = [];
  if (o.shallowFile) args.push('--shallow-file', o.shallowFile);
  args.push('rev-list', '--objects', '--stdin', '--not');
  // `--exclude-hidden` is git >= 2.40
  if (o.excludeHidden && await installedGitAtLeast(o.env, 2, 40)) args.push(`--exclude-hidden=${o.excludeHidden}`);
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
