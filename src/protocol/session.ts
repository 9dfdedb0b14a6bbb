/**
 * The fetch core shared by protocol v0 and v2: upload-pack configuration,
 * per-request state and object flags.
 */
import type { Repository } from '../repo/repository.js';
import type { HideRefs } from '../repo/hiderefs.js';
import { FilterPolicy, type FilterSpec } from './filter.js';
import type { PacketWriter, SidebandMode } from '../pktline/writer.js';
import type { Trace2 } from './trace2.js';
import type { Limits } from './limits.js';

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

export type MultiAck = 0 | 1 | 2; // none, multi_ack, multi_ack_detailed

export interface SessionOptions {
  statelessRpc: boolean;
  /** daemon mode (--timeout given): no progress without sideband */
  daemonMode?: boolean;
  timeout?: number;
  /** restrict what is visible beyond hideRefs (library ref filter) */
  refFilter?: (name: string) => boolean;
  trace?: Trace2;
  /** hook to queue for a pack-objects slot (admission control) */
  acquirePackSlot?: (writer: PacketWriter, sideband: boolean, opts?: { keepalive?: number }) => Promise<() => void>;
  /** environment for pack-objects */
  env?: NodeJS.ProcessEnv;
  /** relay tuning: how long pack-objects may be quiet before a partial frame goes out (ms) */
  relayQuietMs?: number;
  /** pack-objects cache shared by identical fetches */
  packCache?: import('../pack/cache.js').PackCache;
  /** per-request limits (protocol/limits.ts); defaults when absent */
  limits?: Partial<Limits>;
  /**
   * where pack-objects' progress and errors go when the client has no
   * sideband (git: its own stderr, which ssh carries to the client). A
   * server passes its own sink here: never the server's stderr.
   */
  stderr?: (b: Buffer) => void;
}

export class UploadPackSession {
  readonly cfg: UploadPackConfig;
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
  depth = 0;
  deepenSince = 0;
  deepenNot: string[] = [];
  deepenRevList = false;
  deepenRelative = false;
  filter?: FilterSpec;
  filterRequested = false;
  multiAck: MultiAck = 0;
  noDone = false;
  thinPack = false;
  ofsDelta = false;
  /** the client's sideband choice: kept by the writer, which frames by it */
  get sideband(): SidebandMode { return this.writer.sideband; }
  set sideband(v: SidebandMode) { this.writer.sideband = v; }
  noProgress = false;
  includeTag = false;
  oldestHave = 0;
  wantedRefs: Array<{ name: string; oid: Buffer }> = [];
  /** last v2 command served (for logs) */
  command?: string;
  /** totals over the connection (for logs and metrics) */
  readonly stats: { wants: number; haves: number; packCache?: string } = { wants: 0, haves: 0 };

  constructor(readonly repo: Repository, readonly writer: PacketWriter, readonly opts: SessionOptions) {
    this.cfg = readUploadPackConfig(repo);
  }

  /** Forget per-request state (v2 serves several commands per connection). */
  resetRequest(): void {
    this.stats.wants += this.wants.length;
    this.stats.haves += this.haves.length;
    this.flags.clear();
    this.wants = []; this.haves = []; this.extraEdges = []; this.shallows = [];
    this.registeredShallow = new Map(); this.shallowNr = 0;
    this.depth = 0; this.deepenSince = 0; this.deepenNot = []; this.deepenRevList = false; this.deepenRelative = false;
    this.filter = undefined; this.filterRequested = false; this.multiAck = 0; this.noDone = false;
    this.thinPack = false; this.ofsDelta = false; this.sideband = 'none'; this.noProgress = false; this.includeTag = false;
    this.oldestHave = 0; this.wantedRefs = [];
    this.writer.sidebandAll = false;
  }

  key(oid: Buffer): string { return oid.toString('latin1'); }
  get(oid: Buffer): number { return this.flags.get(this.key(oid)) ?? 0; }
  set(oid: Buffer, f: number): void { const k = this.key(oid); this.flags.set(k, (this.flags.get(k) ?? 0) | f); }
  clear(oid: Buffer, f: number): void { const k = this.key(oid); this.flags.set(k, (this.flags.get(k) ?? 0) & ~f); }

  hex(oid: Buffer): string { return oid.toString('hex'); }

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

  registerShallow(oid: Buffer): void { this.registeredShallow.set(this.key(oid), oid); }
  unregisterShallow(oid: Buffer): void { this.registeredShallow.delete(this.key(oid)); }
}
