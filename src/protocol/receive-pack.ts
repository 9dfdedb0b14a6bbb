/**
 * The receive-pack conversation (git-receive-pack): the push side of
 * protocol v0/v1 over any byte source and sink. A v2 request gets v0, as
 * git does (push has no v2 yet).
 *
 * Advertisement → commands (+ shallow, push options) → pack into a
 * quarantine (index-pack / unpack-objects) → connectivity → hidden refs →
 * pre-receive (and `authorizePush`) → migrate → per-ref policy, `update`
 * hook, ref transaction → report → post-receive, post-update (and
 * `onPush`) → final flush.
 */
import type { Readable } from 'node:stream';
import { unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, dirname, basename } from 'node:path';
import { GitwireError, clientGone, refsUnreadable } from '../errors.js';
import { refFormatOf } from '../repo/refs/open.js';
import { installedGitText, reftableRefusal } from '../util/git-version.js';
import { PacketWriter } from '../pktline/writer.js';
import { PktReader } from '../pktline/reader.js';
import { Band } from '../pktline/codec.js';
import { Repository } from '../repo/repository.js';
import { locateRepository } from '../repo/discover.js';
import { assertOwnership } from '../repo/ownership.js';
import { checkRefnameFormat } from '../repo/refname.js';
import { isAncestor } from '../repo/reach.js';
import { Quarantine } from '../repo/quarantine.js';
import { forEachSliced, Slicer } from '../util/budget.js';
import { encodeName } from '../util/byte-name.js';
import { resolveLimits, type Limits } from './limits.js';
import { HookAbortError, txErrorReason, type PointReader, type RefEdit, type RefUpdate } from '../repo/refs/index.js';
import { Reflogs, committerIdent, logAllRefUpdates } from '../repo/reflog.js';
import { ObjectDatabase } from '../repo/odb.js';
import { ObjType } from '../repo/object-type.js';
import { protocolVersion } from './version.js';
import { Trace2 } from './trace2.js';
import { version } from '../version.js';
import type { CommonServiceOptions } from './service.js';
import { readReceiveConfig, type ReceiveConfig } from './receive/config.js';
import { advertiseReceiveRefs, receiveCapabilities, shallowGrafts } from './receive/advertise.js';
import { readPushRequest, readPushOptions, isNullOid, type Command, type ClientCaps } from './receive/commands.js';
import { Diag } from './receive/diag.js';
import { Hooks } from './receive/hooks.js';
import { checkConnected } from './receive/connectivity.js';
import { runAutoMaintenance } from './receive/maintenance.js';
import { updateServerInfo } from './receive/server-info.js';
import { commitShallow, shallowRootsReached } from './receive/shallow.js';
import { reportBytes } from './receive/report.js';
import { EMPTY_TREE_SHA1, EMPTY_TREE_SHA256, refusalDeleteCurrent, refusalDeny } from './receive/messages.js';
import { certNonce, certPushOptionsMatch, pushCertHookEnv } from './receive/push-cert.js';
import { listWorktrees, updateWorktree, worktreeOf, type Worktree } from './receive/push-to-checkout.js';
import { PROC_RETURNED, PROC_SCHEDULED, procReceiveMatches, runProcReceive } from './receive/proc-receive.js';
import { refuseProtected } from './receive/protect.js';
import { ingestPack, parsePackHeader } from '../pack/index-pack.js';
import { FdPktSource } from './receive/fd-source.js';
import { ObjectService } from '../catfile/service.js';

/** What a push asks for, as the library callbacks see it. */
export interface PushInfo {
  directory: string;
  gitDir: string;
  pushOptions: string[];
  atomic: boolean;
  /** the quarantine directory while `authorizePush` runs */
  quarantinePath?: string;
  /** environment to inspect quarantined objects with git (GIT_OBJECT_DIRECTORY, …) */
  quarantineEnv?: Record<string, string>;
  /** while `authorizePush` runs: the repository's objects and the quarantined ones (closed after the callback) */
  objects?: ObjectService;
}

export interface PushUpdate {
  /** ref name as the client sent it */
  ref: string;
  oldHex: string;
  newHex: string;
  /** force: the new value is not a descendant of the old one (or not a commit) */
  kind: 'create' | 'update' | 'delete' | 'force';
}

/** `authorizePush`'s answer: reject everything, or single refs, with a reason the client sees. */
export interface PushDecision {
  rejectAll?: string;
  reject?: Record<string, string>;
}

/**
 * One ref's outcome. `moved`: the ref changed (false for a refused update,
 * one whose old and new are the same, and the deletion of a ref that did
 * not exist). A command proc-receive answered for stands for the refs it
 * reported, as in post-receive's input.
 */
export interface PushRefResult { ref: string; oldHex: string; newHex: string; ok: boolean; reason?: string; moved: boolean }

