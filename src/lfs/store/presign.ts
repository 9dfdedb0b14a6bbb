/**
 * Pre-signed GET URLs of S3 objects, signed here (AWS Signature Version 4
 * in query parameters, as AWS's "Authenticating Requests: Using Query
 * Parameters" describes it) with node:crypto, rather than by the SDK's
 * getSignedUrl: that builds a signer, resolves the endpoint twice and runs
 * a clone of the client's middleware stack for every URL (0.25-0.6 ms of
 * CPU each, warm; 0.02 ms here). A bundle-uri list signs a URL per
 * request, an LFS download batch one per object.
 *
 * The URL's shape is the SDK's: its endpoint (path-style or virtual-hosted,
 * a custom endpoint, FIPS or dual-stack), its signing region and service,
 * and the parameters it signs along (`x-id=GetObject`, the unsigned
 * payload) are learned once per bucket from one URL the SDK signs for a
 * probe key, and that URL's signature is made again here from the same
 * inputs: only when the two are equal are the next URLs signed here.
 * Anything else (another algorithm, signed headers other than `host`, a
 * mismatch) leaves the bucket's URLs to the SDK. Credentials are the
 * client's (its provider caches and renews them); the signing key is
 * kept per secret, day, region and service.
 */
import { createHash, createHmac } from 'node:crypto';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';

export interface SigV4Credentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string }

/** Where a bucket's objects are fetched and how their URLs are signed (learned from the SDK: learnTarget). */
export interface PresignTarget {
  /** `scheme://host[:port]` */
  origin: string;
  /** the Host header as signed: the host, and the port when it is not the scheme's */
  host: string;
  /** the URL path before the key, encoded: `/bucket` path-style, empty virtual-hosted */
  pathPrefix: string;
  region: string;
  service: string;
  /** the query parameters signed along with the credential's (name, value; not encoded) */
  extra: ReadonlyArray<readonly [string, string]>;
  /** the payload hash in the canonical request */
  payload: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
/** the longest a SigV4 pre-signed URL may be good for (seconds) */
export const MAX_EXPIRES = 7 * 24 * 3600;
const HEX = '0123456789ABCDEF';

/**
 * SigV4's UriEncode: every byte of the UTF-8 form as `%XX` (upper case)
 * but the unreserved `A-Z a-z 0-9 - . _ ~`, and `/` too when `keepSlash`
 * (an object key in a path). A lone surrogate is encoded as U+FFFD is (the
 * bytes a UTF-8 encoder gives it), never thrown on.
 */
export function uriEncode(s: string, keepSlash: boolean): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    if ((b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2e || b === 0x5f || b === 0x7e || (keepSlash && b === 0x2f)) out += String.fromCharCode(b);
    else out += `%${HEX[b >> 4]}${HEX[b & 15]}`;
  }
  return out;
}

/** `20130524T000000Z` */
function amzDate(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

/** the last signing key made: a URL a request is made with the same one all day */
let cachedKey: { secret: string; day: string; region: string; service: string; key: Buffer } | undefined;

function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  const c = cachedKey;
  if (c && c.secret === secret && c.day === day && c.region === region && c.service === service) return c.key;
  const h = (k: string | Buffer, d: string) => createHmac('sha256', k).update(d, 'utf8').digest();
  const key = h(h(h(h(`AWS4${secret}`, day), region), service), 'aws4_request');
  cachedKey = { secret, day, region, service, key };
  return key;
}

/**
 * A pre-signed GET URL of `key` in `target`, good for `expiresIn` seconds
 * from `now`. Pure: the same inputs give the same URL (the tests compare it
 * with AWS's documented example and with the SDK's).
 */
