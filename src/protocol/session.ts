/**
 * The fetch core shared by protocol v0 and v2: upload-pack configuration,
 * the connection, and the state of one request with its object flags.
 */
import type { Repository } from '../repo/repository.js';
import type { HideRefs } from '../repo/hiderefs.js';
import { FilterPolicy } from './filter.js';
import type { PacketWriter, SidebandMode } from '../pktline/writer.js';
import type { Trace2 } from './trace2.js';
import type { Limits } from './limits.js';
import { newFetchRequest, type FetchRequest, type ProtocolVersion } from './request.js';

export const enum Flag {
  TheyHave = 1 << 0,
  OurRef = 1 << 1,
  Wanted = 1 << 2,
  CommonKnown = 1 << 3,
  Shallow = 1 << 4,
  NotShallow = 1 << 5,
  ClientShallow = 1 << 6,
  HiddenRef = 1 << 7,
}

export const enum AllowUor { Tip = 1, Reachable = 2, Any = 7 }

export const INFINITE_DEPTH = 0x7fffffff;

export interface UploadPackConfig {
  allowUor: number;
  allowFilter: boolean;
  allowRefInWant: boolean;
  allowSidebandAll: boolean;
  /** seconds; <0 disables */
  keepalive: number;
  advertiseSid: boolean;
  hideRefs: HideRefs;
  filterPolicy: FilterPolicy;
  packObjectsHook?: string;
}

export function readUploadPackConfig(repo: Repository): UploadPackConfig {
  const c = repo.config;
  let allowUor = 0;
  for (const e of c.each()) {
    const set = (bit: number) => {
      const on = e.value === null || !['false', 'no', 'off', '0', ''].includes(e.value.toLowerCase());
      allowUor = on ? allowUor | bit : allowUor & ~bit;
    };
    if (e.key === 'uploadpack.allowtipsha1inwant') set(AllowUor.Tip);
    else if (e.key === 'uploadpack.allowreachablesha1inwant') set(AllowUor.Reachable);
    else if (e.key === 'uploadpack.allowanysha1inwant') set(AllowUor.Any);
  }
  let keepalive = c.getInt('uploadpack.keepalive', 5);
  if (keepalive === 0) keepalive = -1;
  const hook = c.getEntry('uploadpack.packobjectshook', true);
  return {
    allowUor,
    allowFilter: c.getBool('uploadpack.allowfilter', false),
    allowRefInWant: c.getBool('uploadpack.allowrefinwant', false),
    allowSidebandAll: c.getBool('uploadpack.allowsidebandall', false),
    keepalive,
    advertiseSid: c.getBool('transfer.advertisesid', false),
    hideRefs: repo.hideRefs('uploadpack'),
    filterPolicy: FilterPolicy.fromConfig(c),
    packObjectsHook: hook?.value ?? undefined,
  };
}

/** The pack producers `--pack-objects` chooses between. */
export type PackProducerName = 'git' | 'native';

export interface SessionOptions {
  statelessRpc: boolean;
  /** daemon mode (--timeout given): no progress without sideband */
  daemonMode?: boolean;
  timeout?: number;
  /** restrict what is visible beyond hideRefs (library ref filter) */
  refFilter?: (name: string) => boolean;
  /** only objects reachable from visible refs may be fetched (protocol/visibility.ts) */
  strictVisibility?: boolean;
  trace?: Trace2;
  /** hook to queue for a pack-objects slot (admission control) */
  acquirePackSlot?: (writer: PacketWriter, sideband: boolean, opts?: { keepalive?: number; repo?: string }) => Promise<() => void>;
  /** environment for pack-objects */
  env?: NodeJS.ProcessEnv;
  /** relay tuning: how long pack-objects may be quiet before a partial frame goes out (ms) */
  relayQuietMs?: number;
  /** pack-objects cache shared by identical fetches */
  packCache?: import('../pack/cache.js').PackCache;
  /**
   * who makes the pack: gitwire itself (`native`, the default) or `git
   * pack-objects` (`git`). uploadpack.packObjectsHook always runs git's.
   */
  packObjects?: PackProducerName;
  /** per-request limits (protocol/limits.ts); defaults when absent */
  limits?: Partial<Limits>;
  /**
   * where pack-objects' progress and errors go when the client has no
   * sideband (git: its own stderr, which ssh carries to the client). A
   * server passes its own sink here: never the server's stderr.
   */
  stderr?: (b: Buffer) => void;
  /** bundles gitwire made, offered through bundle-uri (v2/bundle-uri.ts) */
  bundleOffer?: import('./v2/bundle-uri.js').BundleOffer;
}

/** Totals over a connection (for logs and metrics). */
export interface ConnectionStats {
  wants: number;
  haves: number;
  packCache?: string;
  /** how the native producer made the last pack (absent for git's pack-objects) */
  producer?: import('../pack/produce/producer.js').NativePackResult;
  /** whether the last fetch started from the offered bundle (BundleOffer.started) */
  bundle?: 'taken' | 'not-taken';
}

