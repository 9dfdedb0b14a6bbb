/**
 * The service table: what a transport can ask for by name. A transport
 * (stdio, smart HTTP, git://) picks a row and hands it the byte source and
 * sink; the conversation itself lives in the row's `serve`.
 */
import { uploadPack, type UploadPackOptions, type UploadPackResult } from './upload-pack.js';

export type ServiceName = 'git-upload-pack';

/** Options every service takes; a service may accept more. */
export type ServiceOptions = UploadPackOptions;
export type ServiceResult = UploadPackResult;

export interface Service {
  readonly name: ServiceName;
  /** smart HTTP content types (gitprotocol-http) */
  readonly http: { advertisement: string; request: string; result: string };
  /** one conversation; `advertiseRefs` for the advertisement only, `statelessRpc` for one request/response round */
  serve(o: ServiceOptions): Promise<ServiceResult>;
}

const uploadPackService: Service = {
  name: 'git-upload-pack',
  http: {
    advertisement: 'application/x-git-upload-pack-advertisement',
    request: 'application/x-git-upload-pack-request',
    result: 'application/x-git-upload-pack-result',
  },
  serve: uploadPack,
};

export const services: Readonly<Record<ServiceName, Service>> = {
  'git-upload-pack': uploadPackService,
};

/** The service for a wire name (`git-upload-pack`), or undefined for one gitwire does not offer. */
export function findService(name: string): Service | undefined {
  return Object.hasOwn(services, name) ? services[name as ServiceName] : undefined;
}
