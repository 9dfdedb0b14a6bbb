/** The built-in SSH server's public surface. */
export { createSshServer, type SshOptions, type SshAuthInfo, type SshCommandRequest, type SshCommandAnswer } from './server.js';
export { KeyDir, keyFileUser, type KeyEntry } from './keydir.js';
export { keyDirAuthenticate, rulesAuthorize, ruleNames } from './authorize.js';
export { loadHostKey, fingerprint, fingerprintLine, HOST_KEY_COMMENT, type HostKey } from './keys.js';
export { parseExec, sqDequote, type ExecRequest, type ExecService } from './exec.js';
export { DEFAULT_SSH_LIMITS, sshLimits, addressGroup, type SshLimits } from './limits.js';
export { DEFAULT_KEX, SUPPORTED_KEX, kexList } from './kex.js';
export { HandshakeRate, UnauthenticatedPool } from './preauth.js';
export { sshCommands, INFO_MAX_REPOSITORIES, INFO_MAX_DIRECTORIES, type SshCommandOptions } from './commands.js';