export interface ReceivePackOptions extends CommonServiceOptions {
  /** per-request limits (protocol/limits.ts): `maxRequestBytes` bounds the command and push-option lists */
  limits?: Partial<Limits>;
  /** --quiet: no progress from index-pack */
  quiet?: boolean;
  /** where diagnostics go when the client did not ask for sideband (default: this process's stderr) */
  stderr?: (b: Buffer) => void;
  /** git's --skip-connectivity-check (testing only) */
  skipConnectivityCheck?: boolean;
  /** git's --reject-thin-pack-for-testing */
  rejectThin?: boolean;
  /**
   * Library policy, called where pre-receive runs (after quarantine and
   * connectivity, after the hook accepted): reject all refs or some.
   */
  authorizePush?: (info: PushInfo, updates: PushUpdate[]) => PushDecision | void | Promise<PushDecision | void>;
  /** called after the report when some ref moved (not when every one was refused or left as it was), with every ref's outcome */
  onPush?: (info: PushInfo, results: PushRefResult[]) => void | Promise<void>;
  /** every ref's outcome, whatever moved (for the request's log line), before onPush */
  onResults?: (results: PushRefResult[]) => void;
  /**
   * Protected refs for this push (`protect` rules): a ref for which this
   * answers true may be created and fast-forwarded, never rewound or
   * deleted (`ng <ref> protected ref`). See receive/protect.ts, AGit too.
   */
  protectedRef?: (ref: string) => boolean;
  /** extra environment for hooks of this request */
  hookEnv?: Record<string, string>;
  /** admission control: wait for an ingest slot before the pack is read */
  acquireIngestSlot?: (writer: PacketWriter, sideband: boolean) => Promise<() => void>;
  /** false: no repository hook runs for this request (default true) */
  runHooks?: boolean;
  /** a cap on the pack (bytes) on top of receive.maxInputSize: the smaller one applies */
  maxInputSize?: number;
}

export interface ReceivePackResult {
  protocol: 0 | 1 | 2;
  command: 'advertise' | 'receive-pack';
  commands: number;
  updated: number;
  rejected: number;
  unpackError?: string;
  /** objects in the pack header */
  objects?: number;
  writes: number;
  bytes: number;
}

