/**
 * Every command in README.md and docs/*.md is run (issue #27), as
 * docs/development.md ("Commands in the docs") describes: ```sh blocks run
 * and must succeed, ```console blocks run and their output is compared,
 * files named by a block's first line are written, and a server line is
 * started in the background, probed until its ports answer, and stopped by
 * PID. Each page runs in a sandbox of its own, with the example paths
 * (/srv/git, /etc/gitwire, …) and ports (8080, 9418, …) replaced by the
 * sandbox's. Also: every relative link of those pages names an existing
 * file and heading, and no page or test names a path of one machine.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { dirname, join, relative, resolve } from 'node:path';
import { BIN, ROOT, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';

const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
/** the ports the pages use, each replaced by a free one for the run */
const DOC_PORTS = ['8080', '9418', '2222', '9100', '9000'];
/** ports a page names for a server that is not there (cluster.md's Redis): a free port nobody listens on */
const AWAY_PORTS = ['6379'];
/** at most this many blocks are marked illustrative (not run), each with its reason */
const MAX_ILLUSTRATIVE = 3;

interface Block { page: string; line: number; lang: string; lines: string[]; illustrative?: string }

function blocksOf(page: string): Block[] {
  const text = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < text.length; i++) {
    const open = /^```(\S*)\s*$/.exec(text[i]!);
    if (!open) continue;
    const start = i;
    const lines: string[] = [];
    for (i++; i < text.length && !/^```\s*$/.test(text[i]!); i++) lines.push(text[i]!);
    assert.ok(i < text.length, `${page}:${start + 1}: a block that does not end`);
    const before = start > 0 ? /^<!-- illustrative: (.*) -->$/.exec(text[start - 1]!) : null;
    out.push({ page, line: start + 1, lang: open[1]!, lines, illustrative: before ? before[1]! : undefined });
  }
  return out;
}

/** the file a block is, if its first line (after a #! line) is a comment naming one */
function fileOf(b: Block): string | undefined {
  const first = b.lines[0]?.startsWith('#!') ? b.lines[1] : b.lines[0];
  const m = first === undefined ? null : /^(?:#|\/\/) ((?:\/|~\/|\.\/)\S+?|[\w.-]+\.\w+)(?::.*)?$/.exec(first);
  return m ? m[1] : undefined;
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => res(p)); });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((res) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => { c.destroy(); res(true); });
    c.once('error', () => res(false));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

interface Server { child: ChildProcess; command: string; log: string; at: string }

class Sandbox {
  readonly dir: string;
  readonly work: string;
  readonly home: string;
  readonly env: NodeJS.ProcessEnv;
  readonly ports = new Map<string, string>();
  server: Server | undefined;
  private readonly cleanup: () => void;

