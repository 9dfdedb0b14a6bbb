/**
 * SSH keys: fingerprints as `ssh-keygen -l` prints them, and host keys
 * read from (or, when the file is missing, created as) OpenSSH's own
 * private key format.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import ssh2 from 'ssh2';

/**
 * A parsed SSH key: what ssh2's parser returns, described here so that
 * gitwire's published types need none of ssh2's (a project without
 * @types/ssh2 compiles against them, and a wrong key type stays an error).
 */
export interface ParsedKey {
  readonly type: string;
  readonly comment: string;
  sign(data: Buffer | string, algo?: string): Buffer;
  verify(data: Buffer | string, signature: Buffer, algo?: string): boolean;
  isPrivateKey(): boolean;
  getPrivatePEM(): string;
  getPublicPEM(): string;
  getPublicSSH(): Buffer;
  equals(key: Buffer | string | ParsedKey): boolean;
}

/** `SHA256:<base64 without padding>` of a public key blob (ssh-keygen -l -E sha256). */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The strings and mpints of an SSH wire blob (type first). */
function fields(blob: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let off = 0;
  while (off + 4 <= blob.length) {
    const n = blob.readUInt32BE(off);
    if (off + 4 + n > blob.length) break;
    out.push(blob.subarray(off + 4, off + 4 + n));
    off += 4 + n;
  }
  return out;
}

/** Key size in bits and ssh-keygen's type label, from the public blob. */
export function keyShape(blob: Buffer): { bits: number; label: string } {
  const f = fields(blob);
  const type = f[0]?.toString('latin1') ?? '';
  if (type === 'ssh-ed25519') return { bits: 256, label: 'ED25519' };
  if (type === 'sk-ssh-ed25519@openssh.com') return { bits: 256, label: 'ED25519-SK' };
  if (type.startsWith('ecdsa-sha2-nistp')) return { bits: Number(type.slice(16)), label: 'ECDSA' };
  if (type.startsWith('sk-ecdsa-sha2-nistp')) return { bits: 256, label: 'ECDSA-SK' };
  if (type === 'ssh-rsa' || type === 'ssh-dss') {
    let n = (type === 'ssh-rsa' ? f[2] : f[1]) ?? Buffer.alloc(0);
    let i = 0;
    while (i < n.length && n[i] === 0) i++;
    n = n.subarray(i);
    const bits = n.length ? (n.length - 1) * 8 + (32 - Math.clz32(n[0]!)) : 0;
    return { bits, label: type === 'ssh-rsa' ? 'RSA' : 'DSA' };
  }
  return { bits: 0, label: type.toUpperCase() };
}

/** One line as `ssh-keygen -l -f FILE` prints it: `256 SHA256:… comment (ED25519)`. */
export function fingerprintLine(key: ParsedKey): string {
  const blob = key.getPublicSSH();
  const { bits, label } = keyShape(blob);
  return `${bits} ${fingerprint(blob)} ${key.comment} (${label})`;
}

export interface HostKey {
  file: string;
  key: ParsedKey;
  /** the file was created now */
  created: boolean;
  /** `ssh-keygen -l` line */
  fingerprint: string;
}

/** Comment of a host key gitwire creates (ssh-keygen shows it after the fingerprint). */
export const HOST_KEY_COMMENT = 'gitwire host key';

/**
 * A new ed25519 key in OpenSSH's private key format (openssh-key-v1,
 * unencrypted), written with mode 0600. The file appears whole or not at
 * all: written under a temporary name, then linked into place, so two
 * servers starting at once end with one key (the second reads the first's).
 */
function createHostKey(file: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // ssh2's writer now and then makes a file its own parser calls malformed (12 of 3,000
  // keys here): such a key is made again, so that a server never fails to start on its new key
  let pair = ssh2.utils.generateKeyPairSync('ed25519', { comment: HOST_KEY_COMMENT });
  for (let i = 0; i < 16 && ssh2.utils.parseKey(pair.private) instanceof Error; i++) {
    pair = ssh2.utils.generateKeyPairSync('ed25519', { comment: HOST_KEY_COMMENT });
  }
  const tmpName = `${file}.${process.pid}.${Date.now()}.tmp`;
  const fd = openSync(tmpName, 'wx', 0o600);
  try {
    writeSync(fd, pair.private);
    fsyncSync(fd);
  } finally { closeSync(fd); }
  try {
    linkSync(tmpName, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    try { unlinkSync(tmpName); } catch { /* gone */ }
  }
}

/**
 * Read a host key (OpenSSH, PEM or PKCS#8, unencrypted), creating the file
 * first when it does not exist. Throws a one-line error naming the file.
 */
export function loadHostKey(file: string, warn: (msg: string) => void = () => undefined): HostKey {
  let created = false;
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`ssh host key ${file}: ${(e as Error).message}`);
    createHostKey(file);
    created = true;
    text = readFileSync(file);
  }
  const parsed = ssh2.utils.parseKey(text);
  const key = Array.isArray(parsed) ? (parsed as ParsedKey[])[0] : parsed;
  if (!key || key instanceof Error) {
    throw new Error(`ssh host key ${file}: ${key instanceof Error ? key.message : 'no key'}${/encrypted|passphrase/i.test(String(key)) ? ' (encrypted host keys are not supported)' : ''}`);
  }
  if (!key.isPrivateKey()) throw new Error(`ssh host key ${file}: not a private key`);
  try {
    const mode = statSync(file).mode & 0o077;
    if (mode) warn(`ssh host key ${file} is readable by others (mode ${(statSync(file).mode & 0o777).toString(8)}); it should be 0600`);
  } catch { /* read already */ }
  return { file, key, created, fingerprint: fingerprintLine(key) };
}
