/**
 * The proc-receive hook (AGit flow, githooks(5)): commands whose ref
 * matches `receive.procReceiveRefs` are not written by receive-pack but
 * handed to the hook, which answers for each of them with `ok`/`ng` and
 * optional `option refname|old-oid|new-oid|forced-update|fall-through`
 * lines. The conversation is pkt-lines on the hook's stdin/stdout:
 * version negotiation (`version=1` + features), the commands, push options
 * when both sides want them, then the report. The hook's stderr goes to the
 * pusher like any hook's. Messages and their order follow git's
 * run_proc_receive_hook() / read_proc_receive_report().
 */
import type { Readable, Writable } from 'node:stream';
import { spawnChild, type Child } from '../../util/spawn.js';
import { PktReader, type ReadResult } from '../../pktline/reader.js';
import { FLUSH, encode } from '../../pktline/codec.js';
import { hasFeature } from '../request.js';
import { isHex, parseHex } from '../../repo/oid.js';
import { encodeName, decodeName } from '../../util/byte-name.js';
import { isNullOid, type Command, type RefReport } from './commands.js';

/** RUN_PROC_RECEIVE_SCHEDULED / _RETURNED */
export const PROC_SCHEDULED = 1;
export const PROC_RETURNED = 2;

/** One `receive.procReceiveRefs` value: `[a][d][m][!]:<prefix>` or `<prefix>`. */
export interface ProcReceivePattern {
  add: boolean;
  del: boolean;
  modify: boolean;
  negative: boolean;
  prefix: string;
}

export function parseProcReceiveRef(value: string): ProcReceivePattern {
  const p: ProcReceivePattern = { add: false, del: false, modify: false, negative: false, prefix: value };
  const colon = value.indexOf(':');
  if (colon >= 0) {
    for (const ch of value.slice(0, colon)) {
      if (ch === 'a') p.add = true;
      else if (ch === 'd') p.del = true;
      else if (ch === 'm') p.modify = true;
      else if (ch === '!') p.negative = true;
    }
    p.prefix = value.slice(colon + 1);
  } else {
    p.add = p.del = p.modify = true;
  }
  p.prefix = p.prefix.replace(/\/+$/, '');
  return p;
}

/** proc_receive_ref_matches() */
export function procReceiveMatches(pats: ProcReceivePattern[], c: Command): boolean {
  const oldNull = isNullOid(c.old), newNull = isNullOid(c.new);
  for (const p of pats) {
    if (!p.add && oldNull) continue;
    if (!p.del && newNull) continue;
    if (!p.modify && !oldNull && !newNull) continue;
    const rest = c.ref.startsWith(p.prefix) ? c.ref.slice(p.prefix.length) : undefined;
    if (rest !== undefined && (rest === '' || rest[0] === '/')) {
      if (!p.negative) return true;
    } else if (p.negative) {
      return true;
    }
  }
  return false;
}

export interface ProcReceiveOptions {
  /** the hook's path (find_hook) */
  hook: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  commands: Command[];
  pushOptions: string[];
  /** the client asked for atomic / push-options */
  atomic: boolean;
  usePushOptions: boolean;
  hexLen: number;
  /** the hook's stderr, for the pusher */
  onStderr: (b: Buffer) => void;
  /** the pusher is not reading: hold the hook's stderr */
  backedUp?: () => Promise<void> | undefined;
  /** rp_error(), after the hook's own output */
  error: (msg: string) => void;
  /** flush what is left of the hook's stderr */
  endOutput: () => void;
}

/** Writes that fail quietly (packet_write_fmt_gently): true when the bytes were taken. */
function writeGently(w: Writable, b: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    if (w.destroyed || w.writableEnded) { resolve(false); return; }
    w.write(b, (e) => resolve(!e));
  });
}

/** A reader of the hook's stdout that treats a short or malformed packet as its end (PACKET_READ_GENTLE_ON_EOF). */
class GentleReader {
  private readonly r: PktReader;
  constructor(src: Readable) { this.r = new PktReader(src, { chomp: true }); }
  async read(): Promise<ReadResult> {
    try { return await this.r.read(); } catch { return { kind: 'eof' }; }
  }
}

function findCommand(list: Command[], from: number, ref: string): number {
  for (let i = from; i < list.length; i++) if (list[i]!.ref === ref) return i;
  return -1;
}

