/**
 * Push hooks (githooks(5)): pre-receive, update, post-receive, post-update,
 * run in $GIT_DIR with git's arguments, stdin and environment. Their
 * stdout and stderr share one pipe (git's stdout_to_stderr) whose bytes go
 * to the pusher through Diag.
 */
import { spawnChild } from '../../util/spawn.js';
import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { strerror } from '../../util/strerror.js';
import type { Repository } from '../../repo/repository.js';

export class Hooks {
  private readonly dir: string;
  constructor(readonly repo: Repository, readonly workTree: string | undefined) {
    const hp = repo.config.get('core.hookspath');
    if (hp) {
      const p = hp.startsWith('~/') ? join(process.env.HOME ?? '', hp.slice(2)) : hp;
      this.dir = isAbsolute(p) ? p : resolve(workTree ?? repo.gitDir, p);
    } else {
      this.dir = join(repo.commonDir, 'hooks');
    }
  }

  /** find_hook(): an executable file */
  find(name: string): string | undefined {
    const p = join(this.dir, name);
    try {
      if (!statSync(p, { throwIfNoEntry: false })?.isFile()) return undefined;
      accessSync(p, constants.X_OK);
      return p;
    } catch { return undefined; }
  }

  /**
   * Run one hook; resolves with its exit code (-1 when it could not run).
   * `stdin` is written and closed; a hook that does not read it is fine.
   */
  run(name: string, o: { args?: string[]; stdin?: string | Buffer; env: NodeJS.ProcessEnv; onOutput: (b: Buffer) => void; onStartError?: (b: Buffer) => void; backedUp?: () => Promise<void> | undefined }): Promise<number> {
    const path = this.find(name);
    if (!path) return Promise.resolve(0);
    return new Promise((done) => {
      // stdout joins stderr on one pipe, as git's run_hooks does (stdout_to_stderr)
      let child;
      try {
        // $0 as git gives it: `hooks/<name>`, relative to the repository it runs in, unless core.hooksPath says otherwise
        const arg0 = path.startsWith(`${this.repo.gitDir}/`) ? path.slice(this.repo.gitDir.length + 1) : path;
        child = spawnChild('/bin/sh', ['-c', 'exec "$0" "$@" 1>&2', arg0, ...(o.args ?? [])], {
          cwd: this.repo.gitDir, env: o.env, stdio: ['pipe', 'ignore', 'pipe'],
        });
      } catch (e) {
        // (E2BIG: thousands of push options in the environment) the hook did not run: it declined, as in git
        const shown = path.startsWith(`${this.repo.gitDir}/`) ? path.slice(this.repo.gitDir.length + 1) : path;
        (o.onStartError ?? o.onOutput)(Buffer.from(`fatal: cannot exec '${shown}': ${strerror(e)}\n`));
        done(-1);
        return;
      }
      child.stderr!.on('data', (b: Buffer) => {
        o.onOutput(b);
        // a client that does not read holds the hook on a full pipe, as in git, instead of this process holding its output
        const wait = o.backedUp?.();
        if (wait) { child.stderr!.pause(); void wait.then(() => child.stderr!.resume(), () => child.stderr!.resume()); }
      });
      child.stdin!.on('error', () => { /* EPIPE: the hook did not read its input */ });
      child.on('error', () => done(-1));
      child.on('close', (code, signal) => done(signal ? -1 : code ?? -1));
      child.stdin!.end(o.stdin ?? '');
    });
  }
}

