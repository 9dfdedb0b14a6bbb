/**
 * Short-lived bearer tokens for the LFS HTTP API: what `git-lfs-authenticate`
 * over SSH hands out, and what batch actions carry so that a transfer does
 * not pay a password check per object. A token names one repository (its
 * git directory), one operation and one user, and expires; it is an HMAC
 * with a key made when the server starts (or read from a file, or agreed
 * on through Redis, so that the nodes of a fleet accept each other's
 * tokens), over the claims encrypted with a key derived from it (clients
 * never see the server's paths). A new key signs from the moment it is
 * set; tokens of the key before it stay valid until they expire.
 * A token for one repository or operation is refused for any other.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type LfsOperation = 'download' | 'upload';

export interface TokenClaims {
  /** the repository's git directory (real path) */
  repository: string;
  operation: LfsOperation;
  /** who the token speaks for (undefined: anonymous) */
  user?: string;
  /** seconds since the epoch */
  expiresAt: number;
}

/** the `Authorization` scheme of these tokens */
export const TOKEN_SCHEME = 'Bearer';
const PREFIX = 'gwlfs1.';

/** A signing key and the sealing key derived from it. */
interface Keys { key: Buffer; sealKey: Buffer }
const keysOf = (key: Buffer): Keys => ({ key: Buffer.from(key), sealKey: createHmac('sha256', key).update('gwlfs1 claims').digest() });

export class TokenSigner {
  /** the signing keys, newest first: the first signs, both verify */
  private keys: Keys[];
  constructor(key: Buffer = randomBytes(32), private readonly now: () => number = () => Date.now() / 1000) {
    this.keys = [keysOf(key)];
  }

  /** Sign with `key` from now on; tokens signed with the key before it still verify (one key back is kept). */
  useKey(key: Buffer): void {
    if (this.keys[0]!.key.equals(key)) return;
    this.keys = [keysOf(key), this.keys[0]!];
  }

  private mac(payload: string, k: Keys = this.keys[0]!): Buffer {
    return createHmac('sha256', k.key).update(payload).digest();
  }

  /**
   * The claims are encrypted (AES-256-GCM, a key derived from the signing
   * key): a token names the repository by its real path on the server,
   * which clients must not learn (git-lfs shows its headers in traces).
   */
  private seal(plain: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.keys[0]!.sealKey, iv);
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return Buffer.concat([iv, body, c.getAuthTag()]).toString('base64url');
  }

  private open(payload: string, k: Keys): string | undefined {
    const b = Buffer.from(payload, 'base64url');
    if (b.length < 12 + 16) return undefined;
    try {
      const d = createDecipheriv('aes-256-gcm', k.sealKey, b.subarray(0, 12));
      d.setAuthTag(b.subarray(b.length - 16));
      return Buffer.concat([d.update(b.subarray(12, b.length - 16)), d.final()]).toString('utf8');
    } catch { return undefined; }
  }

  /** A token for these claims, valid for `ttl` seconds. */
  sign(c: Omit<TokenClaims, 'expiresAt'>, ttl: number): { token: string; expiresAt: number } {
    const expiresAt = Math.floor(this.now()) + Math.max(1, Math.floor(ttl));
    const payload = this.seal(JSON.stringify({ r: c.repository, o: c.operation, u: c.user ?? null, e: expiresAt }));
    return { token: `${PREFIX}${payload}.${this.mac(payload).toString('base64url')}`, expiresAt };
  }

  /** The claims of a token this signer made and that has not expired; undefined otherwise. */
  verify(token: string): TokenClaims | undefined {
    if (token.length > 8192 || !token.startsWith(PREFIX)) return undefined;
    const rest = token.slice(PREFIX.length);
    const dot = rest.indexOf('.');
    if (dot < 0) return undefined;
    const payload = rest.slice(0, dot);
    const sigText = rest.slice(dot + 1);
    const sig = Buffer.from(sigText, 'base64url');
    // one spelling per signature: base64's spare low bits in the last character may not differ
    if (sig.toString('base64url') !== sigText) return undefined;
    const k = this.keys.find((c) => {
      const want = this.mac(payload, c);
      return sig.length === want.length && timingSafeEqual(sig, want);
    });
    if (!k) return undefined;
    let v: { r?: unknown; o?: unknown; u?: unknown; e?: unknown };
    const plain = this.open(payload, k);
    if (plain === undefined) return undefined;
    try { v = JSON.parse(plain) as typeof v; } catch { return undefined; }
    if (typeof v.r !== 'string' || (v.o !== 'download' && v.o !== 'upload') || typeof v.e !== 'number') return undefined;
    if (v.u !== null && typeof v.u !== 'string') return undefined;
    if (v.e <= this.now()) return undefined;
    return { repository: v.r, operation: v.o, user: v.u ?? undefined, expiresAt: v.e };
  }

  /** The token in an `Authorization: Bearer …` header, verified. */
  fromHeader(header: string | undefined): TokenClaims | undefined {
    if (!header) return undefined;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return m ? this.verify(m[1]!) : undefined;
  }
}

/** Is this `Authorization` header one of these tokens (whether valid or not)? */
export function isOurToken(header: string): boolean {
  return /^Bearer\s+gwlfs1\./i.test(header);
}

/** Does a token for `has` cover a request for `wants`? An upload token also downloads (push implies fetch). */
export function covers(has: LfsOperation, wants: LfsOperation): boolean {
  return has === wants || has === 'upload';
}
