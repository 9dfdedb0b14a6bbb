/**
 * Admission control: a limit on concurrent pack-objects. A queued fetch
 * is told on band 2 that it is waiting, and gets keepalives, instead of a
 * timeout or an error. A queued client that goes away leaves the queue at
 * once: it never takes a turn. Authenticated users queue ahead of
 * anonymous clients (limits/client-key.ts says who is which): while
 * anonymous fetches wait for a slot, a user's fetch takes the next one.
 */
import { clientGone } from '../errors.js';
import type { PacketWriter } from '../pktline/writer.js';
import { scopeOfClient, scopeOfRepo, type Coordinator, type SlotLease } from '../cluster/coordinator.js';
import type { ClientId } from './limits/client-key.js';

/**
 * Keepalive interval for a queued fetch when the repository does not set
 * `uploadpack.keepAlive` (git's own 5 s is too long for some clients:
 * isomorphic-git's Node transport gives up on a request silent for 5 s).
 */
export const QUEUE_KEEPALIVE_MS = 2500;

export interface AcquireOptions {
  /** `uploadpack.keepAlive` in seconds when the repository sets it (<= 0: none) */
  keepalive?: number;
  /** the repository (its directory), for `perRepo` */
  repo?: string;
  /** who asks (the user, else the client's address: ClientId's key), for `perClient` */
  client?: string;
  /** an anonymous client: queued behind authenticated users */
  anonymous?: boolean;
}

/**
 * Limits counted across every node sharing a coordinator (in one process
 * without `--redis`): pack-objects at once for one repository, for one
 * client. A slot is a lease the coordinator renews while the work runs.
 */
export interface FleetLimits {
  coordinator: Coordinator;
  perRepo?: number;
  perClient?: number;
}

/** how often a fleet waiter tries again when no release was heard (slots of a dead node free by expiring) */
export const FLEET_POLL_MS = 250;

interface Waiter { resolve: () => void; anonymous: boolean }

export class PackLimiter {
  private running = 0;
  private readonly queue: Waiter[] = [];
  /** `what` names the slot in the waiting message (`pack-objects`, `ingest`) */
  constructor(readonly limit: number, readonly keepaliveMs = QUEUE_KEEPALIVE_MS, readonly what = 'pack-objects', readonly fleet?: FleetLimits) {}

  /** told how long each granted slot was waited for, in seconds (0 when one was free): the metrics' histogram */
  onWait?: (seconds: number) => void;

  get active(): number { return this.running; }
  get waiting(): number { return this.queue.length; }

  /** Resolves with a release function once a slot is free; rejects if the client goes away first. */
  acquire = (writer: PacketWriter, sideband: boolean, opts: AcquireOptions = {}): Promise<() => void> => {
    // no fleet limit for this request: queued at once, as it always was
    if (!this.fleetScopes(opts).length) return this.localSlot(writer, sideband, opts);
    return this.withFleet(writer, sideband, opts);
  };

  private async withFleet(writer: PacketWriter, sideband: boolean, opts: AcquireOptions): Promise<() => void> {
    const fleet = await this.fleetSlots(writer, sideband, opts);
    let local: () => void;
    try {
      local = await this.localSlot(writer, sideband, opts);
    } catch (e) {
      for (const l of fleet) l.release();
      throw e;
    }
    if (!fleet.length) return local;
    return () => {
      local();
      for (const l of fleet.splice(0)) l.release();
    };
  }

  /** The fleet-wide scopes this request counts in: [scope, limit, what it is]. */
  private fleetScopes(opts: AcquireOptions): Array<[string, number, string]> {
    const f = this.fleet;
    const want: Array<[string, number, string]> = [];
    if (!f) return want;
    if (f.perRepo && f.perRepo > 0 && opts.repo !== undefined) want.push([scopeOfRepo(opts.repo), f.perRepo, 'this repository']);
    if (f.perClient && f.perClient > 0 && opts.client !== undefined) want.push([scopeOfClient(opts.client), f.perClient, 'this client']);
    return want;
  }

  /**
   * acquire for requests of `client` (limits/client-key.ts: the user, else
   * the address, IPv6 per /64; a plain string is taken as the key): what a
   * transport hands to upload-pack. `--max-packs-per-client` counts per key.
   */
  forClient(client: ClientId | string | undefined): typeof this.acquire {
    if (client === undefined) return this.acquire;
    const id = typeof client === 'string' ? { key: client, anonymous: true } : client;
    return (writer, sideband, opts = {}) => this.acquire(writer, sideband, { ...opts, client: id.key, anonymous: id.anonymous });
  }

