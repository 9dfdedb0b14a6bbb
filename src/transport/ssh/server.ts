/**
 * The built-in SSH server (on ssh2): keys map to users, an `exec` of
 * git-upload-pack / git-receive-pack picks a row of the service table and
 * hands it the channel as byte source and sink; everything else is
 * refused in one line. Auth rules, admission, the pack cache, the
 * repository pool, push hooks and the request log are the ones HTTP and
 * git:// use. Limits (ssh/limits.ts) are checked on the raw socket before
 * any cryptography, so a client stalling in the key exchange or mid-pack
 * holds its own connection only.
 */
import { createServer, type Server, type Socket } from 'node:net';
import ssh2 from 'ssh2';
import { GitwireError } from '../../errors.js';
import { StreamSink, type Sink } from '../../pktline/sink.js';
import { clientAddress, type ProxyTrust } from '../proxy-protocol.js';
import { findService } from '../../protocol/service.js';
import { protocolVersion } from '../../protocol/version.js';
import type { ReceivePackResult } from '../../protocol/receive-pack.js';
import type { Limits } from '../../protocol/limits.js';
import type { Outcome, RequestInfo, RequestLog, ServeHooks } from '../http.js';
import { pushEnv, pushResult, pushServeOptions, type PushLog } from '../http-push.js';
import { STORAGE_REFUSED } from '../paths.js';
import { noteBytesMoved } from '../../util/reclaim.js';
import { admitRequest, serviceEnv } from '../request.js';
import { parseExec, printable, reportSafe } from './exec.js';
import { serveLfsSsh, type LfsExec, type LfsService } from '../../lfs/index.js';
import { repositoryName } from '../paths.js';
import { clientGone } from '../../errors.js';
import { fingerprint as keyFingerprint, type HostKey, type ParsedKey } from './keys.js';
import { addressGroup, sshLimits, type SshLimits } from './limits.js';
import { kexList } from './kex.js';
import { HandshakeRate, UnauthenticatedPool } from './preauth.js';
import { clientId, refusalMessage, refusalOutcome, releaseOnClose, type Closable } from '../limits/index.js';
import { adoptPackets, adoptedPackets, releaseSlabs, slabsOf, type Slabs } from './packets.js';
import { markStalled, PROGRESS_TIMEOUT, ProgressDeadline, stalled, stallReason, watchSocket } from '../limits/progress.js';

/** What `authenticate` is asked about: a public key a client offers. */
export interface SshAuthInfo {
  /** the login name (`git` in `git@host`): not the identity, the key is */
  username: string;
  key: { algo: string; data: Buffer };
  /** `SHA256:…` of the key */
  fingerprint: string;
  remoteAddress?: string;
}

/** SSH's own `authenticate` (by key, below) takes the place of the HTTP one (by request) */
export interface SshOptions extends Omit<ServeHooks, 'authenticate'> {
  /** host keys: what `loadHostKey(file)` returns, a parsed key, or private key text (OpenSSH or PEM) */
  hostKeys: Array<HostKey | ParsedKey | Buffer | string>;
  /** the user a key belongs to, or false: unknown keys are refused */
  authenticate(a: SshAuthInfo): string | false | Promise<string | false>;
  /** connection limits (defaults in DEFAULT_SSH_LIMITS) */
  sshLimits?: Partial<SshLimits>;
  /** key exchange methods offered: a list, or OpenSSH's `+a,b` / `-a,b` against the default (kex.ts; default: the elliptic-curve ones) */
  kex?: string | string[];
  /** per-request limits (protocol/limits.ts), as for HTTP */
  limits?: Partial<Limits>;
  /** the server's name in its identification string (`SSH-2.0-<ident>`) */
  ident?: string;
  /** connections from these balancers open with a PROXY header naming the client (proxy-protocol.ts) */
  proxyProtocol?: ProxyTrust;
  /** Git LFS: `git-lfs-authenticate` and `git-lfs-transfer` (lfs/ssh.ts); refused as unknown commands without it */
  lfs?: LfsService;
  /**
   * Commands other than git's and LFS's (`info`, `repo create NAME`, …:
   * admin/ssh-commands.ts): the answer, or undefined when the command is
   * none of its own (refused as unrecognized). A throw is a generic
   * refusal for the client and the message in the log.
   */
  commands?(req: SshCommandRequest): Promise<SshCommandAnswer | undefined>;
}

/** An exec command given to SshOptions.commands. */
export interface SshCommandRequest {
  user: string;
  fingerprint?: string;
  remoteAddress: string;
  /** the command as the client sent it */
  command: string;
  /** forget a repository this server keeps open (its pool; the fleet, under startServer) */
  forget(dir: string): void;
}

