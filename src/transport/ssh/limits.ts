/**
 * The SSH server's own limits (separate from HTTP's and git://'s), each
 * with a default, and the per-address count of connections that have not
 * authenticated yet (OpenSSH's MaxStartups, per source).
 */

export interface SshLimits {
  /** connections open at once, authenticated or not (0: unlimited) */
  maxConnections: number;
  /** connections from one address that have not authenticated yet (0: unlimited) */
  maxUnauthenticatedPerAddress: number;
  /** seconds from accept until the client has authenticated (OpenSSH's LoginGraceTime; 0: none) */
  loginGraceTime: number;
  /** failed authentication attempts on one connection before it is closed (MaxAuthTries) */
  maxAuthTries: number;
  /** session channels open at once on one connection (MaxSessions) */
  maxChannels: number;
  /** seconds a connection may go without channel data either way, or without a channel, before it is closed (0: never) */
  idleTimeout: number;
  /** seconds between keepalive requests to an authenticated client (0: none) */
  keepaliveInterval: number;
  /** keepalives left unanswered before the connection is dropped */
  keepaliveCountMax: number;
}

export const DEFAULT_SSH_LIMITS: Readonly<SshLimits> = Object.freeze({
  maxConnections: 256,
  maxUnauthenticatedPerAddress: 64,
  loginGraceTime: 30,
  maxAuthTries: 6,
  maxChannels: 10,
  idleTimeout: 120,
  keepaliveInterval: 15,
  keepaliveCountMax: 3,
});

/** The limits with defaults for what is not given; throws on a value that is not a number ≥ 0. */
export function sshLimits(given: Partial<SshLimits> = {}): SshLimits {
  const out = { ...DEFAULT_SSH_LIMITS };
  for (const [k, v] of Object.entries(given) as Array<[keyof SshLimits, number | undefined]>) {
    if (v === undefined) continue;
    if (!Object.hasOwn(DEFAULT_SSH_LIMITS, k)) throw new Error(`unknown ssh limit '${k}'`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`ssh limit ${k}: not a number >= 0: ${String(v)}`);
    out[k] = v;
  }
  return out;
}

/** Counts per address; an address at zero is forgotten. */
export class AddressCounts {
  private readonly counts = new Map<string, number>();
  get(addr: string): number { return this.counts.get(addr) ?? 0; }
  inc(addr: string): void { this.counts.set(addr, this.get(addr) + 1); }
  dec(addr: string): void {
    const n = this.get(addr) - 1;
    if (n > 0) this.counts.set(addr, n); else this.counts.delete(addr);
  }
}
