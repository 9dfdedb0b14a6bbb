/**
 * receive-pack's ref advertisement (write_head_info): every ref (no HEAD),
 * refs outside the namespace and alternates' refs as `.have`, the
 * capabilities on the first line (or `capabilities^{}` when there is no
 * ref), shallow grafts, flush. Through the packet writer's 64 KiB buffer.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { spawnChild } from '../../util/spawn.js';
import { join } from 'node:path';
import type { PacketWriter } from '../../pktline/writer.js';
import type { Repository } from '../../repo/repository.js';
import { openRefStoreAt, type RefStore } from '../../repo/refs/index.js';
import { Slicer } from '../../util/budget.js';
import { userAgent } from '../../version.js';
import type { ReceiveConfig } from './config.js';
import { alternateObjectDirs } from './alternates.js';

const SP = Buffer.from(' ');
const LF = Buffer.from('\n');
const HAVE = Buffer.from('.have');

export function receiveCapabilities(repo: Repository, cfg: ReceiveConfig, sessionId?: string, pushCertNonce?: string): string {
  let cap = 'report-status report-status-v2 delete-refs side-band-64k quiet';
  if (cfg.advertiseAtomic) cap += ' atomic';
  if (cfg.preferOfsDelta) cap += ' ofs-delta';
  if (pushCertNonce) cap += ` push-cert=${pushCertNonce}`;
  if (cfg.advertisePushOptions) cap += ' push-options';
  if (cfg.advertiseSid && sessionId) cap += ` session-id=${sessionId}`;
  cap += ` object-format=${repo.format} agent=${userAgent(repo.env)}`;
  return cap;
}

/** The ids of an alternate repository's refs, in for-each-ref order (git's read_alternate_refs). */
function* alternateRefIds(repo: Repository, objectsDir: string): Generator<Buffer> {
  if (!/\/objects\/?$/.test(objectsDir)) return;
  const gitDir = objectsDir.replace(/\/objects\/?$/, '');
  let store: RefStore;
  try { store = openRefStoreAt(gitDir, repo.hashLen, repo.env); } catch { return; }
  const prefixes = repo.config.get('core.alternaterefsprefixes');
  const pats = prefixes ? prefixes.split(/\s+/).filter(Boolean) : undefined;
  for (const r of store.iterate('refs/')) {
    if (pats) {
      const n = r.name.toString();
      if (!pats.some((p) => n.startsWith(p))) continue;
    }
    yield r.hex;
  }
}

/** what git keeps out of a command run for another repository (local_repo_env) */
const LOCAL_REPO_ENV = ['GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_CONFIG', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT', 'GIT_OBJECT_DIRECTORY',
  'GIT_DIR', 'GIT_WORK_TREE', 'GIT_IMPLICIT_WORK_TREE', 'GIT_GRAFT_FILE', 'GIT_INDEX_FILE', 'GIT_NO_REPLACE_OBJECTS', 'GIT_REPLACE_REF_BASE',
  'GIT_PREFIX', 'GIT_SHALLOW_FILE', 'GIT_COMMON_DIR'];

/**
 * core.alternateRefsCommand (read_alternate_refs): `<command> <alternate repository>` through the shell, one id
 * per line on its stdout, read as it comes; a line that is not an id ends it with git's warning.
 */