function sourceIterator(input: Readable | AsyncIterable<Buffer> | Buffer): AsyncIterator<Buffer> {
  if (Buffer.isBuffer(input)) {
    const b = input;
    return (async function* () { yield b; })();
  }
  return (input as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
}

/** Serve one receive-pack conversation. */
export async function receivePack(o: ReceivePackOptions): Promise<ReceivePackResult> {
  const env = o.env ?? process.env;
  const trace = new Trace2(env, version());
  if (trace.enabled) { trace.versionEv(); trace.startEv(o.argv ?? ['receive-pack', o.directory]); }
  const loc = locateRepository(o.directory, o.strict ?? false);
  // enter_repo() without ENTER_REPO_ANY_OWNER_OK: another user's repository is refused before its config is read
  assertOwnership({ path: loc.usedPath ?? loc.gitDir, gitFile: loc.gitFile }, env, (m) => {
    const b = Buffer.from(`warning: ${m}\n`);
    if (o.stderr) o.stderr(b); else { try { process.stderr.write(b); } catch { /* closed */ } }
  });
  const repo = new Repository(loc.gitDir, loc.commonDir, env);
  const conv = new Conversation(repo, o, env, trace, loc.bare);
  try {
    const r = await conv.run();
    if (trace.enabled) trace.exitEv(0);
    return r;
  } catch (e) {
    if (trace.enabled) trace.exitEv(e instanceof GitwireError ? e.exitCode : 128);
    throw e;
  } finally {
    conv.cleanup();
    repo.close();
  }
}

const NO_GIT = 'pushing needs git on the server (git index-pack receives the pack), and the server has no git on its PATH';

class Conversation {
  readonly cfg: ReceiveConfig;
  readonly writer: PacketWriter;
  readonly stderr: (b: Buffer) => void;
  /** when this conversation began (receive.updateServerInfo orders the packs made since after the others) */
  private readonly startedAt = Date.now();
  diag!: Diag;
  caps!: ClientCaps;
  commands: Command[] = [];
  pushOptions: string[] = [];
  quarantine: Quarantine | undefined;
  keepFile: string | undefined;
  shallowFile: string | undefined;
  shallowUpdate: boolean;
  /** client shallow commits we did not have (git's "theirs") */
  theirs: Buffer[] = [];
  /** per command index: theirs reached by its new tip */
  shallowRefs = new Map<Command, Buffer[]>();
  headName: string | undefined;
  objects: number | undefined;
  readonly hooks: Hooks;
  readonly workTree: string | undefined;

  constructor(readonly repo: Repository, readonly o: ReceivePackOptions, readonly env: NodeJS.ProcessEnv, readonly trace: Trace2, readonly bareLayout: boolean) {
    this.writer = new PacketWriter(o.output);
    this.stderr = o.stderr ?? ((b) => { try { process.stderr.write(b); } catch { /* closed */ } });
    this.cfg = readReceiveConfig(repo, (m) => this.stderr(Buffer.from(m)));
    this.shallowUpdate = this.cfg.shallowUpdate;
    const bareCfg = repo.config.get('core.bare');
    const bare = bareCfg === undefined ? this.bareLayout : this.cfg.bare;
    this.workTree = bare ? undefined : (basename(repo.gitDir) === '.git' ? dirname(repo.gitDir) : undefined);
    this.cfg.bare = bare;
    this.hooks = new Hooks(repo, this.workTree);
    if (o.runHooks === false) this.hooks.find = () => undefined;
  }

  cleanup(): void {
    this.diag?.stopKeepalive();
    this.quarantine?.destroy();
    if (this.shallowFile) { try { unlinkSync(this.shallowFile); } catch { /* gone */ } }
    if (this.keepFile) { try { unlinkSync(this.keepFile); } catch { /* gone */ } this.keepFile = undefined; }
  }

  private get hexLen(): number { return this.repo.hexLen; }
  private hex(b: Buffer): string { return b.toString('hex'); }

  async run(): Promise<ReceivePackResult> {
    const o = this.o, w = this.writer;
    // index-pack of a git older than 2.45 cannot open a reftable repository: refused before anything is sent
    const refusal = await reftableRefusal(refFormatOf(this.repo.config), this.env, 'push');
    // fetches need no git (the native pack producer); a push still runs git's index-pack: said before anything is sent
    const noGit = refusal ? undefined : await installedGitText(this.env) === undefined ? NO_GIT : undefined;
    if (refusal || noGit) {
      // receive-pack's errors are not the wire's (git's die() goes to stderr): this one the client must see
      const e = refusal ? new GitwireError('GW_UNSUPPORTED_REPO', refusal, { wire: refusal }) : new GitwireError('GW_NO_GIT', noGit!, { wire: noGit! });
      try { e.toWire(w); w.push(); } catch { /* the client is gone */ }
      throw e;
    }
    if (o.announceService) w.announce('git-receive-pack');
    const proto = protocolVersion(this.env.GIT_PROTOCOL);
    const stats = (command: 'advertise' | 'receive-pack', extra: Partial<ReceivePackResult> = {}): ReceivePackResult => ({
      protocol: proto, command, commands: this.commands.length,
      updated: this.commands.filter((c) => !c.error).length, rejected: this.commands.filter((c) => c.error).length,
      writes: o.output.stats.writes, bytes: o.output.stats.bytes, ...extra,
    });
    if (proto === 1 && (o.advertiseRefs || !o.statelessRpc)) w.data('version 1\n');
    if (this.cfg.certNonceSeed !== undefined) this.nonce = certNonce(o.directory, Math.floor(Date.now() / 1000), this.cfg.certNonceSeed, this.repo.format);
    if (o.advertiseRefs || !o.statelessRpc) {
      try {
        const caps = receiveCapabilities(this.repo, this.cfg, this.trace.sid, this.nonce);
        await advertiseReceiveRefs(this.repo, w, this.cfg, caps);
      } catch (e) {
        // refs that cannot be read: ERR naming the repository, never an advertisement that just stops
        if (!(e instanceof GitwireError && e.code === 'GW_REFS_CORRUPT' && e.wire === undefined)) throw e;
        const said = refsUnreadable(e, o.repository ?? o.directory);
        try { said.toWire(w); w.push(); } catch { /* the client is gone */ }
        throw said;
      }
    }
    if (o.advertiseRefs) return stats('advertise');

    const it = sourceIterator(o.input);
    const reader = new PktReader({ [Symbol.asyncIterator]: () => it }, {
      chomp: true, dieOnErr: true, beforeWait: () => w.push(), timeoutMs: o.timeout ? o.timeout * 1000 : undefined,
      // the commands and push options, as every request between two flushes (the pack after them is not pkt-lines)
      maxBytesPerFlush: resolveLimits(o.limits).maxRequestBytes,
    });
    const req = await readPushRequest(reader, {
      hexLen: this.hexLen, format: this.repo.format,
      advertiseAtomic: this.cfg.advertiseAtomic, advertisePushOptions: this.cfg.advertisePushOptions,
    });
    this.caps = req.caps;
    this.commands = req.commands;
    if (req.caps.sessionId) this.trace.data('transfer', 'client-sid', req.caps.sessionId);
    if (req.caps.sideband) w.sideband = 'side-band-64k';
    this.diag = new Diag(w, req.caps.sideband, this.stderr, this.cfg.keepalive);
    if (this.commands.length === 0) return stats('receive-pack');
    if (req.caps.pushOptions) this.pushOptions = await readPushOptions(reader);
    this.pushCert = req.pushCert;
    if (req.pushCert && !certPushOptionsMatch(req.pushCert, this.pushOptions)) for (const c of this.commands) c.error = 'inconsistent push options';

    await this.prepareShallow(req.shallow);
    let unpackError: string | undefined;
    if (!this.commands.every((c) => isNullOid(c.new))) {
      unpackError = await this.unpack(reader.remainder(), it);
      if (!unpackError) await this.updateShallowInfo();
    }
    this.diag.startKeepalive();
    await this.executeCommands(unpackError);
    if (this.keepFile) { try { unlinkSync(this.keepFile); } catch { /* gone */ } this.keepFile = undefined; }
    this.quarantine?.destroy();
    this.diag.stopKeepalive();
    await this.report(unpackError);
    const ok = this.commands.filter((c) => !c.error && !c.didNotExist);
    await this.runReceiveHook('post-receive', ok);
    await this.runPostUpdate(ok);
    if (o.onPush || o.onResults) {
      const results = this.results();
      o.onResults?.(results);
      if (o.onPush && results.some((r) => r.moved)) await o.onPush(this.info(), results);
    }
    // receive.autogc: whenever there were commands, after the hooks, before the final flush
    if (this.cfg.autoGc) {
      await runAutoMaintenance({ repo: this.repo, env: this.childEnv(false), onOutput: (b) => this.diag.feed(b), backedUp: this.hookIo.backedUp });
    }
    if (this.cfg.updateServerInfo) for (const l of await updateServerInfo(this.repo, this.startedAt)) this.stderr(Buffer.from(`${l}\n`));
    this.diag.end();
    if (req.caps.sideband) { try { w.flush(); } catch { /* client gone after its report */ } }
    return stats('receive-pack', { unpackError, objects: this.objects });
  }

  /** every ref's outcome; a proc-receive command's reports stand for it (feed_receive_hook_cb) */
  private results(): PushRefResult[] {
    const out: PushRefResult[] = [];
    for (const c of this.commands) {
      const one = (ref: string, old: Buffer, nu: Buffer) => out.push({
        ref, oldHex: this.hex(old), newHex: this.hex(nu), ok: !c.error, reason: c.error,
        moved: !c.error && !c.didNotExist && !old.equals(nu),
      });
      if (!c.error && c.reports?.length) for (const r of c.reports) one(r.refname ?? c.ref, r.oldOid ?? c.old, r.newOid ?? c.new);
      else one(c.ref, c.old, c.new);
    }
    return out;
  }

  private info(): PushInfo {
    return {
      directory: this.o.directory, gitDir: this.repo.gitDir, pushOptions: this.pushOptions, atomic: this.caps.atomic,
      quarantinePath: this.quarantine?.path, quarantineEnv: this.quarantine?.env(this.env),
    };
  }

  // ---- shallow -------------------------------------------------------

  /** prepare_shallow_info(): split the client's shallow list into ours (we have it) and theirs. */
  private async prepareShallow(shallow: Buffer[]): Promise<void> {
    if (shallow.length === 0) { this.shallowUpdate = false; return; }
    const theirs: Buffer[] = [];
    let ours = 0;
    // a lookup each (a missing one stats loose objects): 190,000 lines in slices; the
    // packs are looked for again after the first miss only, not after every one
    const slicer = new Slicer();
    for (const s of shallow) {
      const tick = slicer.tick();
      if (tick) await tick;
      if (this.repo.odb.has(s, { quick: theirs.length > 0 })) ours++; else theirs.push(s);
    }
    this.theirs = theirs;
    if (!ours && !theirs.length) { this.shallowUpdate = false; return; }
    // setup_temporary_shallow(): our grafts plus the client's
    const lines = new Set([...shallowGrafts(this.repo), ...shallow.map((s) => s.toString('hex'))]);
    const file = join(this.repo.gitDir, `shallow_${randomBytes(4).toString('hex')}`);
    writeFileSync(file, [...lines].map((l) => `${l}\n`).join(''), { flag: 'wx' });
    this.shallowFile = file;
  }

  /** update_shallow_info(): refs whose new history reaches a new shallow root. */
  private async updateShallowInfo(): Promise<void> {
    if (!this.quarantine || !this.theirs.length) { this.shallowUpdate = this.shallowUpdate && !!this.shallowFile; return; }
    const q = new ObjectDatabase(this.quarantine.path, this.repo.hashLen, []);
    try {
      // the quarantine was just written and scanned: quick lookups, in slices
      const slicer = new Slicer();
      const theirs: Buffer[] = [];
      for (const t of this.theirs) {
        const tick = slicer.tick();
        if (tick) await tick;
        if (q.has(t, { quick: true })) theirs.push(t);
      }
      if (!theirs.length) { this.shallowUpdate = false; return; }
      const theirSet = new Set(theirs.map((t) => t.toString('latin1')));
      for (const cmd of this.commands) {
        if (isNullOid(cmd.new)) continue;
        const reached = shallowRootsReached(q, theirSet, cmd.new);
        if (!reached.length) continue;
        if (this.shallowUpdate) this.shallowRefs.set(cmd, reached);
        else { cmd.error = 'shallow update not allowed'; cmd.skipUpdate = true; }
      }
    } finally { q.close(); }
  }

  // ---- pack ----------------------------------------------------------

  private async unpack(rest: Buffer, it: AsyncIterator<Buffer>): Promise<string | undefined> {
    let buf = rest;
    const fdSource = this.o.input instanceof FdPktSource && rest.length === 0 ? this.o.input : undefined;
    if (fdSource) buf = fdSource.readExact(12);
    while (!fdSource && buf.length < 12) {
      let r: IteratorResult<Buffer>;
      try { r = await it.next(); } catch { r = { done: true, value: undefined }; }
      if (r.done) break;
      buf = buf.length ? Buffer.concat([buf, r.value]) : Buffer.from(r.value);
    }
    const hdr = parsePackHeader(buf);
    if (typeof hdr === 'string') return hdr;
    this.objects = hdr.entries;
    let release: (() => void) | undefined;
    if (this.o.acquireIngestSlot) release = await this.o.acquireIngestSlot(this.writer, this.caps.sideband);
    try {
      try {
        this.quarantine = Quarantine.create(this.env.GIT_OBJECT_DIRECTORY ?? join(this.repo.commonDir, 'objects'));
      } catch {
        return 'unable to create temporary object directory';
      }
      if (this.caps.sideband) this.diag.keepaliveAfterNul();
      const res = await ingestPack({
        gitDir: this.repo.gitDir,
        env: this.childEnv(true),
        header: hdr,
        unpackLimit: this.cfg.unpackLimit,
        quiet: this.caps.quiet || !!this.o.quiet,
        strict: this.cfg.fsckObjects ? this.cfg.fsckMsgTypes : undefined,
        maxInputSize: this.o.maxInputSize && (!this.cfg.maxInputSize || this.o.maxInputSize < this.cfg.maxInputSize) ? this.o.maxInputSize : this.cfg.maxInputSize,
        sideband: this.caps.sideband,
        rejectThin: this.o.rejectThin,
        shallowFile: this.shallowFile,
        first: buf.subarray(12),
        source: it,
        stdinFd: fdSource?.fd,
        onStderr: (b) => this.diag.feed(b),
      });
      this.diag.end();
      if (res.keep) this.keepFile = join(this.repo.commonDir, 'objects', 'pack', `pack-${res.keep}.keep`);
      return res.error;
    } finally {
      release?.();
    }
  }

  /** environment for children: GIT_DIR, the quarantine when asked */
  private childEnv(quarantine: boolean, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const e: NodeJS.ProcessEnv = { ...this.env, GIT_DIR: this.repo.gitDir, ...extra };
    if (quarantine && this.quarantine) Object.assign(e, this.quarantine.env(this.env));
    return e;
  }

  // ---- commands ------------------------------------------------------

  private async executeCommands(unpackError: string | undefined): Promise<void> {
    const cmds = this.commands;
    if (unpackError) { for (const c of cmds) c.error = 'unpacker error'; return; }
    if (!this.o.skipConnectivityCheck) {
      const tips = (c: Command) => !isNullOid(c.new) && !c.skipUpdate && !c.error;
      const opts = {
        gitDir: this.repo.gitDir, env: this.childEnv(true), progress: this.caps.sideband && !this.caps.quiet && !this.o.quiet,
        excludeHidden: this.cfg.hideRefs.empty ? undefined : 'receive', shallowFile: this.shallowUpdate ? this.shallowFile : undefined,
        onStderr: this.caps.sideband ? (b: Buffer) => this.diag.feed(b) : this.stderr,
      };
      const all = cmds.filter(tips);
      if (!(await checkConnected(all.map((c) => c.new), opts))) {
        this.diag.end();
        for (const c of cmds) {
          if (isNullOid(c.new)) continue;
          // git runs these with its own stderr, not the sideband
          if (!(await checkConnected([c.new], { ...opts, progress: false, onStderr: this.stderr }))) c.error = 'missing necessary objects';
        }
      }
      this.diag.end();
    }
    await this.rejectHidden();
    const runProc = await this.scheduleProcReceive();
    const preOk = await this.runReceiveHook('pre-receive', cmds, true);
    if (preOk !== 0) {
      for (const c of cmds) if (!c.error) c.error = 'pre-receive hook declined';
      return;
    }
    if (this.o.protectedRef && await this.refuseProtected(this.o.protectedRef)) {
      if (this.caps.atomic) { for (const c of cmds) if (!c.error) c.error = 'atomic push failure'; return; }
    }
    if (this.o.authorizePush) {
      const pending = cmds.filter((c) => !c.error);
      let d: PushDecision | void;
      // the quarantined objects and the repository's, as the callback sees them
      const qrepo = new Repository(this.repo.gitDir, this.repo.commonDir, { ...this.env, ...this.quarantine?.env(this.env) });
      try {
        const kind = async (c: Command): Promise<PushUpdate['kind']> => {
          if (isNullOid(c.new)) return 'delete';
          if (isNullOid(c.old)) return 'create';
          return await isAncestor(qrepo, c.old, c.new) ? 'update' : 'force';
        };
        const updates: PushUpdate[] = [];
        for (const c of pending) updates.push({ ref: c.ref, oldHex: this.hex(c.old), newHex: this.hex(c.new), kind: await kind(c) });
        d = await this.o.authorizePush({ ...this.info(), objects: new ObjectService(qrepo) }, updates);
      } catch (e) {
        d = { rejectAll: e instanceof Error && e.message ? e.message : 'push declined' };
      } finally {
        qrepo.close();
      }
      if (d?.rejectAll) { for (const c of cmds) if (!c.error) c.error = d.rejectAll; return; }
      if (d?.reject) for (const c of pending) { const r = d.reject[c.ref]; if (r) c.error = r; }
      if (this.caps.atomic && cmds.some((c) => c.error)) { for (const c of cmds) if (!c.error) c.error = 'atomic push failure'; return; }
    }
    if (cmds.every((c) => c.error)) return;
    try {
      this.quarantine?.migrate();
    } catch {
      for (const c of cmds) if (!c.error) c.error = 'unable to migrate objects to permanent storage';
      return;
    }
    this.quarantine = undefined;
    await this.checkAliasedUpdates();
    const head = this.repo.refs.resolve('HEAD');
    this.headName = head?.target !== 'HEAD' ? head?.target : undefined;
    if (runProc) await this.procReceive();
    if (this.caps.atomic) await this.executeAtomic();
    else await this.executeNonAtomic();
  }

  /** receive/protect.ts, with the quarantined objects in view; how many commands it refused */
  private async refuseProtected(isProtected: (ref: string) => boolean): Promise<number> {
    const qrepo = new Repository(this.repo.gitDir, this.repo.commonDir, { ...this.env, ...this.quarantine?.env(this.env) });
    const refs = this.repo.refs.pointReader();
    try {
      return await refuseProtected(this.commands, { isProtected, objects: qrepo, refs, namespace: this.repo.namespace, error: (m) => this.diag.error(m) });
    } finally {
      refs.close();
      qrepo.close();
    }
  }

  private async rejectHidden(): Promise<void> {
    const hide = this.cfg.hideRefs;
    if (hide.empty) return;
    const ns = this.repo.namespace;
    await forEachSliced(this.commands, (c) => {
      if (c.error) return;
      if (!hide.isHidden(encodeName(c.ref), encodeName(ns + c.ref))) return;
      c.error = isNullOid(c.new) ? 'deny deleting a hidden ref' : 'deny updating a hidden ref';
    });
  }

  /** Mark the commands proc-receive handles (receive.procReceiveRefs). */
  private async scheduleProcReceive(): Promise<boolean> {
    const pats = this.cfg.procReceiveRefs;
    if (!pats.length) return false;
    let any = false;
    await forEachSliced(this.commands, (c) => {
      if (c.error || c.skipUpdate) return;
      if (procReceiveMatches(pats, c)) { c.procReceive = PROC_SCHEDULED; any = true; }
    });
    return any;
  }

  /** run_proc_receive_hook(), and what its failure means for the commands */
  private async procReceive(): Promise<void> {
    const hook = this.hooks.find('proc-receive');
    let rc = -1;
    if (!hook) this.diag.error("cannot find hook 'proc-receive'");
    else {
      rc = await runProcReceive({
        hook, cwd: this.repo.gitDir, env: this.hookEnv(false, false), commands: this.commands,
        pushOptions: this.pushOptions, atomic: this.caps.atomic, usePushOptions: this.caps.pushOptions,
        hexLen: this.hexLen, onStderr: (b) => this.diag.feed(b),
        backedUp: this.hookIo.backedUp,
        error: (m) => this.diag.error(m), endOutput: () => this.diag.end(),
      });
    }
    if (rc === 0) return;
    for (const c of this.commands) {
      if (!c.error && !((c.procReceive ?? 0) & PROC_RETURNED) && (c.procReceive || this.caps.atomic)) c.error = 'fail to run proc-receive hook';
    }
  }

  private async checkAliasedUpdates(): Promise<void> {
    const ns = this.repo.namespace;
    const byName = new Map(this.commands.map((c) => [c.ref, c]));
    const abbrev = (b: Buffer) => b.toString('hex').slice(0, 7);
    // a read per command: 50,000 of them in slices (reftable: one view of the stack for all of them)
    const refs = this.repo.refs.pointReader();
    try {
      await this.checkAliased(refs, ns, byName, abbrev);
    } finally { refs.close(); }
  }

  private async checkAliased(refs: PointReader, ns: string, byName: Map<string, Command>, abbrev: (b: Buffer) => string): Promise<void> {
    await forEachSliced(this.commands, (c) => {
      if (c.error) return;
      const raw = refs.readRaw(ns + c.ref);
      if (!raw?.symref) return;
      const t = refs.resolve(ns + c.ref);
      if (!t) { this.diag.error(`refusing update to broken symref '${c.ref}'`); c.skipUpdate = true; c.error = 'broken symref'; return; }
      const dst = ns && t.target.startsWith(ns) ? t.target.slice(ns.length) : t.target;
      const d = byName.get(dst);
      if (!d) return;
      c.skipUpdate = true;
      if (c.old.equals(d.old) && c.new.equals(d.new)) return;
      d.skipUpdate = true;
      this.diag.error(`refusing inconsistent update between symref '${c.ref}' (${abbrev(c.old)}..${abbrev(c.new)}) and its target '${d.ref}' (${abbrev(d.old)}..${abbrev(d.new)})`);
      c.error = d.error = 'inconsistent aliased update';
    });
  }

  /** the worktree whose HEAD is `name` (find_shared_symref), worktrees read once per push (not per command) */
  private checkedOut(name: string): Worktree | undefined {
    const wts = this.worktrees ??= listWorktrees(this.repo.commonDir, this.repo.refs.readRaw('HEAD')?.symref, this.cfg.bare, this.repo.refs.format === 'reftable' ? this.repo.hashLen : undefined);
    const main = wts[0]!;
    if (main.head === this.repo.namespace + name) return main;
    return worktreeOf(wts, name) ?? worktreeOf(wts, this.repo.namespace + name);
  }

  private worktrees?: Worktree[];

  /**
   * An object's type, each id looked up once per push (as git's parsed-object
   * table has it once read): the existence check of a command, the
   * transaction's type check and its peel test are one odb lookup, not three
   * (each a stat or an open of a loose object). Only objects found are kept:
   * objects are never changed once written, and one missing now is looked
   * for again.
   */
  private objectType(oid: Buffer): ObjType | undefined {
    const k = oid.toString('latin1');
    const known = this.objTypes.get(k);
    if (known !== undefined) return known;
    const t = this.repo.odb.info(oid)?.type;
    if (t !== undefined) this.objTypes.set(k, t);
    return t;
  }

  private readonly objTypes = new Map<string, ObjType>();

  /** find_hook("update"), once per push (not a stat and an access per command) */
  private updateHook(): string | undefined {
    if (this.updateHookPath === null) this.updateHookPath = this.hooks.find('update');
    return this.updateHookPath;
  }

  private updateHookPath: string | undefined | null = null;

  /** update(): policy and hook checks, then the queued edit (or an error string). */
  private async update(c: Command, edits: Array<{ cmd: Command; edit: RefEdit }>): Promise<string | undefined> {
    const name = c.ref;
    const del = isNullOid(c.new);
    if (!name.startsWith('refs/') || !checkRefnameFormat(name.slice(5), { allowOnelevel: del })) {
      this.diag.error(`refusing to update funny ref '${name}' remotely`);
      return 'funny refname';
    }
    const full = this.repo.namespace + name;
    const wt = this.checkedOut(name);
    let updateInstead = false;
    if (wt && !wt.bare) {
      switch (this.cfg.denyCurrentBranch) {
        case 'ignore': break;
        case 'warn': this.diag.warning('updating the current branch'); break;
        case 'updateInstead': updateInstead = true; break; // after the other checks
        default:
          this.diag.error(`refusing to update checked out branch: ${name}`);
          if (this.cfg.denyCurrentBranch === 'unconfigured') this.diag.error(refusalDeny);
          return 'branch is currently checked out';
      }
    }
    if (!del && this.objectType(c.new) === undefined) {
      this.stderr(Buffer.from(`error: unpack should have generated ${this.hex(c.new)}, but I can't find it!\n`));
      return 'bad pack';
    }
    if (!isNullOid(c.old) && del) {
      if (this.cfg.denyDeletes && name.startsWith('refs/heads/')) {
        this.diag.error(`denying ref deletion for ${name}`);
        return 'deletion prohibited';
      }
      if (wt || (this.headName && full === this.headName)) {
        switch (this.cfg.denyDeleteCurrent) {
          case 'ignore': break;
          case 'warn': this.diag.warning('deleting the current branch'); break;
          default:
            if (this.cfg.denyDeleteCurrent === 'unconfigured') this.diag.error(refusalDeleteCurrent);
            this.diag.error(`refusing to delete the current branch: ${name}`);
            return 'deletion of the current branch prohibited';
        }
      }
    }
    if (this.cfg.denyNonFastForwards && !del && !isNullOid(c.old) && name.startsWith('refs/heads/')) {
      if (this.objectType(c.old) !== ObjType.Commit || this.objectType(c.new) !== ObjType.Commit) {
        this.stderr(Buffer.from(`error: bad sha1 objects for ${name}\n`));
        return 'bad ref';
      }
      if (!await isAncestor(this.repo, c.old, c.new)) {
        this.diag.error(`denying non-fast-forward ${name} (you should pull first)`);
        return 'non-fast-forward';
      }
    }
    // the environment is built only when there is a hook to run (a copy of it per command was 4.5 s of 50,000)
    const hookRc = !this.updateHook() ? 0 : await this.hooks.run('update', {
      args: [name, this.hex(c.old), this.hex(c.new)],
      env: this.hookEnv(false, false),
      ...this.hookIo,
    });
    this.diag.end();
    if (hookRc !== 0) {
      this.diag.error(`hook declined to update ${name}`);
      return 'hook declined';
    }
    if (updateInstead && wt) {
      const born = !!wt.head && !!this.repo.refs.resolve(wt.head)?.hex;
      const err = await updateWorktree({
        worktree: wt, newHex: this.hex(c.new), headBorn: born, emptyTreeHex: this.repo.format === 'sha256' ? EMPTY_TREE_SHA256 : EMPTY_TREE_SHA1,
        env: this.env, cwd: this.repo.gitDir, hooks: this.hooks, stderr: this.stderr,
      });
      if (err) return err;
    }
    if (del) {
      let expectOld: Buffer | undefined = c.old;
      if (this.objectType(c.old) === undefined) {
        expectOld = undefined;
        if (this.repo.refs.resolve(full)?.hex) this.diag.warning('allowing deletion of corrupt ref');
        else { this.diag.warning('deleting a non-existent ref'); c.didNotExist = true; }
      }
      edits.push({ cmd: c, edit: { name: full, change: { kind: 'delete' }, expected: expectOld ? { kind: 'must-exist-and-match', oid: expectOld } : { kind: 'any' }, message: 'push' } });
      return undefined;
    }
    const extra = this.shallowRefs.get(c);
    if (extra) {
      if (!(await checkConnected([c.new], { gitDir: this.repo.gitDir, env: this.childEnv(false), progress: false, shallowFile: this.shallowFile }))) return 'shallow error';
      commitShallow(this.repo, extra);
    }
    edits.push({ cmd: c, edit: {
      name: full, change: { kind: 'update', new: c.new },
      expected: isNullOid(c.old) ? { kind: 'must-not-exist' } : { kind: 'must-exist-and-match', oid: c.old },
      message: 'push',
    } });
    return undefined;
  }

  /**
   * Where every hook's output goes: to the client (band 2, or stderr), and
   * while the client is not reading it waits in the hook's pipe; a hook that
   * cannot start says so on this process's stderr, as git's child does.
   */
  private get hookIo() {
    return {
      onOutput: (b: Buffer) => this.diag.feed(b),
      backedUp: (): Promise<void> | undefined => (this.diag.writer.backedUp ? this.diag.writer.waitDrained() : undefined),
      onStartError: (b: Buffer) => this.stderr(b),
    };
  }

  private transaction(allowFailure: boolean): RefUpdate {
    const bare = this.cfg.bare;
    return this.repo.refs.transaction({
      allowFailure,
      lockTimeoutMs: this.cfg.lockTimeoutMs,
      packedLockTimeoutMs: this.cfg.packedLockTimeoutMs,
      reflogs: new Reflogs(this.repo.commonDir, this.repo.gitDir, logAllRefUpdates(this.repo.config), bare),
      ident: committerIdent(this.repo.config, this.env),
      typeOf: (oid) => {
        const t = this.objectType(oid);
        if (t === undefined) return undefined;
        return t === ObjType.Commit ? 'commit' : t === ObjType.Tag ? 'tag' : t === ObjType.Tree ? 'tree' : 'blob';
      },
      peel: (oid) => this.repo.peel(oid),
      displayRoot: '.',
      hook: this.hooks.find('reference-transaction') ? (state, input) => this.runRefTxHook(state, input) : undefined,
    });
  }

  /**
   * reference-transaction: the state as its argument, the updates on stdin
   * (repo/refs/hook.ts). git runs it from the refs layer, not as one of
   * receive-pack's own hooks: its output goes to receive-pack's stderr as
   * it is, never into the sideband.
   */
  private async runRefTxHook(state: string, input: string): Promise<number> {
    return this.hooks.run('reference-transaction', {
      args: [state], stdin: encodeName(input), env: this.hookEnv(false, false),
      onOutput: (b) => this.stderr(b), onStartError: (b) => this.stderr(b),
    });
  }

  /**
   * The reference-transaction hook refused: git's receive-pack dies there
   * (the message on its stderr, no report, the client sees the connection
   * drop). What was already sent to the client is pushed out first.
   */
  private die(e: HookAbortError): never {
    this.diag.end();
    try { this.writer.push(); } catch { /* client gone */ }
    throw e;
  }

  private async executeNonAtomic(): Promise<void> {
    const slicer = new Slicer();
    for (const phase of ['deletions', 'others'] as const) {
      const edits: Array<{ cmd: Command; edit: RefEdit }> = [];
      for (const c of this.commands) {
        const tick = slicer.tick();
        if (tick) await tick;
        if (c.error || c.skipUpdate || c.procReceive) continue;
        if ((phase === 'deletions') !== isNullOid(c.new)) continue;
        c.error = await this.update(c, edits);
      }
      if (!edits.length) continue;
      const tx = this.transaction(true);
      try {
        await tx.prepare(edits.map((e) => e.edit));
        await tx.commit();
      } catch (e) {
        if (e instanceof HookAbortError) this.die(e);
        this.diag.error(e instanceof Error ? e.message : String(e));
        for (const c of this.commands) c.error = 'failed to update refs';
        continue;
      }
      for (const [i, err] of tx.rejected) {
        this.diag.error(err.message);
        edits[i]!.cmd.error = txErrorReason(err.kind);
      }
    }
  }

  private async executeAtomic(): Promise<void> {
    const edits: Array<{ cmd: Command; edit: RefEdit }> = [];
    let failed = false;
    const slicer = new Slicer();
    for (const c of this.commands) {
      const tick = slicer.tick();
      if (tick) await tick;
      if (c.error || c.skipUpdate || c.procReceive) continue;
      c.error = await this.update(c, edits);
      if (c.error) { failed = true; break; }
    }
    let reason = 'atomic push failure';
    if (!failed && edits.length) {
      const tx = this.transaction(false);
      try {
        await tx.prepare(edits.map((e) => e.edit));
        await tx.commit();
      } catch (e) {
        if (e instanceof HookAbortError) this.die(e);
        this.diag.error(e instanceof Error ? e.message : String(e));
        failed = true;
        reason = 'atomic transaction failed';
      }
    }
    if (failed) for (const c of this.commands) if (!c.error) c.error = reason;
  }

  // ---- hooks ---------------------------------------------------------

  /** the nonce this conversation gave out (receive.certNonceSeed) */
  nonce: string | undefined;
  pushCert: string | undefined;
  private certEnv: Promise<Record<string, string>> | undefined;

  /** prepare_push_cert_sha1(): once per push, the certificate stored and checked, as GIT_PUSH_CERT* */
  private async pushCertEnv(): Promise<Record<string, string>> {
    if (!this.certEnv) {
      this.certEnv = pushCertHookEnv({
        repo: this.repo, cert: this.pushCert, env: this.env, nonce: this.nonce, statelessRpc: !!this.o.statelessRpc,
        serviceDir: this.o.directory, seed: this.cfg.certNonceSeed, slopLimit: this.cfg.certNonceSlop, warn: (m) => this.stderr(Buffer.from(m)),
      });
    }
    return this.certEnv;
  }

  private hookEnv(quarantine: boolean, pushOptions: boolean): NodeJS.ProcessEnv {
    const e: NodeJS.ProcessEnv = { ...this.env, ...this.o.hookEnv, GIT_DIR: '.' };
    delete e.GIT_PUSH_OPTION_COUNT;
    if (pushOptions) {
      this.pushOptions.forEach((v, i) => { e[`GIT_PUSH_OPTION_${i}`] = v; });
      e.GIT_PUSH_OPTION_COUNT = String(this.pushOptions.length);
    }
    if (quarantine && this.quarantine) Object.assign(e, this.quarantine.env(this.env));
    return e;
  }

  /** pre-receive / post-receive: one `<old> <new> <ref>` line per command on stdin */
  private async runReceiveHook(name: 'pre-receive' | 'post-receive', cmds: Command[], all = false): Promise<number> {
    if (!this.hooks.find(name)) return 0;
    const list = all ? cmds : cmds.filter((c) => !c.error && !c.didNotExist);
    if (!list.length) return 0;
    // a command proc-receive reported on stands for the refs it reported (feed_receive_hook_cb)
    const line = (c: Command): string => !c.reports?.length ? `${this.hex(c.old)} ${this.hex(c.new)} ${c.ref}\n`
      : c.reports.map((r) => `${this.hex(r.oldOid ?? c.old)} ${this.hex(r.newOid ?? c.new)} ${r.refname ?? c.ref}\n`).join('');
    const stdin = encodeName(list.map(line).join(''));
    const env = { ...this.hookEnv(name === 'pre-receive', true), ...await this.pushCertEnv() };
    const rc = await this.hooks.run(name, { stdin, env, ...this.hookIo });
    this.diag.end();
    return rc;
  }

  private async runPostUpdate(ok: Command[]): Promise<void> {
    if (!ok.length || !this.hooks.find('post-update')) return;
    await this.hooks.run('post-update', { args: ok.map((c) => c.ref), env: this.hookEnv(false, false), ...this.hookIo });
    this.diag.end();
  }

  // ---- report --------------------------------------------------------

  /** report()/report_v2(): the whole report in one write (sideband-framed when asked). */
  private async report(unpackError: string | undefined): Promise<void> {
    if (!this.caps.reportStatus && !this.caps.reportStatusV2) return;
    const buf = await reportBytes(this.commands, unpackError, this.caps.reportStatusV2);
    const w = this.writer;
    try {
      if (this.caps.sideband) w.band(Band.Data, buf);
      else w.raw(buf);
      w.push();
    } catch (e) {
      this.diag.dead = true;
      if (!(e instanceof GitwireError)) throw clientGone(e);
    }
  }
}