/** read_proc_receive_report(): 0, or -1 when something was wrong (errmsg says what, if anything). */
async function readReport(reader: GentleReader, commands: Command[], hexLen: number, errmsg: string[]): Promise<number> {
  let hint = -1;
  let report: RefReport | undefined;
  let newReport = false;
  let code = 0;
  let once = false;
  let response = 0;
  for (;;) {
    const p = await reader.read();
    if (p.kind !== 'data') {
      if (p.kind === 'eof' && !response) { errmsg.push('proc-receive exited abnormally'); return -1; }
      break;
    }
    response++;
    const line = decodeName(p.data, 0, p.data.indexOf(0) >= 0 ? p.data.indexOf(0) : p.data.length);
    const sp = line.indexOf(' ');
    if (sp < 0) { errmsg.push(`proc-receive reported incomplete status line: '${line}'\n`); code = -1; continue; }
    const head = line.slice(0, sp);
    let rest = line.slice(sp + 1);
    if (head === 'option') {
      if (hint < 0 || !(report || newReport)) {
        if (!once) errmsg.push("proc-receive reported 'option' without a matching 'ok/ng' directive\n");
        once = true;
        code = -1;
        continue;
      }
      const cmd = commands[hint]!;
      if (newReport) {
        report = {};
        (cmd.reports ??= []).push(report);
        newReport = false;
      }
      const ksp = rest.indexOf(' ');
      const key = ksp < 0 ? rest : rest.slice(0, ksp);
      const val = ksp < 0 ? undefined : rest.slice(ksp + 1);
      if (key === 'refname') report!.refname = val;
      else if (key === 'old-oid' && val !== undefined && isHex(val.slice(0, hexLen), hexLen, true)) report!.oldOid = parseHex(val.slice(0, hexLen).toLowerCase());
      else if (key === 'new-oid' && val !== undefined && isHex(val.slice(0, hexLen), hexLen, true)) report!.newOid = parseHex(val.slice(0, hexLen).toLowerCase());
      else if (key === 'forced-update') report!.forcedUpdate = true;
      else if (key === 'fall-through') cmd.procReceive = 0; // receive-pack runs it after all
      continue;
    }
    report = undefined;
    newReport = false;
    const rsp = rest.indexOf(' ');
    const refname = rsp < 0 ? rest : rest.slice(0, rsp);
    const msg = rsp < 0 ? undefined : rest.slice(rsp + 1);
    rest = refname;
    if (head !== 'ok' && head !== 'ng') {
      errmsg.push(`proc-receive reported bad status '${head}' on ref '${refname}'\n`);
      code = -1;
      continue;
    }
    // first from the last hit on, then from the start
    if (hint >= 0) hint = findCommand(commands, hint, refname);
    if (hint < 0) hint = findCommand(commands, 0, refname);
    if (hint < 0) { errmsg.push(`proc-receive reported status on unknown ref: ${refname}\n`); code = -1; continue; }
    const cmd = commands[hint]!;
    if (!cmd.procReceive) { errmsg.push(`proc-receive reported status on unexpected ref: ${refname}\n`); code = -1; continue; }
    cmd.procReceive |= PROC_RETURNED;
    if (head === 'ng') {
      cmd.error = msg ?? 'failed';
      code = -1;
      continue;
    }
    newReport = true;
  }
  for (const c of commands) {
    if (c.procReceive && !c.error && !(c.procReceive & PROC_RETURNED)) {
      c.error = 'proc-receive failed to report status';
      code = -1;
    }
  }
  return code;
}

/** run_proc_receive_hook(): 0 when the hook ran and answered cleanly. */
export async function runProcReceive(o: ProcReceiveOptions): Promise<number> {
  let child: Child;
  try {
    child = spawnChild(o.hook, [], { cwd: o.cwd, env: o.env, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch {
    return -1;
  }
  const exited = new Promise<number>((done) => {
    child.on('error', () => done(-1));
    child.on('close', (code, signal) => done(signal ? -1 : code ?? -1));
  });
  child.stderr!.on('data', (b: Buffer) => {
    o.onStderr(b);
    const wait = o.backedUp?.();
    if (wait) { child.stderr!.pause(); void wait.then(() => child.stderr!.resume(), () => child.stderr!.resume()); }
  });
  const stdin = child.stdin!;
  stdin.on('error', () => { /* EPIPE: seen by the write that failed */ });
  const reader = new GentleReader(child.stdout!);
  const errmsg: string[] = [];
  let code: number;
  try {
    code = await converse(o, stdin, reader, errmsg);
  } finally {
    stdin.end();
    // close(proc.out), as git does: a hook still writing gets EPIPE
    child.stdout!.destroy();
  }
  const rc = await exited;
  o.endOutput();
  if (rc !== 0) code = -1;
  if (errmsg.length) o.error(errmsg.join('').replace(/\n$/, ''));
  return code;
}

async function converse(o: ProcReceiveOptions, stdin: Writable, reader: GentleReader, errmsg: string[]): Promise<number> {
  let code = 0;
  {
    // version negotiation
    const caps = [o.atomic ? 'atomic' : '', o.usePushOptions ? 'push-options' : ''].filter(Boolean).join(' ');
    let ok = await writeGently(stdin, encode(caps ? `version=1\0${caps}\n` : 'version=1\n'));
    if (ok) ok = await writeGently(stdin, FLUSH);
    let version = 0;
    let hookPushOptions = false;
    if (!ok) code = -1;
    else {
      for (;;) {
        const p = await reader.read();
        if (p.kind !== 'data') { if (p.kind === 'eof') code = -1; break; }
        const d = p.data;
        if (d.length > 8 && d.toString('latin1', 0, 8) === 'version=') {
          const nul = d.indexOf(0);
          const v = d.toString('latin1', 8, nul < 0 ? d.length : nul);
          version = parseInt(v, 10) || 0; // atoi()
          if (nul >= 0 && hasFeature(d.toString('latin1', nul + 1), 'push-options')) hookPushOptions = true;
        }
      }
    }
    if (code) { errmsg.push('fail to negotiate version with proc-receive hook'); return code; }
    if (version !== 0 && version !== 1) { errmsg.push(`proc-receive version '${version}' is not supported`); return -1; }
    // the commands
    const lines: Buffer[] = [];
    for (const c of o.commands) {
      if (!c.procReceive || c.skipUpdate || c.error) continue;
      lines.push(encode(encodeName(`${c.old.toString('hex')} ${c.new.toString('hex')} ${c.ref}`)));
    }
    lines.push(FLUSH);
    if (!(await writeGently(stdin, Buffer.concat(lines)))) { errmsg.push('fail to write commands to proc-receive hook'); return -1; }
    if (hookPushOptions) {
      const opts = o.pushOptions.map((p) => encode(p));
      opts.push(FLUSH);
      if (!(await writeGently(stdin, Buffer.concat(opts)))) { errmsg.push('fail to write push-options to proc-receive hook'); return -1; }
    }
    return await readReport(reader, o.commands, o.hexLen, errmsg);
  }
}
