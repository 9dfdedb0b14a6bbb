/**
 * LFS objects in S3-compatible object storage (`--lfs-store s3://bucket/prefix`),
 * through the official AWS SDK v3 client with its standard environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION; AWS_ENDPOINT_URL_S3
 * or AWS_ENDPOINT_URL for a server other than AWS, addressed path-style).
 * Clients move the bytes themselves with pre-signed URLs: gitwire signs
 * and checks, it never relays an object. An upload URL is signed for the
 * object's exact size and SHA-256 (Content-Length, x-amz-checksum-sha256),
 * so storage that checks checksums refuses other bytes; the verify action
 * and an upload's batch check the stored size, and the stored SHA-256
 * against the oid where the storage gives one back (`verifiedSize`). Keys: `<prefix>/<repository>/aa/bb/<oid>`.
 */
import { HeadObjectCommand, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { oidPath } from '../oid.js';
import { GetPresigner } from './presign.js';
import type { LfsStore, RepositoryStore, SignedRequest } from './types.js';

export interface S3Location { bucket: string; prefix: string }

/** `s3://bucket/some/prefix` → bucket and prefix (no leading or trailing `/`); undefined when it is not one. */
export function parseS3Url(s: string): S3Location | undefined {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(s);
  if (!m) return undefined;
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((p) => p === '..' || p === '.')) return undefined;
  return { bucket: m[1]!, prefix };
}

export interface S3StoreOptions extends S3Location {
  /** a client of your own; otherwise one from the environment */
  client?: S3Client;
  config?: S3ClientConfig;
}

function clientFromEnv(config: S3ClientConfig = {}, env: NodeJS.ProcessEnv = process.env): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL;
  return new S3Client({
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    // no SDK-chosen CRC checksums in pre-signed URLs: the client would have to send headers it does not know
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...config,
  });
}

class S3RepositoryStore implements RepositoryStore {
  constructor(private readonly client: S3Client, private readonly bucket: string, private readonly base: string, private readonly getter: GetPresigner) {}

  private key(oid: string): string { return `${this.base}${oidPath(oid)}`; }

  async size(oid: string): Promise<number | undefined> {
    return (await this.head(oid, false))?.ContentLength;
  }

  /**
   * The size, unless the storage keeps a full-object SHA-256 of it (an
   * upload through our URLs sends one, and AWS S3 checks the bytes
   * against it) and that is not the oid. Objects in S3 are not changed in
   * place: other bytes come only by a new PUT, and one without a checksum
   * (by someone holding the bucket's own credentials) is taken on its size.
   */
  async verifiedSize(oid: string): Promise<number | undefined> {
    const r = await this.head(oid, true);
    if (!r) return undefined;
    const sum = r.ChecksumSHA256;
    // a multipart upload's checksum is of its parts' checksums ("…-<n>", COMPOSITE): it says nothing of the whole
    if (sum && !sum.includes('-') && r.ChecksumType !== 'COMPOSITE' && sum !== Buffer.from(oid, 'hex').toString('base64')) return undefined;
    return r.ContentLength;
  }

  private async head(oid: string, checksum: boolean) {
    try {
      return await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(oid), ...(checksum ? { ChecksumMode: 'ENABLED' as const } : {}) }));
    } catch (e) {
      const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 404 || (e as Error).name === 'NotFound' || (e as Error).name === 'NoSuchKey') return undefined;
      throw e;
    }
  }

  async presign(op: 'download' | 'upload', oid: string, size: number, expiresIn: number): Promise<SignedRequest> {
    if (op === 'download') {
      // signed here, not by the SDK's middleware stack: a batch signs one per object (./presign.ts)
      return { href: await this.getter.url(this.bucket, this.key(oid), expiresIn), expiresIn };
    }
    const checksum = Buffer.from(oid, 'hex').toString('base64');
    const href = await getSignedUrl(this.client, new PutObjectCommand({ Bucket: this.bucket, Key: this.key(oid), ContentLength: size, ChecksumSHA256: checksum }), {
      expiresIn, signableHeaders: new Set(['content-length', 'x-amz-checksum-sha256']),
    });
    return { href, header: { 'x-amz-checksum-sha256': checksum }, expiresIn };
  }
}

export class S3Store implements LfsStore {
  readonly client: S3Client;
  /** download URLs (./presign.ts) */
  readonly getter: GetPresigner;
  constructor(readonly options: S3StoreOptions) {
    this.client = options.client ?? clientFromEnv(options.config);
    this.getter = new GetPresigner(this.client);
  }

  forRepository(_gitDir: string, name: string): RepositoryStore {
    const p = this.options.prefix ? `${this.options.prefix}/` : '';
    return new S3RepositoryStore(this.client, this.options.bucket, `${p}${name.replace(/^\/+|\/+$/g, '')}/`, this.getter);
  }
}