function alternateRefsCommand(repo: Repository, command: string, objectsDir: string, have: (hex: Buffer) => void): Promise<void> {
  let real: string;
  try { real = realpathSync(objectsDir); } catch { return Promise.resolve(); }
  if (!/\/objects$/.test(real)) return Promise.resolve();
  const path = real.slice(0, -'/objects'.length);
  const env: NodeJS.ProcessEnv = { ...repo.env };
  for (const k of LOCAL_REPO_ENV) delete env[k];
  for (const k of Object.keys(env)) if (/^GIT_CONFIG_(KEY|VALUE)_\d+$/.test(k)) delete env[k];
  return new Promise((done) => {
    let child;
    try {
      child = spawnChild('/bin/sh', ['-c', `${command} "$@"`, command, path], { cwd: repo.gitDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stderr!.on('data', (b: Buffer) => { try { process.stderr.write(b); } catch { /* closed */ } });
    } catch { done(); return; }
    let rest = '';
    let stopped = false;
    const hexLen = repo.hexLen;
    child.stdout!.on('data', (b: Buffer) => {
      if (stopped) return;
      const lines = (rest + b.toString('latin1')).split('\n');
      rest = lines.pop()!;
      for (const l of lines) {
        if (l.length !== hexLen || !/^[0-9a-fA-F]+$/.test(l)) {
          process.stderr.write(`warning: invalid line while parsing alternate refs: ${l}\n`);
          stopped = true;
          return;
        }
        have(Buffer.from(l.toLowerCase(), 'latin1'));
      }
    });
    child.on('error', () => done());
    child.on('close', () => done());
  });
}

export async function advertiseReceiveRefs(repo: Repository, w: PacketWriter, cfg: ReceiveConfig, caps: string): Promise<void> {
  const hexLen = repo.hexLen;
  const ns = repo.namespace;
  const nsBuf = Buffer.from(ns);
  const hide = cfg.hideRefs;
  const alternates = alternateObjectDirs(repo);
  const track = !!ns || alternates.length > 0;
  const seen = new Set<string>();
  let capTail: Buffer | undefined = Buffer.from(`\0${caps}\n`);
  // a backed-up client holds the scan; a fast one gets it in slices, so other requests run between them
  const slicer = new Slicer();
  await repo.refs.prepare(slicer);
  const pause = () => (w.backedUp ? w.waitDrained() : slicer.due());
  await repo.refs.scan('refs/', (r) => {
    const b = r.buf, hexAt = r.hexAt, nameAt = r.nameAt, nameEnd = r.nameEnd;
    let strippedAt = nameAt;
    let inNs = true;
    if (ns) {
      inNs = nameEnd - nameAt > nsBuf.length && b.compare(nsBuf, 0, nsBuf.length, nameAt, nameAt + nsBuf.length) === 0;
      if (inNs) strippedAt = nameAt + nsBuf.length;
    }
    if (!hide.empty) {
      if (inNs ? hide.isHiddenRegion(b, strippedAt, nameAt, nameEnd)
        : hide.isHidden(undefined, b.subarray(nameAt, nameEnd))) return;
    }
    const tail = capTail ?? LF;
    if (!inNs) {
      const k = b.toString('latin1', hexAt, hexAt + hexLen);
      if (seen.has(k)) return;
      seen.add(k);
      capTail = undefined;
      w.dataParts(b.subarray(hexAt, hexAt + hexLen), SP, HAVE, tail);
      return;
    }
    if (track) seen.add(b.toString('latin1', hexAt, hexAt + hexLen));
    capTail = undefined;
    if (strippedAt === hexAt + hexLen + 1) w.dataRegion(b, hexAt, nameEnd, tail);
    else w.dataParts(b.subarray(hexAt, hexAt + hexLen), SP, b.subarray(strippedAt, nameEnd), tail);
  }, pause);
  const have = (hex: Buffer) => {
    const k = hex.toString('latin1');
    if (seen.has(k)) return;
    seen.add(k);
    w.dataParts(hex, SP, HAVE, capTail ?? LF);
    capTail = undefined;
  };
  const command = repo.config.get('core.alternaterefscommand');
  for (const dir of alternates) {
    if (typeof command === 'string') await alternateRefsCommand(repo, command, dir, have);
    else for (const hex of alternateRefIds(repo, dir)) have(hex);
  }
  if (capTail) w.dataParts('0'.repeat(hexLen), ' capabilities^{}', capTail);
  for (const hex of shallowGrafts(repo)) w.data(`shallow ${hex}\n`);
  w.flush();
}

/** The repository's shallow file, as advertise_shallow_grafts sends it (file order). */
export function shallowGrafts(repo: Repository): string[] {
  let text: string;
  try { text = readFileSync(join(repo.gitDir, 'shallow'), 'latin1'); } catch { return []; }
  return text.split('\n').filter((l) => l.length === repo.hexLen);
}
