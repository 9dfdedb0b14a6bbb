/**
 * Signed pushes (push certificates), as git's receive-pack does them:
 * the `push-cert=<nonce>` nonce (`<stamp>-<HMAC(seed, "<dir>:<stamp>")>`,
 * HMAC with the repository's hash), its check against what the client
 * signed (OK, BAD, MISSING, UNSOLICITED, SLOP with receive.certNonceSlop),
 * the signature's verification with gpg, gpgsm or ssh-keygen (chosen by the
 * signature's armour, programs from gpg.program & co., ssh through
 * gpg.ssh.allowedSignersFile), and the GIT_PUSH_CERT* variables for the
 * hooks, with the certificate stored as a blob.
 */
import { createHash, createHmac } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir, homedir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { spawnChild } from '../../util/spawn.js';
import { encodeName } from '../../util/byte-name.js';
import type { Repository } from '../../repo/repository.js';

export type NonceStatus = 'UNSOLICITED' | 'BAD' | 'MISSING' | 'OK' | 'SLOP';

/** prepare_push_cert_nonce() */
export function certNonce(serviceDir: string, stamp: number, seed: string, format: string): string {
  const h = createHmac(format === 'sha256' ? 'sha256' : 'sha1', seed).update(`${serviceDir}:${stamp}`).digest('hex');
  return `${stamp}-${h}`;
}

/** find_commit_header(): the value of the first `<key> <value>` line of the header part */
function header(buf: string, key: string, from = 0): { value: string; end: number } | undefined {
  let at = from;
  while (at < buf.length) {
    const eol = buf.indexOf('\n', at);
    const end = eol < 0 ? buf.length : eol;
    if (end === at) return undefined; // blank line: end of the header
    if (buf.startsWith(`${key} `, at)) return { value: buf.slice(at + key.length + 1, end), end };
    at = end + 1;
  }
  return undefined;
}

/** check_nonce() */
export function checkNonce(payload: string, o: { issued?: string; statelessRpc: boolean; serviceDir: string; seed?: string; format: string; slopLimit: number }):
  { status: NonceStatus; nonce?: string; slop?: number } {
  const nonce = header(payload, 'nonce')?.value;
  if (nonce === undefined) return { status: 'MISSING', nonce: o.issued };
  if (!o.issued) return { status: 'UNSOLICITED' };
  if (o.issued === nonce) return { status: 'OK', nonce: o.issued };
  if (!o.statelessRpc) return { status: 'BAD', nonce: o.issued };
  // a nonce another instance of this server gave out (stateless HTTP): same seed and directory
  const m = /^([1-9]\d*|0)-/.exec(nonce);
  if (!m || nonce[0]! < '0' || nonce[0]! > '9') return { status: 'BAD', nonce: o.issued };
  const stamp = Number(m[1]);
  const expect = certNonce(o.serviceDir, stamp, o.seed ?? '', o.format);
  if (expect.length !== nonce.length || expect !== nonce) return { status: 'BAD', nonce: o.issued };
  const slop = parseInt(o.issued, 10) - stamp;
  if (o.slopLimit && Math.abs(slop) <= o.slopLimit) return { status: 'OK', nonce };
  return { status: 'SLOP', nonce: o.issued, slop };
}

/** check_cert_push_options(): the push options the certificate signed are the ones sent */
export function certPushOptionsMatch(cert: string, options: string[]): boolean {
  if (!cert) return true;
  let seen = 0;
  let from = 0;
  for (;;) {
    const h = header(cert, 'push-option', from);
    if (!h) break;
    from = h.end + 1;
    seen++;
    if (seen > options.length || options[seen - 1] !== h.value) return false;
  }
  return seen === options.length;
}

const SIGS: Array<{ format: 'openpgp' | 'x509' | 'ssh'; armour: string[] }> = [
  { format: 'openpgp', armour: ['-----BEGIN PGP SIGNATURE-----', '-----BEGIN PGP MESSAGE-----'] },
  { format: 'x509', armour: ['-----BEGIN SIGNED MESSAGE-----'] },
  { format: 'ssh', armour: ['-----BEGIN SSH SIGNATURE-----'] },
];

function formatOfSig(s: string, at: number): 'openpgp' | 'x509' | 'ssh' | undefined {
  for (const f of SIGS) for (const a of f.armour) if (s.startsWith(a, at)) return f.format;
  return undefined;
}

/** parse_signed_buffer(): where the last signature armour line starts (or the length) */
export function signedPartEnd(buf: string): number {
  let match = buf.length;
  for (let at = 0; at < buf.length;) {
    if (formatOfSig(buf, at)) match = at;
    const eol = buf.indexOf('\n', at);
    at = eol < 0 ? buf.length : eol + 1;
  }
  return match;
}

export interface SigCheck {
  /** G, B, U, X, Y, R, E, N */
  result: string;
  signer?: string;
  key?: string;
}

interface GpgConfig { program: Record<'openpgp' | 'x509' | 'ssh', string>; allowedSigners?: string; revocationFile?: string }