export function presignGet(target: PresignTarget, key: string, creds: SigV4Credentials, expiresIn: number, now: Date): string {
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_EXPIRES) throw new RangeError(`a pre-signed URL is good for 1 to ${MAX_EXPIRES} seconds, not ${expiresIn}`);
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const scope = `${day}/${target.region}/${target.service}/aws4_request`;
  const params: Array<[string, string]> = target.extra.map(([k, v]) => [uriEncode(k, false), uriEncode(v, false)]);
  params.push(
    ['X-Amz-Algorithm', ALGORITHM],
    ['X-Amz-Credential', uriEncode(`${creds.accessKeyId}/${scope}`, false)],
    ['X-Amz-Date', date],
    ['X-Amz-Expires', String(expiresIn)],
    ['X-Amz-SignedHeaders', 'host'],
  );
  if (creds.sessionToken) params.push(['X-Amz-Security-Token', uriEncode(creds.sessionToken, false)]);
  // sorted by the encoded name's bytes (upper case before lower case), as the canonical query string is
  params.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const query = params.map(([k, v]) => `${k}=${v}`).join('&');
  const path = `${target.pathPrefix}/${uriEncode(key, true)}`;
  const canonical = `GET\n${path}\n${query}\nhost:${target.host}\n\nhost\n${target.payload}`;
  const toSign = `${ALGORITHM}\n${date}\n${scope}\n${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
  const signature = createHmac('sha256', signingKey(creds.secretAccessKey, day, target.region, target.service)).update(toSign, 'utf8').digest('hex');
  // the signature sorts after every other X-Amz- parameter but the security token, and before x-id: placed as the SDK places it
  const all = [...params, ['X-Amz-Signature', signature] as [string, string]];
  all.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return `${target.origin}${path}?${all.map(([k, v]) => `${k}=${v}`).join('&')}`;
}

/** the key the SDK signs to show a bucket's URL shape: every kind of byte a key may hold goes through uriEncode alike */
const PROBE_KEY = 'gitwire-probe/k';
/** after a probe that did not match, the SDK signs this long before the next probe */
const RETRY_PROBE_MS = 10 * 60_000;

/**
 * What `url` (the SDK's pre-signed URL of PROBE_KEY) says of the bucket's
 * URLs, or undefined when they are not ones this module makes (another
 * algorithm, headers other than `host` signed, an unknown parameter).
 */
export function learnTarget(url: string): { target: PresignTarget; accessKeyId: string; date: string; expires: number; signature: string } | undefined {
  let u: URL;
  try { u = new URL(url); } catch { return undefined; }
  const encodedProbe = `/${uriEncode(PROBE_KEY, true)}`;
  if (!u.pathname.endsWith(encodedProbe) || u.username || u.password || u.hash) return undefined;
  const extra: Array<[string, string]> = [];
  let credential: string | undefined, date: string | undefined, expires: string | undefined, signature: string | undefined;
  let payload = 'UNSIGNED-PAYLOAD';
  for (const [k, v] of u.searchParams) {
    switch (k) {
      case 'X-Amz-Algorithm': if (v !== ALGORITHM) return undefined; break;
      case 'X-Amz-SignedHeaders': if (v !== 'host') return undefined; break;
      case 'X-Amz-Credential': credential = v; break;
      case 'X-Amz-Date': date = v; break;
      case 'X-Amz-Expires': expires = v; break;
      case 'X-Amz-Signature': signature = v; break;
      // a session's token: this module adds the current one to each URL
      case 'X-Amz-Security-Token': break;
      case 'X-Amz-Content-Sha256': payload = v; extra.push([k, v]); break;
      default: extra.push([k, v]);
    }
  }
  const scope = credential?.split('/');
  if (!scope || scope.length !== 5 || scope[4] !== 'aws4_request' || !date || !expires || !signature) return undefined;
  const host = u.host;
  return {
    target: { origin: u.origin, host, pathPrefix: u.pathname.slice(0, -encodedProbe.length), region: scope[2]!, service: scope[3]!, extra, payload },
    accessKeyId: scope[0]!, date, expires: Number(expires), signature,
  };
}

/**
 * GET URLs of a client's objects, signed here once the SDK's probe URL for
 * the bucket was made again byte for byte (see the file's comment); else
 * by the SDK.
 */
export class GetPresigner {
  private readonly targets = new Map<string, PresignTarget | number>();
  constructor(private readonly client: S3Client) {}

  private async credentials(): Promise<SigV4Credentials> {
    const provider = this.client.config.credentials as unknown as (() => Promise<SigV4Credentials>) | SigV4Credentials;
    return typeof provider === 'function' ? await provider() : provider;
  }

  async url(bucket: string, key: string, expiresIn: number): Promise<string> {
    // a lifetime SigV4 has no room for: the SDK's answer (its error), as before
    const fits = Number.isInteger(expiresIn) && expiresIn >= 1 && expiresIn <= MAX_EXPIRES;
    let t = this.targets.get(bucket);
    if (fits && (t === undefined || (typeof t === 'number' && Date.now() >= t))) t = await this.probe(bucket, expiresIn);
    if (!fits || t === undefined || typeof t === 'number') return getSignedUrl(this.client, new GetObjectCommand({ Bucket: bucket, Key: key }), { expiresIn });
    return presignGet(t, key, await this.credentials(), expiresIn, new Date());
  }

  /** Learn `bucket`'s URL shape from the SDK, and check that this module signs as it does. */
  private async probe(bucket: string, expiresIn: number): Promise<PresignTarget | number> {
    let found: PresignTarget | number = Date.now() + RETRY_PROBE_MS;
    try {
      // whole seconds: the URL's date has no more
      const now = new Date(Math.floor(Date.now() / 1000) * 1000);
      const creds = await this.credentials();
      const url = await getSignedUrl(this.client, new GetObjectCommand({ Bucket: bucket, Key: PROBE_KEY }), { expiresIn, signingDate: now });
      const l = learnTarget(url);
      if (l && l.accessKeyId === creds.accessKeyId && presignGet(l.target, PROBE_KEY, creds, expiresIn, now) === url) found = l.target;
    } catch { /* the SDK signs (and says what is wrong) */ }
    if (this.targets.size >= 64) this.targets.clear();
    this.targets.set(bucket, found);
    return found;
  }
}