  private constructor(t: { dir: string; cleanup: () => void }) {
    this.dir = t.dir;
    this.cleanup = t.cleanup;
    this.work = join(t.dir, 'work');
    this.home = join(t.dir, 'home');
    const bin = join(t.dir, 'bin');
    for (const d of ['srv/git/group', 'srv/keys', 'etc/gitwire', 'var/cache', 'var/lib', 'opt/gitwire/bin', 'home', 'work/node_modules', 'bin']) mkdirSync(join(t.dir, d), { recursive: true });
    writeFileSync(join(this.home, '.gitconfig'), '[user]\n\tname = A U Thor\n\temail = author@example.com\n[init]\n\tdefaultBranch = main\n');
    // alice's key pair in the working folder, her public key in /srv/keys; bob's public key
    for (const who of ['alice', 'bob-laptop']) {
      const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', who, '-f', join(this.work, who)]);
      assert.equal(r.status, 0, r.stderr.toString());
    }
    copyFileSync(join(this.work, 'alice.pub'), join(t.dir, 'srv/keys/alice.pub'));
    // ssh reads its configuration from the user's passwd home, not $HOME: a wrapper names it
    const realSsh = spawnSync('sh', ['-c', 'command -v ssh'], { encoding: 'utf8' }).stdout.trim();
    assert.ok(realSsh, 'ssh is installed');
    const sshConfig = join(t.dir, 'ssh_config');
    writeFileSync(sshConfig, `Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  BatchMode yes\n  IdentitiesOnly yes\n  IdentityFile ${join(this.work, 'alice')}\n`);
    writeFileSync(join(bin, 'ssh'), `#!/bin/sh\nexec ${q(realSsh)} -F ${q(sshConfig)} "$@"\n`);
    chmodSync(join(bin, 'ssh'), 0o755);
    // git's credential prompt: user alice, password s3cret (the pages' htpasswd lines set it)
    writeFileSync(join(bin, 'askpass'), '#!/bin/sh\ncase "$1" in Username*) echo alice ;; *) echo s3cret ;; esac\n');
    chmodSync(join(bin, 'askpass'), 0o755);
    // what `npm install /opt/gitwire` makes in a project
    symlinkSync(ROOT, join(this.work, 'node_modules', 'gitwire'));
    const env: NodeJS.ProcessEnv = { ...gitEnv, HOME: this.home, PATH: `${bin}:${join(ROOT, 'bin')}:${process.env.PATH ?? ''}`, GIT_ASKPASS: join(bin, 'askpass'), GIT_TERMINAL_PROMPT: '0' };
    for (const k of ['GIT_CONFIG_GLOBAL', 'XDG_STATE_HOME', 'XDG_CONFIG_HOME', 'GIT_SSH', 'GIT_SSH_COMMAND', 'SSH_AUTH_SOCK', 'npm_config_prefix']) delete env[k];
    this.env = env;
    // the repositories: /srv/git/project.git and /srv/git/group/project.git, one commit on main
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    commit(src, 'base', { 'README.md': 'a project\n' });
    for (const r of ['project.git', 'group/project.git']) git(['clone', '-q', '--bare', src, join(t.dir, 'srv/git', r)]);
  }

  static async create(): Promise<Sandbox> {
    const sb = new Sandbox(tmp('gitwire-docs-'));
    for (const p of [...DOC_PORTS, ...AWAY_PORTS]) sb.ports.set(p, String(await freePort()));
    return sb;
  }

  /** the page's text as it runs here */
  sub(text: string): string {
    return text
      .replace(/\/opt\/gitwire\/bin\/gitwire(?![\w-])/g, BIN)
      .replace(/(?<![\w.~-])\/(srv|etc\/gitwire|var\/cache\/gitwire|var\/lib\/gitwire|opt\/gitwire)(?!\w)/g, (_m, p: string) => `${this.dir}/${p}`)
      .replace(/(?<=[@/[])host(?=[:\]/\s]|$)/gm, '127.0.0.1')
      .replace(/--host 0\.0\.0\.0/g, '--host 127.0.0.1')
      .replace(/(?<![\w.])10\.0\.0\.\d+(?![\w.])/g, '127.0.0.1')
      .replace(new RegExp(`(?<![\\w.])(${[...DOC_PORTS, ...AWAY_PORTS].join('|')})(?!\\w)`, 'g'), (p) => this.ports.get(p)!);
  }

  path(p: string): string {
    const s = this.sub(p);
    return s.startsWith('~/') ? join(this.home, s.slice(2)) : resolve(this.work, s);
  }

  /** one bash running `commands` one by one, each of which must exit 0 */
  async script(commands: string[], where: string): Promise<void> {
    const body = commands.map((c, i) => `${this.sub(c)}\n__s=$?; [ $__s -eq 0 ] || { echo "docs-commands: command ${i + 1} exited $__s" >&2; exit 97; }`).join('\n');
    const r = await run(`set -o pipefail\n${body}\n`, this.work, this.env);
    assert.equal(r.code, 0, `${where}: ${commands.join('\n')}\n--- output:\n${r.out}\n--- server log:\n${serverLog(this)}`);
  }

