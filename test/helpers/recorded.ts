/**
 * Outputs of a newer git than the one installed, recorded once and kept as
 * text (test/recorded/*.json). Tests compare gitwire against git itself
 * wherever the installed git has the behaviour, and against these records
 * where only newer git has it.
 *
 * To record (or re-record) run the tests with GITWIRE_RECORD_GIT set to
 * that git, e.g.
 *   GITWIRE_RECORD_GIT=$GITWIRE_GIT_2_55/bin/git \
 *   GITWIRE_RECORD_EXEC_PATH=$GITWIRE_GIT_2_55/libexec/git-core \
 *   node --test build/test/cat-file-usage.test.js
 * The fixture repositories are built deterministically, so the object ids
 * in a record are the ids the test sees.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, run, type GitOpts } from './git.js';

export interface Outcome { stdout: Buffer; stderr: Buffer; status: number | null }

interface Stored { stdout: string; stderr: string; status: number | null }

export class Recorded {
  private readonly file: string;
  private readonly data: Record<string, Stored>;
  private dirty = false;
  readonly recording: boolean;

  /** `version`: the git whose output is recorded, e.g. '2.55.0' */
  constructor(name: string, readonly version: string) {
    this.file = join(ROOT, 'test', 'recorded', `${name}.json`);
    this.data = existsSync(this.file) ? JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, Stored> : {};
    this.recording = !!process.env.GITWIRE_RECORD_GIT;
  }

  /**
   * git `args` as the recorded version answers them. `scrub` replaces
   * run-specific text (temporary paths) before storing and comparing.
   */
  git(key: string, args: string[], opts: GitOpts = {}, scrub: (s: string) => string = (s) => s): Outcome {
    if (this.recording) {
      const env = { ...opts.env, ...(process.env.GITWIRE_RECORD_EXEC_PATH ? { GIT_EXEC_PATH: process.env.GITWIRE_RECORD_EXEC_PATH } : {}) };
      const r = run(process.env.GITWIRE_RECORD_GIT!, args, { ...opts, env });
      const v = run(process.env.GITWIRE_RECORD_GIT!, ['version'], { env }).stdout.toString().trim();
      if (v !== `git version ${this.version}`) throw new Error(`recording with ${v}, expected git ${this.version}`);
      this.data[key] = { stdout: scrub(r.stdout.toString('latin1')), stderr: scrub(r.stderr.toString('latin1')), status: r.status };
      this.dirty = true;
    }
    const s = this.data[key];
    if (!s) throw new Error(`no recorded git ${this.version} output for '${key}' in ${this.file}`);
    return { stdout: Buffer.from(s.stdout, 'latin1'), stderr: Buffer.from(s.stderr, 'latin1'), status: s.status };
  }

  /** Write the records back (recording runs only). */
  save(): void {
    if (!this.dirty) return;
    const sorted = Object.fromEntries(Object.entries(this.data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    writeFileSync(this.file, `${JSON.stringify(sorted, null, 1)}\n`);
  }
}

/** The installed git's version as [major, minor]. */
export function installedGitVersion(): [number, number] {
  const m = /(\d+)\.(\d+)/.exec(run('git', ['version']).stdout.toString());
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
}
