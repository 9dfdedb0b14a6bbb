/**
 * Bundles in S3-compatible object storage (`serve --bundle-store
 * s3://bucket/prefix`): the same client, environment and pre-signed URLs
 * as the LFS store (lfs/store/s3.ts). A bundle is made on local disk,
 * uploaded as `<prefix>/<repository>/<file>`, and its local file cut to
 * its header (what the server reads: the refs, for "did this clone take
 * it"). The bundle-uri list gives each request a URL signed for an hour:
 * no bundle byte passes through gitwire.
 */
import { createReadStream } from 'node:fs';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { S3Store, type S3StoreOptions } from '../lfs/store/s3.js';

/** how long a signed download URL is good for (seconds) */
export const SIGNED_URL_SECONDS = 3600;

export class BundleBucket {
  private readonly store: S3Store;
  constructor(readonly options: S3StoreOptions) { this.store = new S3Store(options); }

  key(repository: string, file: string): string {
    const p = this.options.prefix ? `${this.options.prefix}/` : '';
    return `${p}${repository.replace(/^\/+|\/+$/g, '')}/${file}`;
  }

  async upload(key: string, file: string, size: number): Promise<void> {
    await this.store.client.send(new PutObjectCommand({ Bucket: this.options.bucket, Key: key, Body: createReadStream(file), ContentLength: size, ContentType: 'application/x-git-bundle' }));
  }

  /** A download URL of `key`, signed now (lfs/store/presign.ts: without the SDK's middleware stack). */
  url(key: string): Promise<string> {
    return this.store.getter.url(this.options.bucket, key, SIGNED_URL_SECONDS);
  }

  async remove(key: string): Promise<void> {
    await this.store.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: key }));
  }
}