  async start(command: string, where: string): Promise<void> {
    await this.stop();
    const assigns: Record<string, string> = {};
    let rest = command;
    for (let m; (m = /^([A-Za-z_]\w*)=('[^']*'|"[^"]*"|\S*)\s+/.exec(rest)); rest = rest.slice(m[0].length)) assigns[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, '$2');
    let cwd = this.work;
    if (/^npm start\b/.test(rest)) {
      cwd = checkout(this.dir);
      // npm start's default port, so that it can be replaced
      if (!rest.includes(' -- ')) rest += ' -- --http 8080';
      rest = rest.replace(/^npm start/, 'npm start --silent');
    }
    const sub = this.sub(rest);
    const env = { ...this.env };
    for (const [k, v] of Object.entries(assigns)) env[k] = this.sub(v);
    // the ports it is to open: those on its line; those of a file its line names may be overridden by the line
    const line = `${sub} ${Object.keys(assigns).map((k) => env[k]).join(' ')}`;
    let files = '';
    for (const tok of line.split(/[\s=]+/)) {
      const f = tok.startsWith('/') ? tok : join(cwd, tok);
      if (tok && existsSync(f) && statSync(f).isFile() && statSync(f).size < 1 << 20) files += ` ${readFileSync(f, 'utf8')}`;
    }
    const named = (text: string) => DOC_PORTS.map((p) => this.ports.get(p)!).filter((p) => new RegExp(`(?<![\\w.])${p}(?!\\w)`).test(text));
    let want = named(line);
    let maybe = named(files).filter((p) => !want.includes(p));
    if (!want.length) [want, maybe] = [maybe, []];
    assert.ok(want.length > 0, `${where}: the server line names no port: ${command}`);
    const logFile = join(this.dir, `server-${Date.now()}.log`);
    const fd = openSync(logFile, 'w');
    const child = spawn('bash', ['-c', `exec ${sub}`], { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    this.server = { child, command, log: logFile, at: where };
    const until = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.server = undefined;
        assert.fail(`${where}: the server exited (${child.exitCode ?? child.signalCode}): ${command}\n${readFileSync(logFile, 'utf8')}`);
      }
      const up = await Promise.all(want.map((p) => accepts(Number(p))));
      if (up.every(Boolean)) {
        // a port from a file: given a moment, in case the line overrode it
        for (let i = 0; i < 20 && maybe.length; i++) {
          const open = await Promise.all(maybe.map((p) => accepts(Number(p))));
          maybe = maybe.filter((_p, j) => !open[j]);
          if (maybe.length) await sleep(100);
        }
        break;
      }
      if (Date.now() > until) { await this.stop().catch(() => undefined); assert.fail(`${where}: the server did not open ${want.join(', ')}: ${command}\n${readFileSync(logFile, 'utf8')}`); }
      await sleep(100);
    }
  }

  /** stop the running server, by its PID's process group; it must not have exited on its own */
  async stop(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    const exited = s.child.exitCode !== null || s.child.signalCode !== null;
    if (!exited) {
      const gone = new Promise<void>((r) => s.child.once('exit', () => r()));
      try { process.kill(-s.child.pid!, 'SIGTERM'); } catch { /* gone meanwhile */ }
      const t = setTimeout(() => { try { process.kill(-s.child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 15_000);
      await gone;
      clearTimeout(t);
    }
    // anything of its process group still there (a child it left behind)
    try { process.kill(-s.child.pid!, 'SIGKILL'); } catch { /* none: the usual case */ }
    assert.ok(!exited, `${s.at}: the server exited before the page ended (${s.child.exitCode ?? s.child.signalCode}): ${s.command}\n${s.log ? readFileSync(s.log, 'utf8') : ''}`);
  }

  async close(): Promise<void> {
    try { await this.stop(); } finally { this.cleanup(); }
  }
}

/**
 * Where `npm start` runs: the checkout, or where that is a linked work tree
 * (`git worktree add`: its git directory lies outside it, and serve never
 * follows a request out of its root) a clone of it sharing its objects, with
 * its dist/ and node_modules/.
 */
function checkout(sandbox: string): string {
  if (statSync(join(ROOT, '.git')).isDirectory()) return ROOT;
  const dir = join(sandbox, 'checkout');
  git(['clone', '-q', '--shared', ROOT, dir]);
  for (const d of ['dist', 'node_modules']) symlinkSync(join(ROOT, d), join(dir, d));
  return dir;
}

function serverLog(sb: Sandbox): string {
  const f = sb.server?.log;
  return f && existsSync(f) ? readFileSync(f, 'utf8').split('\n').slice(-30).join('\n') : '';
}

function run(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((res, rej) => {
    const c = spawn('bash', ['-c', `exec 2>&1\n${script}`], { cwd, env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    const t = setTimeout(() => { c.kill('SIGKILL'); }, 120_000);
    c.once('error', rej);
    c.once('close', (code) => { clearTimeout(t); res({ code, out }); });
  });
}

/** the commands of a ```sh block: lines joined at a trailing backslash, comment-only and empty lines left out */
function commandsOf(lines: string[]): string[] {
  const out: string[] = [];
  let cur = '';
  for (const l of lines) {
    cur += cur ? `\n${l}` : l;
    if (l.endsWith('\\')) continue;
    if (cur.trim() && !/^\s*#/.test(cur)) out.push(cur);
    cur = '';
  }
  if (cur.trim()) out.push(cur);
  return out;
}

const SERVER = /^(?:[A-Za-z_]\w*=(?:'[^']*'|"[^"]*"|\S*)\s+)*(?:(?:\S*\/)?gitwire serve\b|npm start\b|node \S+\.m?js\b)/;

async function runSh(sb: Sandbox, b: Block): Promise<void> {
  let seg: string[] = [];
  const where = `${b.page}:${b.line}`;
  for (const c of commandsOf(b.lines)) {
    if (SERVER.test(c)) {
      if (seg.length) await sb.script(seg, where);
      seg = [];
      await sb.start(c, where);
    } else seg.push(c);
  }
  if (seg.length) await sb.script(seg, where);
}

async function runConsole(sb: Sandbox, b: Block): Promise<void> {
  const where = `${b.page}:${b.line}`;
  const steps: Array<{ cmd: string; expect: string[]; status: number }> = [];
  for (const l of b.lines) {
    if (l.startsWith('$ ')) steps.push({ cmd: l.slice(2), expect: [], status: 0 });
    else {
      assert.ok(steps.length, `${where}: output before the first command`);
      const st = steps[steps.length - 1]!;
      const m = /^\(exit (\d+)\)$/.exec(l);
      if (m) st.status = Number(m[1]); else st.expect.push(l);
    }
  }
  for (const s of steps) assert.ok(!SERVER.test(s.cmd), `${where}: a server line belongs in a \`\`\`sh block`);
  const script = ['set -o pipefail', ...steps.map((s, i) => `printf '\\n@@docs ${i}@@\\n'\n${sb.sub(s.cmd)}\nprintf '\\n@@docs-status ${i} %d@@\\n' $?`)].join('\n');
  const r = await run(script, sb.work, sb.env);
  steps.forEach((s, i) => {
    const m = new RegExp(`\\n@@docs ${i}@@\\n([\\s\\S]*?)\\n@@docs-status ${i} (\\d+)@@\\n`).exec(r.out);
    assert.ok(m, `${where}: command ${i + 1} did not finish: ${s.cmd}\n${r.out}`);
    const got = m[1]!.replace(/\n+$/, '').split('\n').map((l) => l.replace(/\s+$/, '')).filter((l, j, a) => a.length > 1 || l !== '');
    const say = `${where}: $ ${s.cmd}\n--- expected:\n${s.expect.join('\n')}\n--- got (exit ${m[2]}):\n${got.join('\n')}\n--- server log:\n${serverLog(sb)}`;
    assert.equal(Number(m[2]), s.status, say);
    assert.equal(got.length, s.expect.length, say);
    s.expect.forEach((e, j) => {
      const re = new RegExp(`^${sb.sub(e).replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/…/g, '.*')}$`);
      assert.match(got[j]!, re, say);
    });
  });
}

function writeFileBlock(sb: Sandbox, b: Block, name: string): void {
  const f = sb.path(name);
  mkdirSync(dirname(f), { recursive: true });
  writeFileSync(f, sb.sub(b.lines.join('\n')) + '\n');
  if (b.lines[0]!.startsWith('#!')) chmodSync(f, 0o755);
}

const all = PAGES.map((p) => ({ page: p, blocks: blocksOf(p) }));

/** the languages a block may have: sh and console are run, the others are not */
const LANGS = new Set(['sh', 'console', 'text', 'js', 'yaml', 'nginx', 'haproxy']);

test('every block says its language, one of those the docs test knows', () => {
  for (const { blocks } of all) {
    for (const b of blocks) assert.ok(LANGS.has(b.lang), `${b.page}:${b.line}: \`\`\`${b.lang}: use \`\`\`sh or \`\`\`console (run) or one of ${[...LANGS].join(', ')}`);
  }
});

test('few blocks are illustrative, each with its reason', () => {
  const ill = all.flatMap((p) => p.blocks.filter((b) => b.illustrative !== undefined));
  for (const b of ill) assert.ok(b.illustrative!.length > 20, `${b.page}:${b.line}: the reason a block is not run`);
  assert.ok(ill.length <= MAX_ILLUSTRATIVE, `illustrative blocks: ${ill.map((b) => `${b.page}:${b.line}`).join(', ')}`);
});

for (const { page, blocks } of all) {
  const runnable = blocks.filter((b) => b.illustrative === undefined && (b.lang === 'sh' || b.lang === 'console' || fileOf(b) !== undefined));
  if (!runnable.some((b) => b.lang === 'console' || (b.lang === 'sh' && fileOf(b) === undefined))) continue;
  test(`${page}: its commands run`, { timeout: 300_000 }, async () => {
    const sb = await Sandbox.create();
    try {
      for (const b of runnable) {
        const f = fileOf(b);
        if (f !== undefined) writeFileBlock(sb, b, f);
        else if (b.lang === 'sh') await runSh(sb, b);
        else await runConsole(sb, b);
      }
    } finally { await sb.close(); }
  });
}

/** GitHub's anchor for a heading */
function slug(h: string): string {
  return h.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6} (.*)$/gm)) {
    const s = slug(m[1]!.replace(/`/g, ''));
    const n = seen.get(s) ?? 0;
    seen.set(s, n + 1);
    out.add(n ? `${s}-${n}` : s);
  }
  return out;
}

test('every relative link of README.md and docs/*.md names an existing file and heading', () => {
  let count = 0;
  for (const page of PAGES) {
    const file = join(ROOT, page);
    const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/i.test(target)) continue;
      count++;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const to = path ? resolve(dirname(file), path) : file;
      assert.ok(existsSync(to), `${page}: link to ${target}: no ${relative(ROOT, to)}`);
      if (anchor !== undefined) {
        assert.ok(to.endsWith('.md'), `${page}: an anchor into a file that is not markdown: ${target}`);
        assert.ok(anchors(to).has(anchor), `${page}: link to ${target}: no such heading in ${relative(ROOT, to)} (${[...anchors(to)].join(', ')})`);
      }
    }
  }
  assert.ok(count > 20, `links checked: ${count}`);
});

test('no page and no test names a path of one particular machine', () => {
  // (written so that this file does not match itself)
  const machine = new RegExp(String.raw`\/(?:wo` + String.raw`rk|Users)\/|\/ro` + String.raw`ot(?=[\/'"\s])|\/ho` + String.raw`me\/[a-z]`);
  const files = [...PAGES];
  const walk = (d: string) => {
    for (const e of readdirSync(join(ROOT, d), { withFileTypes: true })) {
      const p = `${d}/${e.name}`;
      if (e.isDirectory()) walk(p); else if (/\.(ts|md|json|mjs|sh)$/.test(e.name)) files.push(p);
    }
  };
  walk('test');
  for (const f of files) {
    const text = readFileSync(join(ROOT, f), 'utf8');
    const m = machine.exec(text);
    assert.equal(m, null, `${f} names ${m?.[0]} (use an environment variable)`);
  }
});
