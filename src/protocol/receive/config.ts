/**
 * receive-pack's configuration (builtin/receive-pack.c receive_pack_config),
 * read once per conversation.
 */
import type { Repository } from '../../repo/repository.js';
import type { HideRefs } from '../../repo/hiderefs.js';
import { parseBool, parseInt_ } from '../../repo/config.js';
import { parseProcReceiveRef, type ProcReceivePattern } from './proc-receive.js';

/** receive.denyCurrentBranch / receive.denyDeleteCurrent */
export type DenyAction = 'unconfigured' | 'ignore' | 'warn' | 'refuse' | 'updateInstead';

function parseDeny(key: string, v: string | null): DenyAction {
  if (v !== null) {
    const l = v.toLowerCase();
    if (l === 'ignore') return 'ignore';
    if (l === 'warn') return 'warn';
    if (l === 'refuse') return 'refuse';
    if (l === 'updateinstead') return 'updateInstead';
  }
  return parseBool(v, key) ? 'refuse' : 'ignore';
}

export interface ReceiveConfig {
  denyDeletes: boolean;
  denyNonFastForwards: boolean;
  denyCurrentBranch: DenyAction;
  denyDeleteCurrent: DenyAction;
  fsckObjects: boolean;
  /** `=id=level,id=level` for --strict (may be empty) */
  fsckMsgTypes: string;
  unpackLimit: number;
  maxInputSize: number;
  advertiseAtomic: boolean;
  advertisePushOptions: boolean;
  advertiseSid: boolean;
  preferOfsDelta: boolean;
  shallowUpdate: boolean;
  /** receive.autogc (default true) */
  autoGc: boolean;
  certNonceSeed?: string;
  /** receive.certNonceSlop (seconds; 0: none) */
  certNonceSlop: number;
  /** seconds; <= 0 disables keepalives */
  keepalive: number;
  hideRefs: HideRefs;
  procReceiveRefs: ProcReceivePattern[];
  bare: boolean;
  lockTimeoutMs: number;
  packedLockTimeoutMs: number;
}

export function readReceiveConfig(repo: Repository): ReceiveConfig {
  const c = repo.config;
  const r: ReceiveConfig = {
    denyDeletes: false, denyNonFastForwards: false,
    denyCurrentBranch: 'unconfigured', denyDeleteCurrent: 'unconfigured',
    fsckObjects: false, fsckMsgTypes: '', unpackLimit: 100, maxInputSize: 0,
    advertiseAtomic: true, advertisePushOptions: false, advertiseSid: false, preferOfsDelta: true,
    shallowUpdate: false, autoGc: true, certNonceSlop: 0, keepalive: 5, hideRefs: repo.hideRefs('receive'), procReceiveRefs: [],
    bare: false, lockTimeoutMs: 100, packedLockTimeoutMs: 1000,
  };
  let receiveFsck = -1, transferFsck = -1, receiveUnpack = -1, transferUnpack = -1;
  let bare: boolean | undefined;
  const addMsg = (s: string) => { r.fsckMsgTypes += `${r.fsckMsgTypes ? ',' : '='}${s}`; };
  for (const e of c.each()) {
    const k = e.key, v = e.value;
    switch (k) {
      case 'receive.denydeletes': r.denyDeletes = parseBool(v, k); break;
      case 'receive.denynonfastforwards': r.denyNonFastForwards = parseBool(v, k); break;
      case 'receive.unpacklimit': receiveUnpack = parseInt_(v, k); break;
      case 'transfer.unpacklimit': transferUnpack = parseInt_(v, k); break;
      case 'receive.fsck.skiplist': if (v) addMsg(`skiplist=${v}`); break;
      case 'receive.fsckobjects': receiveFsck = parseBool(v, k) ? 1 : 0; break;
      case 'transfer.fsckobjects': transferFsck = parseBool(v, k) ? 1 : 0; break;
      case 'receive.denycurrentbranch': r.denyCurrentBranch = parseDeny(k, v); break;
      case 'receive.denydeletecurrent': r.denyDeleteCurrent = parseDeny(k, v); break;
      case 'repack.usedeltabaseoffset': r.preferOfsDelta = parseBool(v, k); break;
      case 'receive.shallowupdate': r.shallowUpdate = parseBool(v, k); break;
      case 'receive.certnonceseed': r.certNonceSeed = v ?? undefined; break;
      case 'receive.autogc': r.autoGc = parseBool(v, k); break;
      case 'receive.certnonceslop': r.certNonceSlop = parseInt_(v, k); break;
      case 'receive.advertiseatomic': r.advertiseAtomic = parseBool(v, k); break;
      case 'receive.advertisepushoptions': r.advertisePushOptions = parseBool(v, k); break;
      case 'receive.keepalive': r.keepalive = parseInt_(v, k); break;
      case 'receive.maxinputsize': r.maxInputSize = parseInt_(v, k); break;
      case 'receive.procreceiverefs': if (v) r.procReceiveRefs.push(parseProcReceiveRef(v)); break;
      case 'transfer.advertisesid': r.advertiseSid = parseBool(v, k); break;
      case 'core.bare': bare = parseBool(v, k); break;
      case 'core.filesreflocktimeout': r.lockTimeoutMs = parseInt_(v, k); break;
      case 'core.packedrefstimeout': r.packedLockTimeoutMs = parseInt_(v, k); break;
      default:
        if (k.startsWith('receive.fsck.') && v !== null) addMsg(`${k.slice(13)}=${v}`);
    }
  }
  r.fsckObjects = receiveFsck >= 0 ? receiveFsck === 1 : transferFsck === 1;
  if (receiveUnpack >= 0) r.unpackLimit = receiveUnpack;
  else if (transferUnpack >= 0) r.unpackLimit = transferUnpack;
  r.bare = bare ?? false;
  return r;
}