function pathname(v: string): string {
  return v.startsWith('~/') ? join(homedir(), v.slice(2)) : v;
}

function gpgConfig(repo: Repository): GpgConfig {
  const g: GpgConfig = { program: { openpgp: 'gpg', x509: 'gpgsm', ssh: 'ssh-keygen' } };
  for (const e of repo.config.each()) {
    const v = e.value;
    if (v === null) continue;
    switch (e.key) {
      case 'gpg.program': case 'gpg.openpgp.program': g.program.openpgp = pathname(v); break;
      case 'gpg.x509.program': g.program.x509 = pathname(v); break;
      case 'gpg.ssh.program': g.program.ssh = pathname(v); break;
      case 'gpg.ssh.allowedsignersfile': g.allowedSigners = pathname(v); break;
      case 'gpg.ssh.revocationfile': g.revocationFile = pathname(v); break;
    }
  }
  return g;
}

function pipe(cmd: string, args: string[], input: Buffer | undefined, env: NodeJS.ProcessEnv): Promise<{ code: number; out: string; err: string }> {
  return new Promise((done) => {
    let child;
    try { child = spawnChild(cmd, args, { env, stdio: ['pipe', 'pipe', 'pipe'] }); } catch { done({ code: -1, out: '', err: '' }); return; }
    const out: Buffer[] = [], err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.stdin!.on('error', () => { /* EPIPE: it did not read */ });
    child.on('error', () => done({ code: -1, out: '', err: '' }));
    child.on('close', (code, sig) => done({ code: sig ? -1 : code ?? -1, out: Buffer.concat(out).toString(), err: Buffer.concat(err).toString() }));
    child.stdin!.end(input ?? Buffer.alloc(0));
  });
}

/** parse_gpg_output() */
function parseGpgStatus(status: string, sc: SigCheck): void {
  let exclusive = 0;
  const table: Array<[string, string, number]> = [
    ['G', 'GOODSIG ', 7], ['B', 'BADSIG ', 7], ['E', 'ERRSIG ', 3], ['X', 'EXPSIG ', 7],
    ['Y', 'EXPKEYSIG ', 7], ['R', 'REVKEYSIG ', 7], ['', 'VALIDSIG ', 8], ['', 'TRUST_', 16],
  ];
  for (const raw of status.split('\n')) {
    if (!raw.startsWith('[GNUPG:] ')) continue;
    const line = raw.slice(9);
    for (const [result, check, flags] of table) {
      if (!line.startsWith(check)) continue;
      const rest = line.slice(check.length);
      if (flags & 1 && exclusive++) { sc.result = 'E'; sc.signer = sc.key = undefined; return; }
      if (result) sc.result = result;
      if (flags & 2) {
        const sp = rest.indexOf(' ');
        sc.key = sp < 0 ? rest : rest.slice(0, sp);
        if (sp >= 0 && flags & 4) sc.signer = rest.slice(sp + 1);
      }
      if (flags & 16) {
        const lvl = rest.split(/[ \n]/)[0]!;
        if (!['UNDEFINED', 'NEVER', 'MARGINAL', 'FULLY', 'ULTIMATE'].includes(lvl)) { sc.result = 'E'; sc.signer = sc.key = undefined; return; }
      }
      break;
    }
  }
}

/** parse_ssh_output() */
function parseSshOutput(output: string, sc: SigCheck): void {
  sc.result = 'B';
  let line = output.split('\n')[0]!;
  const known = 'Good "git" signature for ', unknown = 'Good "git" signature with ';
  if (line.startsWith(known)) {
    line = line.slice(known.length);
    const w = line.lastIndexOf(' with ');
    if (w < 0) return;
    sc.result = 'G';
    sc.signer = line.slice(0, w);
    line = line.slice(w + 1);
  } else if (line.startsWith(unknown)) {
    sc.result = 'G';
    line = line.slice(unknown.length);
  } else return;
  const k = line.indexOf('key ');
  if (k >= 0) sc.key = line.slice(k + 4);
  else sc.result = 'B';
}

/** git's strbuf_stripspace() without comments: trailing spaces off each line, runs of blank lines to one, none at either end */
function stripspace(s: string): string {
  const lines = s.split('\n').map((l) => l.replace(/\s+$/, ''));
  const out: string[] = [];
  for (const l of lines) {
    if (!l) { if (out.length && out[out.length - 1] !== '') out.push(''); continue; }
    out.push(l);
  }
  while (out.length && out[out.length - 1] === '') out.pop();
  return out.length ? `${out.join('\n')}\n` : '';
}

