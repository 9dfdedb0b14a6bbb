/**
 * receive-pack's configuration (builtin/receive-pack.c receive_pack_config),
 * read once per conversation.
 */
import type { Repository } from '../../repo/repository.js';
import type { ConfigEntry } from '../../repo/config.js';
import type { HideRefs } from '../../repo/hiderefs.js';
import { parseBool, parseInt_ } from '../../repo/config.js';
import { GitwireError } from '../../errors.js';
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
  /** receive.updateServerInfo (default false): info/refs and objects/info/packs after a push */
  updateServerInfo: boolean;
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

/** git 2.55's fsck message ids (fsck.h), as config keys spell them: lower case, no underscores */
const FSCK_MSG_IDS = new Set(('nulinheader unterminatedheader badheadercontinuation baddate baddateoverflow bademail badgpgsig badheadtarget ' +
  'badname badobjectsha1 badpackedrefentry badpackedrefheader badparentsha1 badreferentname badrefcontent badreffiletype badrefname badrefoid ' +
  'badtimezone badtree badtreesha1 badtype duplicateentries gitattributesblob gitattributeslarge gitattributeslinelength gitattributesmissing ' +
  'gitmodulesblob gitmoduleslarge gitmodulesmissing gitmodulesname gitmodulespath gitmodulessymlink gitmodulesupdate gitmodulesurl ' +
  'missingauthor missingcommitter missingemail missingnamebeforeemail missingobject missingspacebeforedate missingspacebeforeemail missingtag ' +
  'missingtagentry missingtree missingtype missingtypeentry multipleauthors packedrefentrynotterminated packedrefunsorted treenotsorted ' +
  'unknowntype zeropaddeddate badreftabletablename emptyname fullpathname hasdot hasdotdot hasdotgit largepathname nullsha1 nulincommit ' +
  'zeropaddedfilemode badfilemode badtagname emptypackedrefsfile gitattributessymlink gitignoresymlink gitmodulesparse mailmapsymlink ' +
  'missingtaggerentry refmissingnewline symlinkref symreftargetisnotaref trailingrefcontent extraheaderentry').split(' '));

/** config_error_nonbool() and git_die_config_linenr(): a key that needs a value has none */
function missingValue(e: ConfigEntry): GitwireError {
  const file = e.scope === 'local' ? 'config' : e.scope === 'worktree' ? 'config.worktree' : e.origin;
  return new GitwireError('GW_CONFIG', e.scope === 'command'
    ? `unable to parse '${e.key}' from command-line config`
    : `bad config variable '${e.key}' in file '${file}' at line ${e.line ?? 0}`, { errors: [`missing value for '${e.key}'`] });
}

/**
 * @param warn receive-pack's own warnings while it reads its configuration
 *   (git's warning(): on its stderr, before the advertisement)
 */
export function readReceiveConfig(repo: Repository, warn: (msg: string) => void = () => undefined): ReceiveConfig {
  const c = repo.config;
  const r: ReceiveConfig = {
    denyDeletes: false, denyNonFastForwards: false,
    denyCurrentBranch: 'unconfigured', denyDeleteCurrent: 'unconfigured',
    fsckObjects: false, fsckMsgTypes: '', unpackLimit: 100, maxInputSize: 0,
    advertiseAtomic: true, advertisePushOptions: false, advertiseSid: false, preferOfsDelta: true,
    shallowUpdate: false, autoGc: true, updateServerInfo: false, certNonceSlop: 0, keepalive: 5, hideRefs: repo.hideRefs('receive'), procReceiveRefs: [],
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
      case 'receive.fsck.skiplist': if (v === null) throw missingValue(e); if (v) addMsg(`skiplist=${v}`); break;
      case 'receive.fsckobjects': receiveFsck = parseBool(v, k) ? 1 : 0; break;
      case 'transfer.fsckobjects': transferFsck = parseBool(v, k) ? 1 : 0; break;
      case 'receive.denycurrentbranch': r.denyCurrentBranch = parseDeny(k, v); break;
      case 'receive.denydeletecurrent': r.denyDeleteCurrent = parseDeny(k, v); break;
      case 'repack.usedeltabaseoffset': r.preferOfsDelta = parseBool(v, k); break;
      case 'receive.shallowupdate': r.shallowUpdate = parseBool(v, k); break;
      case 'receive.certnonceseed': r.certNonceSeed = v ?? undefined; break;
      case 'receive.autogc': r.autoGc = parseBool(v, k); break;
      case 'receive.updateserverinfo': r.updateServerInfo = parseBool(v, k); break;
      case 'receive.certnonceslop': r.certNonceSlop = parseInt_(v, k); break;
      case 'receive.advertiseatomic': r.advertiseAtomic = parseBool(v, k); break;
      case 'receive.advertisepushoptions': r.advertisePushOptions = parseBool(v, k); break;
      case 'receive.keepalive': r.keepalive = parseInt_(v, k); break;
      case 'receive.maxinputsize': r.maxInputSize = parseInt_(v, k); break;
      case 'receive.procreceiverefs': if (v === null) throw missingValue(e); if (v) r.procReceiveRefs.push(parseProcReceiveRef(v)); break;
      case 'transfer.advertisesid': r.advertiseSid = parseBool(v, k); break;
      case 'core.bare': bare = parseBool(v, k); break;
      case 'core.filesreflocktimeout': r.lockTimeoutMs = parseInt_(v, k); break;
      case 'core.packedrefstimeout': r.packedLockTimeoutMs = parseInt_(v, k); break;
      default:
        if (k.startsWith('receive.fsck.')) {
          if (v === null) throw missingValue(e);
          // is_valid_msg_type(): an unknown id is dropped with a warning, an unknown type is fatal
          const id = k.slice(13);
          if (!FSCK_MSG_IDS.has(id.replace(/_/g, ''))) { warn(`warning: skipping unknown msg id '${id}'\n`); break; }
          if (v !== 'error' && v !== 'warn' && v !== 'ignore') throw new GitwireError('GW_CONFIG', `Unknown fsck message type: '${v}'`);
          addMsg(`${id}=${v}`);
        }
    }
  }
  r.fsckObjects = receiveFsck >= 0 ? receiveFsck === 1 : transferFsck === 1;
  if (receiveUnpack >= 0) r.unpackLimit = receiveUnpack;
  else if (transferUnpack >= 0) r.unpackLimit = transferUnpack;
  r.bare = bare ?? false;
  return r;
}
