/**
 * Which backend holds a repository's refs: `extensions.refStorage`
 * (git's ref_storage_format), `files` when unset.
 */
import { GitwireError } from '../../errors.js';
import { Config } from '../config.js';
import { FilesRefStore } from './files/store.js';
import { ReftableRefStore } from './reftable/store.js';
import type { RefFormat, RefStore } from './ref-store.js';

/** The format `extensions.refStorage` names; an unknown one is refused as git refuses it. */
export function refFormatOf(config: Config): RefFormat {
  const v = config.get('extensions.refstorage');
  if (v === undefined || v === null) return 'files';
  if (v === 'files' || v === 'reftable') return v;
  throw new GitwireError('GW_UNSUPPORTED_REPO', `invalid value for 'extensions.refstorage': '${v}'`);
}

export function openRefStore(format: RefFormat, gitDir: string, commonDir: string, hashLen: number, config: Config): RefStore {
  return format === 'reftable' ? new ReftableRefStore(gitDir, commonDir, hashLen, config) : new FilesRefStore(gitDir, commonDir, hashLen);
}

/** The refs of another repository (an alternate's), in the format its own config names. */
export function openRefStoreAt(gitDir: string, hashLen: number, env: NodeJS.ProcessEnv): RefStore {
  const config = Config.load(gitDir, env);
  return openRefStore(refFormatOf(config), gitDir, gitDir, hashLen, config);
}