export interface SshCommandAnswer {
  stdout?: string;
  stderr?: string;
  /** the exit status */
  code: number;
  /** the log line's outcome (default `ok` for status 0, else `denied`) */
  outcome?: Outcome;
  /** the repository it was about, for the log */
  repository?: string;
}

/** GIT_PROTOCOL values taken from an `env` request: what git sends (`version=2`, `:`-joined keys) */
const GIT_PROTOCOL_RE = /^[A-Za-z0-9=:._-]{1,256}$/;

interface Conn {
  /** `ip|port`, as ssh2's connection names it */
  id: string;
  socket: Socket;
  address: string;
  /** the address's group for per-address counts (limits.ts: IPv6 per /64) */
  group: string;
  authenticated: boolean;
  user?: string;
  fingerprint?: string;
  failures: number;
  channels: number;
  grace?: NodeJS.Timeout;
  idle?: NodeJS.Timeout;
  /** over the handshake rate: the turn it waits for before ssh2 reads it */
  turn?: NodeJS.Timeout;
  /** parsed client keys of this connection (one parse per key offered) */
  parsed: Map<string, ParsedKey | undefined>;
  /** ssh2's connection object, once the handshake has begun */
  client?: object;
  askedNone?: boolean;
}

/**
 * The smallest SSH packet a client may ask a channel to send: ssh2's
 * channel writer makes no progress at 0 (the process spins, holding every
 * client), and a few bytes a packet would make the server do a whole
 * packet's work per byte. OpenSSH asks for 32 KiB.
 */
const MIN_PACKET_SIZE = 1024;

/**
 * bytes queued on a connection's socket before its channels stop producing.
 * ssh2 writes SSH packets to the socket whatever its backpressure, trusting
 * the client's channel window; a client that opens a large window and does
 * not read would otherwise have the whole pack queued in this process.
 */
export const SOCKET_QUEUE_LIMIT = 4 * 1024 * 1024;

/** A channel's sink: tells the connection it is not idle on each write, and is backed up while the socket is. */
class ChannelSink implements Sink {
  /** the client closed the channel, or the connection is gone */
  private gone = false;
  private readonly goneCbs: Array<() => void> = [];
  private readonly goneP: Promise<void>;
  private wakeGone!: () => void;
  /** `pooled`: the connection's packets come from slabs it uses again (packets.ts), so they leave no garbage to collect */
  constructor(private readonly inner: StreamSink, private readonly socket: Socket, private readonly touch: () => void, private readonly pooled: () => boolean = () => false) {
    this.goneP = new Promise<void>((resolve) => { this.wakeGone = resolve; });
  }
  markGone(): void {
    if (this.gone) return;
    this.gone = true;
    this.wakeGone();
    for (const cb of this.goneCbs.splice(0)) cb();
  }
  get stats() { return this.inner.stats; }
  get backedUp() { return !this.gone && (this.inner.backedUp || this.socketFull); }
  private get socketFull() { return this.socket.writableLength > SOCKET_QUEUE_LIMIT && !this.socket.destroyed; }
  get closed() { return this.gone || this.inner.closed; }
  get retains() { return this.inner.retains; }
  write(buf: Buffer, release?: () => void): void {
    if (this.gone) throw clientGone();
    this.touch();
    // ssh2's own ciphers make a fresh buffer per SSH packet: have them collected as young garbage
    if (!this.pooled()) noteBytesMoved(buf.length);
    this.inner.write(buf, release);
  }
  async drained(): Promise<void> {
    while (this.socketFull && !this.closed) {
      await new Promise<void>((resolve) => {
        const done = () => { this.socket.off('drain', done); this.socket.off('close', done); resolve(); };
        this.socket.on('drain', done);
        this.socket.on('close', done);
        void this.goneP.then(done);
      });
    }
    // a write ssh2 dropped is never called back: the channel's end wakes the wait
    return Promise.race([this.inner.drained(), this.goneP]);
  }
  onClose(cb: () => void): void {
    let called = false;
    const once = () => { if (!called) { called = true; cb(); } };
    if (this.closed) { once(); return; }
    this.goneCbs.push(once);
    this.inner.onClose(once);
  }
}

/** Resolves once everything written to `w` so far has left (an empty write's callback runs after the earlier ones). */
function flushed(w: NodeJS.WritableStream & { writable: boolean }): Promise<void> {
  if (!w.writable) return Promise.resolve();
  return new Promise((resolve) => { try { w.write(Buffer.alloc(0), () => resolve()); } catch { resolve(); } });
}