/**
 * What lives as long as the connection: the repository, the writer, the
 * options, the configuration read once, and the totals. Each request
 * (the v0 exchange, every v2 command) gets a fresh UploadPackSession.
 */
export class UploadPackConnection {
  readonly cfg: UploadPackConfig;
  readonly stats: ConnectionStats = { wants: 0, haves: 0 };
  /** the last v2 command served (for logs) */
  command?: string;
  /** the request being served */
  current?: UploadPackSession;

  constructor(readonly repo: Repository, readonly writer: PacketWriter, readonly opts: SessionOptions) {
    this.cfg = readUploadPackConfig(repo);
  }

  /**
   * State for one request, as git's upload_pack_v2() builds a fresh
   * upload_pack_data per command. The previous request's counts join the
   * totals, and the writer leaves the previous command's framing behind.
   */
  begin(version: ProtocolVersion): UploadPackSession {
    const prev = this.current;
    if (prev) { this.stats.wants += prev.wants.length; this.stats.haves += prev.haves.length; }
    this.writer.sidebandAll = false;
    this.writer.sideband = 'none';
    const s = new UploadPackSession(this, newFetchRequest(version));
    this.current = s;
    return s;
  }
}

/** The state of one request: its parsed value, the object flags and the object lists. */
export class UploadPackSession {
  readonly repo: Repository;
  readonly writer: PacketWriter;
  readonly opts: SessionOptions;
  readonly cfg: UploadPackConfig;
  /** totals over the connection (shared with it) */
  readonly stats: ConnectionStats;
  /** object flags keyed by the raw id as a latin1 string */
  readonly flags = new Map<string, number>();
  wants: Buffer[] = [];
  haves: Buffer[] = [];
  /** objects written after `--not` besides haves (unshallowed commits) */
  extraEdges: Buffer[] = [];
  /** client-declared shallow commits */
  shallows: Buffer[] = [];
  /** every shallow graft pack-objects must know (sorted on use) */
  registeredShallow = new Map<string, Buffer>();
  /** number of shallow lines that make pack-objects use --shallow */
  shallowNr = 0;
  oldestHave = 0;
  /** the client's sideband choice: kept by the writer, which frames by it */
  get sideband(): SidebandMode { return this.writer.sideband; }
  set sideband(v: SidebandMode) { this.writer.sideband = v; }

  constructor(readonly conn: UploadPackConnection, readonly req: FetchRequest) {
    this.repo = conn.repo;
    this.writer = conn.writer;
    this.opts = conn.opts;
    this.cfg = conn.cfg;
    this.stats = conn.stats;
  }

  key(oid: Buffer): string { return oid.toString('latin1'); }
  get(oid: Buffer): number { return this.flags.get(this.key(oid)) ?? 0; }
  set(oid: Buffer, f: number): void { const k = this.key(oid); this.flags.set(k, (this.flags.get(k) ?? 0) | f); }
  clear(oid: Buffer, f: number): void { const k = this.key(oid); this.flags.set(k, (this.flags.get(k) ?? 0) & ~f); }

  /** Ref names as the client sees them, and whether they are hidden. */
  isHidden(stripped: Buffer | undefined, full: Buffer): boolean {
    if (this.cfg.hideRefs.isHidden(stripped, full)) return true;
    if (this.opts.refFilter && stripped && !this.opts.refFilter(stripped.toString())) return true;
    return false;
  }

  addWant(oid: Buffer): void {
    if (this.get(oid) & Flag.Wanted) return;
    this.set(oid, Flag.Wanted);
    this.wants.push(oid);
  }

  /** add to the want list without policy checks (parents of unshallowed commits) */
  addWantUnchecked(oid: Buffer): void { this.wants.push(oid); }

  /** trace2 `fetch-info`: what the request asked for, when the pack is about to be made */
  traceFetchInfo(): void {
    const t = this.opts.trace;
    if (!t?.enabled) return;
    const r = this.req;
    t.dataJson('upload-pack', 'fetch-info', {
      haves: this.haves.length,
      wants: this.wants.length,
      'want-refs': r.wantedRefs.length,
      depth: r.depth,
      shallows: this.shallows.length,
      'deepen-since': r.deepenSince !== 0,
      'deepen-not': r.deepenNot.length,
      'deepen-relative': r.deepenRelative,
      // the filter's type name, as list_object_filter_config_name() gives it
      'filter': r.filter?.choice ?? null,
    });
  }

  registerShallow(oid: Buffer): void { this.registeredShallow.set(this.key(oid), oid); }
  unregisterShallow(oid: Buffer): void { this.registeredShallow.delete(this.key(oid)); }
}