  private say(writer: PacketWriter, sideband: boolean, msg: string): void {
    if (sideband) { try { writer.progress(msg); writer.push(); } catch { /* gone */ } }
  }

  /** Keepalives for a queued client; returns the stop. */
  private keepalives(writer: PacketWriter, sideband: boolean, opts: AcquireOptions): () => void {
    const ms = opts.keepalive === undefined ? this.keepaliveMs : opts.keepalive > 0 ? opts.keepalive * 1000 : 0;
    if (!sideband || ms <= 0) return () => undefined;
    const timer = setInterval(() => {
      // not into a client that is not reading what it has (it is no sign of life, only a longer queue)
      try { if (!writer.backedUp) writer.keepalive(); } catch { /* gone: the close handler drops the waiter */ }
    }, ms);
    return () => clearInterval(timer);
  }

  /** The fleet's slots for this request's repository and client (none when no fleet limit applies). */
  private async fleetSlots(writer: PacketWriter, sideband: boolean, opts: AcquireOptions): Promise<SlotLease[]> {
    const f = this.fleet;
    const want = this.fleetScopes(opts);
    if (!f || !want.length) return [];
    let stop: (() => void) | undefined;
    let gone = false;
    let wake: (() => void) | undefined;
    const unsubscribe = f.coordinator.onRelease(() => wake?.());
    try {
      const scopes = want.map(([scope, limit]) => [scope, limit] as const);
      for (;;) {
        // every scope's slot in one go (one Redis round trip), or none
        const r = await f.coordinator.tryLeases(scopes);
        if ('lease' in r) {
          if (stop) this.say(writer, sideband, `gitwire: ${this.what} slot acquired\n`);
          if (gone || writer.closed) { r.lease.release(); throw clientGone(); }
          return [r.lease];
        }
        const full = want[r.full]![2];
        if (writer.closed || gone) throw clientGone();
        if (!stop) {
          this.say(writer, sideband, `gitwire: waiting for ${this.what === 'ingest' ? 'an' : 'a'} ${this.what} slot (the limit for ${full} across the servers)\n`);
          stop = this.keepalives(writer, sideband, opts);
          writer.onGone(() => { gone = true; wake?.(); });
        }
        await new Promise<void>((r) => {
          const t = setTimeout(r, FLEET_POLL_MS);
          wake = () => { clearTimeout(t); r(); };
        });
        wake = undefined;
      }
    } finally {
      unsubscribe();
      stop?.();
    }
  }

  /** This node's own slot (`limit`, e.g. --max-packs). */
  private async localSlot(writer: PacketWriter, sideband: boolean, opts: AcquireOptions): Promise<() => void> {
    if (this.limit <= 0 || this.running < this.limit) {
      this.running++;
      this.onWait?.(0);
      return this.releaser();
    }
    const t0 = process.hrtime.bigint();
    if (writer.closed) throw clientGone();
    const ahead = (opts.anonymous ?? false ? this.queue.length : this.queue.filter((q) => !q.anonymous).length) + 1;
    this.say(writer, sideband, `gitwire: waiting for ${this.what === 'ingest' ? 'an' : 'a'} ${this.what} slot (${ahead} ahead)\n`);
    const stop = this.keepalives(writer, sideband, opts);
    try {
      await new Promise<void>((resolve, reject) => {
        const w: Waiter = { resolve, anonymous: opts.anonymous ?? false };
        // a user goes ahead of every anonymous waiter (behind the users already waiting)
        const at = w.anonymous ? -1 : this.queue.findIndex((q) => q.anonymous);
        if (at < 0) this.queue.push(w); else this.queue.splice(at, 0, w);
        writer.onGone(() => {
          const i = this.queue.indexOf(w);
          if (i < 0) return; // already given a slot
          this.queue.splice(i, 1);
          reject(clientGone());
        });
      });
    } finally {
      stop();
    }
    this.onWait?.(Number(process.hrtime.bigint() - t0) / 1e9);
    this.say(writer, sideband, `gitwire: ${this.what} slot acquired\n`);
    return this.releaser();
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next) next.resolve(); // the slot passes straight on
      else this.running--;
    };
  }
}
