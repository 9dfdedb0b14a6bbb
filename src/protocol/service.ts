/**
 * The service table: what a transport can ask for by name. A transport
 * (stdio, smart HTTP, git://) picks a row and hands it the byte source and
 * sink; the conversation itself lives in the row's `serve`.
 */
import type { Readable } from 'node:stream';
import type { Sink } from '../pktline/sink.js';
import { uploadPack, type UploadPackOptions, type UploadPackResult } from './upload-pack.js';
import type { ReceivePackOptions, ReceivePackResult } from './receive-pack.js';

export type ServiceName = 'git-upload-pack' | 'git-receive-pack';

/** Options every service takes (each service's own options extend these). */
export interface CommonServiceOptions {
  /** the repository, found as git's enter_repo() does (`--strict`: exactly this path) */
  directory: string;
  /** the repository as the client named it, for errors said on the wire (default: `directory`) */
  repository?: string;
  strict?: boolean;
  /** one request/response round (smart HTTP) */
  statelessRpc?: boolean;
  /** the advertisement only (`--advertise-refs`, `--http-backend-info-refs`) */
  advertiseRefs?: boolean;
  /** seconds of client inactivity before giving up */
  timeout?: number;
  env?: NodeJS.ProcessEnv;
  input: Readable | AsyncIterable<Buffer> | Buffer;
  output: Sink;
  /** trace2 argv for the start event */
  argv?: string[];
  /** smart HTTP's `# service=<name>` line and flush-pkt first, in the same write as what follows (not for a v2 request) */
  announceService?: boolean;
}

/** Options a transport may pass to any row: the common ones plus each service's own (ignored by the others). */
export type ServiceOptions = CommonServiceOptions & Partial<Omit<UploadPackOptions, keyof CommonServiceOptions>> & Partial<Omit<ReceivePackOptions, keyof CommonServiceOptions>>;

/** What every service reports (for logs and metrics), plus each one's own counters. */
export type ServiceResult = { protocol: 0 | 1 | 2; command: string; writes: number; bytes: number }
  & Partial<Omit<UploadPackResult, 'protocol' | 'command' | 'writes' | 'bytes'>>
  & Partial<Omit<ReceivePackResult, 'protocol' | 'command' | 'writes' | 'bytes'>>;

export interface Service<O extends CommonServiceOptions = ServiceOptions, R = ServiceResult> {
  readonly name: ServiceName;
  /** smart HTTP content types (gitprotocol-http) */
  readonly http: { advertisement: string; request: string; result: string };
  /** one conversation; `advertiseRefs` for the advertisement only, `statelessRpc` for one request/response round */
  serve(o: O): Promise<R>;
}

const uploadPackService: Service<UploadPackOptions, UploadPackResult> = {
  name: 'git-upload-pack',
  http: {
    advertisement: 'application/x-git-upload-pack-advertisement',
    request: 'application/x-git-upload-pack-request',
    result: 'application/x-git-upload-pack-result',
  },
  serve: uploadPack,
};

const receivePackService: Service<ReceivePackOptions, ReceivePackResult> = {
  name: 'git-receive-pack',
  http: {
    advertisement: 'application/x-git-receive-pack-advertisement',
    request: 'application/x-git-receive-pack-request',
    result: 'application/x-git-receive-pack-result',
  },
  // loaded only when a push comes in
  serve: async (o) => (await import('./receive-pack.js')).receivePack(o),
};

export const services = {
  'git-upload-pack': uploadPackService,
  'git-receive-pack': receivePackService,
} as const satisfies Record<ServiceName, Service<never, unknown>>;

/** The service for a wire name (`git-upload-pack`), or undefined for one gitwire does not offer. */
export function findService(name: string): Service | undefined {
  return Object.hasOwn(services, name) ? (services[name as ServiceName] as unknown as Service) : undefined;
}