/** check_signature() over a push certificate: the signature's result, signer and key */
export async function verifyCert(repo: Repository, payload: string, signature: string, env: NodeJS.ProcessEnv, warn: (msg: string) => void): Promise<SigCheck> {
  const sc: SigCheck = { result: 'N' };
  const fmt = formatOfSig(signature, 0);
  if (!fmt) return sc;
  const cfg = gpgConfig(repo);
  if (fmt === 'ssh' && !cfg.allowedSigners) {
    warn('error: gpg.ssh.allowedSignersFile needs to be configured and exist for ssh signature verification\n');
    return sc;
  }
  const dir = mkdtempSync(join(tmpdir(), '.git_vtag_tmp'));
  const sigFile = join(dir, 'sig');
  try {
    writeFileSync(sigFile, signature);
    const input = Buffer.from(payload);
    if (fmt !== 'ssh') {
      const args = fmt === 'openpgp' ? ['--keyid-format=long'] : [];
      const r = await pipe(cfg.program[fmt], [...args, '--status-fd=1', '--verify', sigFile, '-'], input, env);
      parseGpgStatus(r.out, sc);
      return sc;
    }
    const prog = cfg.program.ssh, allowed = cfg.allowedSigners!;
    // (git passes an empty -Overify-time when the payload has no timestamp, as for push certificates)
    const found = await pipe(prog, ['-Y', 'find-principals', '-f', allowed, '-s', sigFile, ''], undefined, env);
    if (found.code && found.err.includes('usage:')) {
      warn('error: ssh-keygen -Y find-principals/verify is needed for ssh signature verification (available in openssh version 8.2p1+)\n');
      return sc;
    }
    let out = '', err = '';
    if (found.code || !found.out) {
      const r = await pipe(prog, ['-Y', 'check-novalidate', '-n', 'git', '-s', sigFile, ''], input, env);
      out = r.out; err = r.err;
    } else {
      for (const l of found.out.split('\n')) {
        const principal = l.replace(/\r$/, '');
        if (!principal) continue;
        const args = ['-Y', 'verify', '-n', 'git', '-f', allowed, '-I', principal, '-s', sigFile, ''];
        if (cfg.revocationFile) {
          if (existsSync(cfg.revocationFile)) args.push('-r', cfg.revocationFile);
          else warn(`warning: ssh signing revocation file configured but not found: ${cfg.revocationFile}\n`);
        }
        const r = await pipe(prog, args, input, env);
        out = r.out; err = r.err;
        if (!r.code && r.out.startsWith('Good')) break;
      }
    }
    parseSshOutput(stripspace(out) + found.err + stripspace(err), sc);
    return sc;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** write the certificate as a loose blob (odb_write_object); its id, or undefined when it could not be written */
export function writeBlob(objectsDir: string, data: Buffer, format: string): Buffer | undefined {
  const body = Buffer.concat([Buffer.from(`blob ${data.length}\0`), data]);
  const oid = createHash(format === 'sha256' ? 'sha256' : 'sha1').update(body).digest();
  const hex = oid.toString('hex');
  const dir = join(objectsDir, hex.slice(0, 2));
  const path = join(dir, hex.slice(2));
  if (existsSync(path)) return oid;
  const tmp = join(objectsDir, `tmp_obj_${randomBytes(6).toString('hex')}`);
  try {
    mkdirSync(dir, { recursive: true });
    const fd = openSync(tmp, 'wx', 0o444);
    try { writeSync(fd, deflateSync(body)); } finally { closeSync(fd); }
    renameSync(tmp, path);
    return oid;
  } catch {
    try { unlinkSync(tmp); } catch { /* gone */ }
    return undefined;
  }
}

export interface PushCertEnvOptions {
  repo: Repository;
  cert: string | undefined;
  env: NodeJS.ProcessEnv;
  /** the nonce this conversation gave out */
  nonce: string | undefined;
  statelessRpc: boolean;
  serviceDir: string;
  seed: string | undefined;
  slopLimit: number;
  warn: (msg: string) => void;
}

/** prepare_push_cert_sha1(): store the certificate, check its signature and nonce, and say so in GIT_PUSH_CERT* */
export async function pushCertHookEnv(o: PushCertEnvOptions): Promise<Record<string, string>> {
  const e: Record<string, string> = {};
  const cert = o.cert;
  if (!cert) return e;
  const repo = o.repo;
  const oid = writeBlob(o.env.GIT_OBJECT_DIRECTORY ?? join(repo.commonDir, 'objects'), encodeName(cert), repo.format);
  const bogs = signedPartEnd(cert);
  const payload = cert.slice(0, bogs);
  const sig = await verifyCert(repo, payload, cert.slice(bogs), o.env, o.warn);
  const n = checkNonce(payload, { issued: o.nonce, statelessRpc: o.statelessRpc, serviceDir: o.serviceDir, seed: o.seed, format: repo.format, slopLimit: o.slopLimit });
  if (!oid) return e;
  e.GIT_PUSH_CERT = oid.toString('hex');
  e.GIT_PUSH_CERT_SIGNER = sig.signer ?? '';
  e.GIT_PUSH_CERT_KEY = sig.key ?? '';
  e.GIT_PUSH_CERT_STATUS = sig.result;
  if (n.nonce) {
    e.GIT_PUSH_CERT_NONCE = n.nonce;
    e.GIT_PUSH_CERT_NONCE_STATUS = n.status;
    if (n.status === 'SLOP') e.GIT_PUSH_CERT_NONCE_SLOP = String(n.slop);
  }
  return e;
}