/**
 * Make the ssh2 layer's many small socket writes (one per SSH packet)
 * leave in one writev per turn of the event loop, and tell the
 * connection's slabs (packets.ts) when a packet cut from one has been
 * written, so the slab can be used again.
 */
function coalesceWrites(socket: Socket, slabs: () => Slabs | undefined): void {
  const write = socket.write.bind(socket) as (...a: unknown[]) => boolean;
  let corked = false;
  const uncork = () => { corked = false; socket.uncork(); };
  socket.write = ((...a: unknown[]) => {
    if (!corked && !socket.destroyed) { corked = true; socket.cork(); process.nextTick(uncork); }
    // ssh2 writes each packet alone, with no callback
    if (a.length === 1 && Buffer.isBuffer(a[0])) {
      const pool = slabs(), slab = pool?.owner(a[0]);
      if (slab) return write(a[0], () => pool!.written(slab));
    }
    return write(...a);
  }) as typeof socket.write;
}

type ServerChannel = ssh2.ServerChannel;

export function createSshServer(opts: SshOptions): Server {
  const limits = sshLimits(opts.sshLimits);
  const sec = (s: number) => Math.min(s * 1000, 2 ** 31 - 1);
  const hostKeys = opts.hostKeys.map((k) => (typeof k === 'string' || Buffer.isBuffer(k) ? k : { key: 'fingerprint' in k && 'file' in k ? k.key : k }));
  if (!hostKeys.length) throw new Error('ssh: no host key');
  const ssh = new ssh2.Server({
    hostKeys: hostKeys as ssh2.ServerConfig['hostKeys'],
    ident: opts.ident ?? 'gitwire',
    // ssh2 has no "off": an interval of ~24 days is one
    keepaliveInterval: limits.keepaliveInterval > 0 ? sec(limits.keepaliveInterval) : 2 ** 31 - 1,
    keepaliveCountMax: limits.keepaliveCountMax,
    algorithms: { kex: kexList(opts.kex) as ssh2.KexAlgorithm[] },
  });
  const conns = new Map<string, Conn>();
  const unauthenticated = new UnauthenticatedPool<Conn>();
  const handshakes = limits.handshakeRate > 0 ? new HandshakeRate(limits.handshakeRate) : undefined;
  const log = (e: Partial<RequestLog> & { outcome: Outcome }) => {
    try { opts.log?.({ transport: 'ssh', bytesOut: 0, writes: 0, durationMs: 0, ...e }); } catch { /* a throwing logger must not take the server down */ }
  };
  const keyOf = (ip: string | undefined, port: number | undefined) => `${ip ?? ''}|${port ?? ''}`;

  const server = createServer({ allowHalfOpen: false, pauseOnConnect: true }, (socket) => {
    socket.on('error', () => { /* the connection's own affair */ });
    // behind a balancer in TCP mode: the client's address from its PROXY header, read before ssh2 sees the socket
    if (!opts.proxyProtocol) return accept(socket, socket.remoteAddress ?? '');
    void clientAddress(socket, opts.proxyProtocol, (reason) => log({ outcome: 'bad-request', remoteAddress: socket.remoteAddress, reason }))
      .then((address) => { if (address !== undefined) accept(socket, address); });
  });
  /** Refuse a new connection before any byte is sent: closed, logged and counted by `outcome`. */
  const refuseNew = (socket: Socket, address: string, outcome: Outcome): void => {
    socket.destroy();
    log({ outcome, remoteAddress: address });
  };
  const accept = (socket: Socket, address: string): void => {
    const group = addressGroup(address);
    if (limits.maxUnauthenticatedPerAddress > 0 && unauthenticated.count(group) >= limits.maxUnauthenticatedPerAddress) return refuseNew(socket, address, 'too-many-unauthenticated');
    const wait = handshakes ? handshakes.admit(group) : 0;
    if (wait < 0) return refuseNew(socket, address, 'handshake-rate');
    if (limits.maxConnections > 0 && conns.size >= limits.maxConnections) {
      // full: an unauthenticated connection makes room (preauth.ts), an authenticated one never does
      const victim = unauthenticated.victim(group);
      if (!victim) { handshakes?.refund(group); return refuseNew(socket, address, 'too-many-connections'); }
      log({ outcome: 'unauthenticated-evicted', remoteAddress: victim.address });
      victim.socket.destroy();
      release(victim);
    }
    const id = keyOf(socket.remoteAddress, socket.remotePort);
    const conn: Conn = { id, socket, address, group, authenticated: false, failures: 0, channels: 0, parsed: new Map() };
    conns.set(id, conn);
    unauthenticated.add(group, conn);
    if (limits.loginGraceTime > 0) {
      conn.grace = setTimeout(() => { log({ outcome: 'login-grace-time', remoteAddress: address }); socket.destroy(); }, sec(limits.loginGraceTime));
    }
    socket.once('close', () => release(conn));
    const start = () => {
      if (socket.destroyed) return;
      coalesceWrites(socket, () => (conn.client ? slabsOf(conn.client) : undefined));
      ssh.injectSocket(socket);
      socket.resume();
    };
    // over the rate: it waits for its turn unread, holding its slot (and may be evicted meanwhile)
    if (wait > 0) conn.turn = setTimeout(start, wait); else start();
  };
  /** A connection's slot is free (closed, or evicted: at once, not when its socket's close comes). */
  const release = (conn: Conn): void => {
    if (conns.get(conn.id) === conn) conns.delete(conn.id);
    if (!conn.authenticated) unauthenticated.remove(conn.group, conn);
    clearTimeout(conn.grace);
    clearTimeout(conn.idle);
    clearTimeout(conn.turn);
  };
  server.on('close', () => ssh.close());
  // closing the listener (a shutdown) closes the connections not yet authenticated: they have nothing
  // to finish, and one silent connection held the shutdown for its whole grace period
  const closeListener = server.close.bind(server);
  server.close = (cb?: (err?: Error) => void) => {
    for (const c of [...conns.values()]) if (!c.authenticated) { c.socket.destroy(); release(c); }
    return closeListener(cb);
  };

  ssh.on('connection', (client, info) => {
    const conn = conns.get(keyOf(info.ip, info.port));
    if (!conn) { client.end(); return; }
    conn.client = client;
    client.on('error', (e: Error & { level?: string }) => {
      // protocol errors end this connection only
      if (e.level === 'client-timeout') log({ outcome: 'keepalive-timeout', user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address });
    });
    // after every key exchange: the new cipher's packets from slabs and a padding pool
    client.on('handshake', () => { adoptPackets(client); });
    client.on('authentication', (ctx) => {
      authenticate(conn, client, ctx).catch((e: unknown) => {
        // the client is refused as for an unknown key; the log has the reason
        log({ outcome: 'auth-error', remoteAddress: conn.address, reason: e instanceof Error ? e.message : String(e) });
        try { ctx.reject(['publickey']); } catch { /* gone */ }
      });
    });
    client.on('ready', () => {
      conn.authenticated = true;
      unauthenticated.remove(conn.group, conn);
      clearTimeout(conn.grace);
      if (limits.idleTimeout > 0) {
        conn.idle = setTimeout(() => {
          log({ outcome: 'idle-timeout', user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address });
          conn.socket.destroy();
        }, sec(limits.idleTimeout));
      }
    });
    client.on('session', (accept, reject) => {
      if (conn.channels >= limits.maxChannels) { reject(); log({ outcome: 'too-many-channels', user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address }); return; }
      conn.channels++;
      touch(conn);
      const s = accept();
      const packetSize = (s as unknown as { _chanInfo?: { outgoing?: { packetSize?: number } } })._chanInfo?.outgoing?.packetSize ?? 0;
      if (packetSize < MIN_PACKET_SIZE) {
        log({ outcome: 'bad-request', user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address, reason: `channel maximum packet size ${packetSize}` });
        conn.socket.destroy();
        return;
      }
      session(conn, s);
    });
    // no forwarding of any kind: ssh prints "open failed: administratively prohibited" / "remote port forwarding failed"
    client.on('tcpip', (_a, reject) => reject());
    client.on('openssh.streamlocal', (_a, reject) => reject());
    client.on('request', (_a, reject) => reject?.());
  });

  const touch = (conn: Conn) => { conn.idle?.refresh(); };

  /**
   * The connection's own progress deadline, from its first command on: a
   * client that takes nothing of what is queued on its socket (it does not
   * read the socket at all, a half-open connection) is cut after the idle
   * time, whatever its channels are doing.
   */
  const socketDeadlines = new WeakMap<Conn, ProgressDeadline>();
  const watchConnection = (conn: Conn): void => {
    if (socketDeadlines.has(conn) || limits.idleTimeout <= 0) return;
    socketDeadlines.set(conn, watchSocket(conn.socket, limits.idleTimeout, (stall) => {
      log({ outcome: PROGRESS_TIMEOUT, user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address, reason: stallReason(stall) });
    }));
  };

  /**
   * A channel's progress deadline: the client that does not take the
   * channel's data (its window stays shut: it does not read its end) or
   * does not send what the service waits for is cut after the idle time;
   * the channel is closed, and the connection too when it has no other.
   * While the channel's transfer is alive the connection is not idle.
   */
  const watchChannel = (conn: Conn, ch: ServerChannel, sink: ChannelSink, received: () => number): ProgressDeadline => {
    const w = ch as unknown as { writableLength: number };
    const d = new ProgressDeadline({
      // what the channel's window let through has left our queue; what waits for the window has not
      accepted: () => sink.stats.bytes - w.writableLength,
      queued: () => w.writableLength,
      received,
    }, limits.idleTimeout > 0 ? sec(limits.idleTimeout) : 0, (stall) => {
      markStalled(ch, stall);
      sink.markGone();
      try { ch.close(); } catch { /* gone */ }
      if (conn.channels <= 1) conn.socket.destroy();
    });
    d.onAlive = () => touch(conn);
    return d;
  };

  async function authenticate(conn: Conn, client: ssh2.Connection, ctx: ssh2.AuthContext): Promise<void> {
    const fail = () => {
      conn.failures++;
      ctx.reject(['publickey']);
      if (conn.failures >= limits.maxAuthTries) {
        log({ outcome: 'too-many-auth-failures', remoteAddress: conn.address });
        // a disconnect after the failure message; what the client sends on is not read
        try { client.end(); } catch { /* gone */ }
        conn.socket.pause();
        setTimeout(() => conn.socket.destroy(), 1000).unref();
      }
    };
    // the first `none` asks which methods there are; every later one counts as a failure (as OpenSSH's MaxAuthTries)
    if (ctx.method === 'none') { if (conn.askedNone) { fail(); return; } conn.askedNone = true; ctx.reject(['publickey']); return; }
    if (ctx.method !== 'publickey') { fail(); return; }
    const fp = keyFingerprint(ctx.key.data);
    const user = await opts.authenticate({ username: ctx.username, key: { algo: ctx.key.algo, data: ctx.key.data }, fingerprint: fp, remoteAddress: conn.address });
    if (conn.socket.destroyed) return;
    if (!user) { fail(); return; }
    // without a signature the client only asks whether the key would do (SSH_MSG_USERAUTH_PK_OK)
    if (!ctx.signature || !ctx.blob) { ctx.accept(); return; }
    const id = ctx.key.data.toString('base64');
    if (!conn.parsed.has(id)) {
      const p = ssh2.utils.parseKey(ctx.key.data);
      conn.parsed.set(id, p instanceof Error ? undefined : Array.isArray(p) ? (p as ParsedKey[])[0] : p);
    }
    const key = conn.parsed.get(id);
    if (!key || key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) { fail(); return; }
    conn.user = user;
    conn.fingerprint = fp;
    ctx.accept();
  }

  function session(conn: Conn, s: ssh2.Session): void {
    let gitProtocol: string | undefined;
    let started = false;
    /** refusals of requests that come before the shell or command, said when one comes */
    const notes: string[] = [];
    s.on('close', () => {
      conn.channels--;
      touch(conn);
      // an idle connection holds no packet slab
      if (conn.channels === 0 && conn.client) releaseSlabs(conn.client);
    });
    s.on('env', (accept, reject, info) => {
      if (info.key === 'GIT_PROTOCOL' && GIT_PROTOCOL_RE.test(info.val)) { gitProtocol = info.val; accept?.(); } else reject?.();
    });
    s.on('pty', (_a, reject) => { notes.push('gitwire: no terminal is allocated here'); reject?.(); });
    s.on('x11', (_a, reject) => { notes.push('gitwire: X11 forwarding is refused'); reject?.(); });
    s.on('auth-agent', (_a, reject) => { notes.push('gitwire: agent forwarding is refused'); reject?.(); });
    s.on('window-change', (_a, reject) => reject?.());
    s.on('signal', (_a, reject) => reject?.());
    const once = (accept: () => ServerChannel, reject: (() => unknown) | undefined): ServerChannel | undefined => {
      if (started) { reject?.(); return undefined; }
      started = true;
      const ch = accept();
      ch.on('error', () => { /* the client went away */ });
      return ch;
    };
    s.on('shell', (accept, reject) => {
      const ch = once(accept, reject);
      if (!ch) return;
      void refuse(conn, ch, `Hi ${conn.user}! You've successfully authenticated, but gitwire does not provide shell access.`, 1, 'shell', notes);
    });
    s.on('subsystem', (accept, reject, info) => {
      const ch = once(accept, reject);
      if (!ch) return;
      void refuse(conn, ch, `fatal: subsystem '${printable(info.name)}' is not served here (only git-upload-pack and git-receive-pack)`, 1, 'subsystem', notes);
    });
    s.on('exec', (accept, reject, info) => {
      const ch = once(accept, reject);
      if (!ch) return;
      exec(conn, ch, info.command, gitProtocol, notes).catch(() => { try { ch.destroy(); } catch { /* gone */ } });
    });
  }

  /** End a channel: what was written first, then the exit status, then EOF and close. */
  async function finish(ch: ServerChannel, code: number): Promise<void> {
    await flushed(ch.stderr as unknown as NodeJS.WritableStream & { writable: boolean });
    await flushed(ch as unknown as NodeJS.WritableStream & { writable: boolean });
    try { ch.exit(code); ch.end(); } catch { /* gone */ }
  }

  async function refuse(conn: Conn, ch: ServerChannel, message: string, code: number, outcome: Outcome, notes: string[] = [], extra: Partial<RequestLog> = {}): Promise<void> {
    ch.stderr.write(`${[...notes, message].join('\n')}\n`);
    log({ outcome, user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address, ...extra });
    await finish(ch, code);
  }

  async function exec(conn: Conn, ch: ServerChannel, command: string, gitProtocol: string | undefined, notes: string[]): Promise<void> {
    const t0 = process.hrtime.bigint();
    const req = parseExec(command);
    if (req.kind === 'lfs' || req.kind === 'lfs-bad') {
      if (!opts.lfs) return refuse(conn, ch, `fatal: unrecognized command '${printable(command)}'`, 128, 'unknown-command', notes);
      return lfsExec(conn, ch, req, opts.lfs, t0);
    }
    if (req.kind === 'unknown' && opts.commands) return own(conn, ch, command, opts.commands, notes);
    if (req.kind === 'unknown') return refuse(conn, ch, `fatal: unrecognized command '${printable(command)}'`, 128, 'unknown-command', notes);
    if (req.kind === 'bad-argument') return refuse(conn, ch, 'fatal: bad argument', 128, 'bad-argument', [], { command: req.service });
    if (req.service === 'git-upload-archive') return refuse(conn, ch, 'fatal: git-upload-archive is not served here (only git-upload-pack and git-receive-pack)', 128, 'unsupported-service', [], { command: req.service });
    const isPush = req.service === 'git-receive-pack';
    const service = findService(req.service)!;
    // the service the command named, from the start: a refused git-receive-pack is a receive-pack request
    const entry: RequestLog = {
      transport: 'ssh', service: isPush ? 'receive-pack' : 'upload-pack', user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address,
      repository: req.path, protocol: protocolVersion(gitProtocol), bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok',
    };
    const done = (outcome: Outcome) => {
      entry.outcome = outcome;
      entry.durationMs = Number(process.hrtime.bigint() - t0) / 1e6;
      try { opts.log?.(entry); } catch { /* a throwing logger must not take the server down */ }
    };
    const info: RequestInfo = { transport: 'ssh', path: req.path, remoteAddress: conn.address, service: isPush ? 'receive-pack' : 'upload-pack', user: conn.user, fingerprint: conn.fingerprint };
    let admitted;
    try {
      admitted = await admitRequest(opts, info, { until: (release) => releaseOnClose(release, ch as unknown as Closable, conn.socket) });
    } catch (e) {
      // a failing resolveRepository or authorize: a generic answer, the message in the log
      entry.reason = e instanceof Error ? e.message : String(e);
      ch.stderr.write('fatal: the server could not check this request\n');
      done('error');
      return finish(ch, 128);
    }
    // a repository the user may not see is answered as one that is not there (upload-pack's own words)
    const notThere = `fatal: '${req.path}' does not appear to be a git repository`;
    if (!admitted.ok && admitted.outcome === 'rate-limited') {
      entry.reason = admitted.refusal.reason;
      ch.stderr.write(`fatal: ${refusalMessage(admitted.refusal)}\n`);
      done(refusalOutcome(admitted.refusal.reason));
      return finish(ch, 128);
    }
    if (!admitted.ok) {
      let msg = notThere;
      if (admitted.outcome === 'denied' && admitted.deny.status !== 404) msg = `fatal: ${admitted.deny.message}`;
      if (admitted.outcome === 'storage-outside-root') { entry.reason = admitted.reason; msg = `fatal: ${STORAGE_REFUSED}`; }
      if (admitted.outcome === 'dubious-ownership') { entry.reason = admitted.reason; msg = `fatal: ${admitted.message}`; }
      ch.stderr.write(`${reportSafe(msg)}\n`);
      done(admitted.outcome);
      return finish(ch, 128);
    }
    const dir = admitted.dir;
    const push: PushLog | undefined = isPush ? { updated: 0, rejected: 0, bytesIn: 0, reasons: [] } : undefined;
    if (push) entry.push = push;
    const env = serviceEnv(isPush ? pushEnv(opts.env ?? process.env, info) : opts.env, gitProtocol);
    const sink = new ChannelSink(new StreamSink(ch), conn.socket, () => touch(conn), () => adoptedPackets(conn.client));
    // ssh2 says nothing of a channel the client closed while its input is not being read, and
    // drops what is written to it without calling back: the sink is told, so the service ends
    // (pack-objects stopped, its slot freed) instead of waiting on it for ever
    const origClose = ch.close.bind(ch) as () => void;
    (ch as unknown as { close: () => void }).close = () => { sink.markGone(); origClose(); };
    const onSocketClose = () => sink.markGone();
    conn.socket.once('close', onSocketClose);
    const raw = ch.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
    let received = 0;
    watchConnection(conn);
    const deadline = watchChannel(conn, ch, sink, () => received);
    async function* input(): AsyncGenerator<Buffer> {
      for (;;) {
        const r = await deadline.read(raw.next());
        if (r.done) return;
        received += (r.value as Buffer).length;
        touch(conn);
        if (push) push.bytesIn += (r.value as Buffer).length;
        yield r.value as Buffer;
      }
    }
    const report = (x: { protocol: number; command: string; wants: number; haves: number; packCache?: string; packWarnings?: string[] }) => {
      Object.assign(entry, { protocol: x.protocol, command: x.command, wants: x.wants, haves: x.haves, packCache: x.packCache, packWarnings: x.packWarnings });
    };
    const stderr = (b: Buffer) => { touch(conn); try { ch.stderr.write(b); } catch { /* gone */ } };
    const refFilter = opts.refFilter?.(info, dir);
    try {
      const r = await service.serve({
        directory: dir, repository: req.path, strict: true, env, input: input(), output: sink, report, stderr,
        refFilter, strictVisibility: opts.strictVisibility, acquirePackSlot: opts.limiter?.forClient(clientId(info)),
        bundleOffer: push ? undefined : opts.bundles?.offer({ transport: 'ssh', dir, filtered: refFilter !== undefined }),
        pool: opts.pool, packCache: opts.packCache, packObjects: opts.packObjects, limits: opts.limits,
        ...(push ? pushServeOptions(opts, info, dir, push) : {}),
      });
      if (push) pushResult(push, r as ReceivePackResult);
      Object.assign(entry, { protocol: r.protocol, command: r.command, wants: r.wants, haves: r.haves, bytesOut: r.bytes, writes: r.writes, packCache: r.packCache, packWarnings: r.packWarnings, ...(r.bundle ? { bundle: r.bundle } : {}) });
      // a push whose client stopped sending ends "normally" (its pack cut short): the cut is what it came to
      const stall = stalled(ch) ?? stalled(conn.socket);
      if (stall) entry.reason = stallReason(stall);
      done(stall ? PROGRESS_TIMEOUT : push?.unpackError ? 'unpack-error' : push?.rejected ? 'rejected' : 'ok');
      conn.socket.off('close', onSocketClose);
      // what is still queued must be taken, or the channel goes
      await Promise.race([finish(ch, 0), new Promise((resolve) => ch.once('close', resolve))]);
      deadline.stop();
    } catch (e) {
      deadline.stop();
      conn.socket.off('close', onSocketClose);
      entry.bytesOut = sink.stats.bytes;
      entry.writes = sink.stats.writes;
      const stall = stalled(ch) ?? stalled(conn.socket);
      if (stall) {
        entry.reason = stallReason(stall);
        done(PROGRESS_TIMEOUT);
        try { ch.destroy(); } catch { /* gone */ }
        return;
      }
      if (e instanceof GitwireError && e.code === 'GW_CLIENT_GONE') {
        done(e.code);
        try { ch.destroy(); } catch { /* gone */ }
        return;
      }
      // as git's server dies: `fatal: …` on stderr, exit 128
      const { text, exitCode } = GitwireError.forCli(e);
      ch.stderr.write(text);
      done(e instanceof GitwireError ? e.code : 'error');
      await finish(ch, exitCode);
    }
  }

  /** git-lfs-authenticate / git-lfs-transfer: the shared admission, the channel as LFS's byte source and sink */
  /** A command of SshOptions.commands: its answer, or unrecognized; per-client limits as for git's services */
  async function own(conn: Conn, ch: ServerChannel, command: string, commands: NonNullable<SshOptions['commands']>, notes: string[]): Promise<void> {
    const t0 = process.hrtime.bigint();
    const entry: RequestLog = { transport: 'ssh', user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address, command: printable(command, 100), bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok' };
    const done = (outcome: Outcome) => {
      entry.outcome = outcome;
      entry.durationMs = Number(process.hrtime.bigint() - t0) / 1e6;
      try { opts.log?.(entry); } catch { /* a throwing logger must not take the server down */ }
    };
    if (opts.clientLimits) {
      const v = opts.clientLimits.check({ user: conn.user, remoteAddress: conn.address }, 'small');
      if (!v.ok) { entry.reason = v.reason; ch.stderr.write(`fatal: ${refusalMessage(v)}\n`); done(refusalOutcome(v.reason)); return finish(ch, 128); }
      releaseOnClose(v.release, ch as unknown as Closable, conn.socket);
    }
    let a: SshCommandAnswer | undefined;
    try {
      a = await commands({ user: conn.user!, fingerprint: conn.fingerprint, remoteAddress: conn.address, command, forget: (dir) => opts.pool?.invalidate(dir) });
    } catch (e) {
      entry.reason = e instanceof Error ? e.message : String(e);
      ch.stderr.write('fatal: the server could not carry out this command\n');
      done('error');
      return finish(ch, 128);
    }
    if (!a) return refuse(conn, ch, `fatal: unrecognized command '${printable(command)}'`, 128, 'unknown-command', notes);
    if (a.repository !== undefined) entry.repository = a.repository;
    if (a.stdout) { ch.write(a.stdout); entry.bytesOut = Buffer.byteLength(a.stdout); }
    if (a.stderr) ch.stderr.write(reportSafe(a.stderr));
    done(a.outcome ?? (a.code === 0 ? 'ok' : 'denied'));
    await finish(ch, a.code);
  }

  async function lfsExec(conn: Conn, ch: ServerChannel, req: LfsExec, lfs: LfsService, t0: bigint): Promise<void> {
    const info: RequestInfo = { transport: 'ssh', path: req.kind === 'lfs' ? req.path : '', remoteAddress: conn.address, service: 'lfs-download', user: conn.user, fingerprint: conn.fingerprint };
    let closed = false;
    const gone = new Promise<void>((resolve) => { const end = () => { closed = true; resolve(); }; ch.once('close', end); conn.socket.once('close', end); });
    async function* input(): AsyncGenerator<Buffer> {
      for await (const c of ch as AsyncIterable<Buffer>) { touch(conn); yield c; }
    }
    const entry: Partial<RequestLog> = { user: conn.user, fingerprint: conn.fingerprint, remoteAddress: conn.address, repository: info.path, command: req.command };
    try {
      const r = await serveLfsSsh(lfs, req, {
        input: input(),
        write: async (b) => {
          touch(conn);
          if (closed) throw clientGone();
          if (!ch.write(b)) await Promise.race([new Promise((resolve) => ch.once('drain', resolve)), gone]);
          if (closed) throw clientGone();
        },
        stderr: (m) => { try { ch.stderr.write(reportSafe(m)); } catch { /* gone */ } },
        gate: {
          authenticate: async () => true,
          admit: async (service) => {
            info.service = service;
            const a = await admitRequest(opts, info, { until: (release) => releaseOnClose(release, ch as unknown as Closable, conn.socket) });
            if (a.ok) return { ok: true, dir: a.dir, name: (opts.root && repositoryName(opts.root, a.dir)) || info.path };
            if (a.outcome === 'rate-limited') return { ok: false, deny: { status: 429, message: refusalMessage(a.refusal) } };
            if (a.outcome === 'denied') return { ok: false, deny: a.deny };
            if (a.outcome === 'storage-outside-root') return { ok: false, deny: { status: 403, message: STORAGE_REFUSED } };
            if (a.outcome === 'dubious-ownership') { entry.reason = a.reason; return { ok: false, deny: { status: 403, message: a.message } }; }
            return { ok: false, deny: { status: 404, message: 'Not Found' } };
          },
          user: () => conn.user,
          setUser: () => undefined,
          anonymousPush: false,
          signIn: true,
        },
      });
      log({ ...entry, outcome: r.outcome as Outcome, bytesOut: r.log.bytesOut, reason: r.reason, durationMs: Number(process.hrtime.bigint() - t0) / 1e6 });
      await finish(ch, r.code);
    } catch (e) {
      if (closed) { log({ ...entry, outcome: 'GW_CLIENT_GONE', durationMs: Number(process.hrtime.bigint() - t0) / 1e6 }); return; }
      log({ ...entry, outcome: 'error', reason: e instanceof Error ? e.message : String(e), durationMs: Number(process.hrtime.bigint() - t0) / 1e6 });
      try { ch.stderr.write('fatal: the server could not serve this request\n'); } catch { /* gone */ }
      await finish(ch, 128);
    }
  }

  return server;
}
