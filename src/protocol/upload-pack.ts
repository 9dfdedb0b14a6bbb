/**
 * The upload-pack conversation (git-upload-pack): one protocol v0/v1/v2
 * exchange over any byte source and sink. Transports (stdio, smart HTTP,
 * git://) pick it from the service table in ./service.ts.
 */
import { GitwireError, refsUnreadable } from '../errors.js';
import { PacketWriter } from '../pktline/writer.js';
import { PktReader } from '../pktline/reader.js';
import { Repository } from '../repo/repository.js';
import type { Lease, RepositoryPool } from '../repo/pool.js';
import { UploadPackConnection, type SessionOptions } from './session.js';
import { uploadPackV0 } from './v0.js';
import { protocolVersion } from './version.js';
import { Trace2 } from './trace2.js';
import { version } from '../version.js';
import { resolveLimits, type Limits } from './limits.js';
import type { CommonServiceOptions } from './service.js';

export interface UploadPackOptions extends CommonServiceOptions {
  refFilter?: SessionOptions['refFilter'];
  strictVisibility?: SessionOptions['strictVisibility'];
  acquirePackSlot?: SessionOptions['acquirePackSlot'];
  relayQuietMs?: number;
  /** reuse open repositories across requests (servers) */
  pool?: RepositoryPool;
  /** pack-objects cache (see pack/cache.ts) */
  packCache?: SessionOptions['packCache'];
  /** who makes packs: `native` (default) or `git` pack-objects */
  packObjects?: SessionOptions['packObjects'];
  /** per-request limits (protocol/limits.ts) */
  limits?: Partial<Limits>;
  /** where progress goes without a sideband (default: this process's stderr; servers pass their own) */
  stderr?: (b: Buffer) => void;
  /**
   * Told what the conversation did once it ends, whatever its outcome
   * (an error is still thrown): for a request log that keeps its fields
   * when the client goes away mid-pack.
   */
  report?: (r: UploadPackResult) => void;
  /** bundles offered through v2 bundle-uri (bundle/service.ts) */
  bundleOffer?: SessionOptions['bundleOffer'];
}

export interface UploadPackResult {
  protocol: 0 | 1 | 2;
  /** `advertise`, `upload-pack` (v0), or the last v2 command */
  command: string;
  wants: number;
  haves: number;
  writes: number;
  bytes: number;
  /** pack-objects cache outcome of the last pack sent: hit, miss, join, bypass or retry */
  packCache?: string;
  /** git's lines for damaged bitmaps the native producer skipped (server paths kept) */
  packWarnings?: string[];
  /** a fetch while a bundle was offered: did the client start from it (BundleOffer.started) */
  bundle?: 'taken' | 'not-taken';
}

/**
 * Serve one upload-pack conversation. An error is rendered here for the
 * wire (when git tells the client) and then thrown, for the transport to
 * log and the CLI to print.
 */
export async function uploadPack(o: UploadPackOptions): Promise<UploadPackResult> {
  const env = o.env ?? process.env;
  const trace = new Trace2(env, version());
  if (trace.enabled) { trace.versionEv(); trace.startEv(o.argv ?? ['upload-pack', o.directory]); }
  let writerRef: PacketWriter | undefined;
  const proto = protocolVersion(env.GIT_PROTOCOL);
  let conn: UploadPackConnection | undefined;
  const result = (): UploadPackResult => {
    const st = conn?.stats ?? { wants: 0, haves: 0 };
    const cur = { wants: conn?.current?.wants.length ?? 0, haves: conn?.current?.haves.length ?? 0 };
    // v2 counts a command when it ends; v0 counts its only request before the pack
    const count = (k: 'wants' | 'haves') => (proto === 2 ? st[k] + cur[k] : Math.max(st[k], cur[k]));
    return {
      protocol: proto,
      command: conn?.command ?? (o.advertiseRefs ? 'advertise' : 'upload-pack'),
      wants: count('wants'),
      haves: count('haves'),
      writes: o.output.stats.writes,
      bytes: o.output.stats.bytes,
      packCache: conn?.stats.packCache,
      packWarnings: conn?.stats.producer?.warnings,
      ...(conn?.stats.bundle ? { bundle: conn.stats.bundle } : {}),
    };
  };
  let lease: Lease | undefined;
  let base: Repository;
  try {
    lease = o.pool?.acquire(o.directory, { strict: o.strict, env });
    base = lease?.repo ?? Repository.open(o.directory, { strict: o.strict, env });
  } catch (e) {
    o.report?.(result());
    throw e;
  }
  // one ref snapshot for the whole conversation: the want checks agree with what was advertised
  const repo = base.forRequest();
  try {
    const writer = new PacketWriter(o.output);
    writerRef = writer;
    if (o.announceService) writer.announce('git-upload-pack');
    trace.data('transfer', 'negotiated-version', proto);
    const limits = resolveLimits(o.limits);
    const reader = new PktReader(o.input, {
      chomp: true, dieOnErr: true, beforeWait: () => writer.push(), timeoutMs: o.timeout ? o.timeout * 1000 : undefined,
      maxBytesPerFlush: limits.maxRequestBytes,
    });
    conn = new UploadPackConnection(repo, writer, {
      statelessRpc: !!o.statelessRpc,
      daemonMode: !!o.timeout,
      timeout: o.timeout,
      refFilter: o.refFilter,
      strictVisibility: o.strictVisibility,
      acquirePackSlot: o.acquirePackSlot,
      trace,
      env,
      relayQuietMs: o.relayQuietMs,
      packCache: o.packCache,
      packObjects: o.packObjects,
      limits,
      stderr: o.stderr,
      bundleOffer: o.bundleOffer,
    });
    if (proto === 2) {
      const { serveV2 } = await import('./v2/serve.js');
      await serveV2(conn, reader, { advertiseOnly: !!o.advertiseRefs, statelessRpc: !!o.statelessRpc, get sessionId() { return trace.sid; } });
    } else {
      if (proto === 1 && (o.advertiseRefs || !o.statelessRpc)) writer.data('version 1\n');
      await uploadPackV0(conn, reader, { advertiseRefs: !!o.advertiseRefs, statelessRpc: !!o.statelessRpc, get sessionId() { return trace.sid; } });
    }
    writer.push();
    if (trace.enabled) trace.exitEv(0);
    return result();
  } catch (err) {
    // ref storage that cannot be read is said to the client, naming the repository: never a list that just stops
    const e = err instanceof GitwireError && err.code === 'GW_REFS_CORRUPT' && err.wire === undefined ? refsUnreadable(err, o.repository ?? o.directory) : err;
    // the one place upload-pack's errors reach the client (ERR, or band 3 under sideband-all)
    if (e instanceof GitwireError && writerRef && !o.output.closed) {
      try { e.toWire(writerRef); } catch { /* the client is gone */ }
    }
    // what was written before the failure goes out, as git's unbuffered packets had (a v2
    // `shallow-info` line before a shallow request is refused): the client still sees no end
    if (writerRef && !o.output.closed) { try { writerRef.push(); } catch { /* the client is gone */ } }
    if (trace.enabled) trace.exitEv(e instanceof GitwireError ? e.exitCode : 128);
    throw e;
  } finally {
    repo.endRequest();
    if (lease) lease.release(); else base.close();
    o.report?.(result());
  }
}
