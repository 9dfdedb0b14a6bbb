/**
 * The key exchange methods the server offers. The client picks the first
 * of its own list that the server offers, so an attacker picks the
 * costliest one offered, and need compute nothing itself (one public
 * value serves every connection). The server's side of one exchange,
 * measured with Node 20's OpenSSL (2 cores, load 7.5): curve25519 0.12 ms,
 * nistp256 0.31 ms, nistp384 6.7 ms, nistp521 10.2 ms, group14 0.9 ms,
 * group16 6.7 ms, group18 29 ms (~16 ms on an idle machine). The default
 * offer is curve25519 and nistp256 only: every OpenSSH since 6.5 (2014)
 * has curve25519-sha256, and nistp256 is the curve RFC 5656 requires of
 * every ECDH implementation. The others, finite-field groups included,
 * are offered only when configured (`--ssh-kex`, OpenSSH's KexAlgorithms
 * syntax: a list, or `+a,b` to add to the default, or `-a,b` to remove).
 */

/** the default offer, in order of preference */
export const DEFAULT_KEX: readonly string[] = Object.freeze([
  'curve25519-sha256',
  'curve25519-sha256@libssh.org',
  'ecdh-sha2-nistp256',
]);

/** what ssh2 (1.17) can do as a server: its SUPPORTED_KEX (test/ssh-kex checks the two agree) */
export const SUPPORTED_KEX: readonly string[] = Object.freeze([
  ...DEFAULT_KEX,
  'ecdh-sha2-nistp384',
  'ecdh-sha2-nistp521',
  'diffie-hellman-group-exchange-sha256',
  'diffie-hellman-group14-sha256',
  'diffie-hellman-group15-sha512',
  'diffie-hellman-group16-sha512',
  'diffie-hellman-group17-sha512',
  'diffie-hellman-group18-sha512',
  'diffie-hellman-group-exchange-sha1',
  'diffie-hellman-group14-sha1',
  'diffie-hellman-group1-sha1',
]);

/**
 * The offer from a KexAlgorithms-style setting: `a,b` exactly, `+a,b` the
 * default and these after it, `-a,b` the default without these. Throws on
 * a method ssh2 does not have, naming it and what there is, or an empty
 * result.
 */
export function kexList(spec: string | readonly string[] | undefined): string[] {
  if (spec === undefined) return [...DEFAULT_KEX];
  const text = typeof spec === 'string' ? spec : spec.join(',');
  const op = text[0] === '+' || text[0] === '-' ? text[0] : '';
  const names = text.slice(op.length).split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) {
    if (!SUPPORTED_KEX.includes(n)) throw new Error(`unknown key exchange method '${n}' (known: ${SUPPORTED_KEX.join(', ')})`);
  }
  const out = op === '+' ? [...DEFAULT_KEX, ...names.filter((n) => !DEFAULT_KEX.includes(n))]
    : op === '-' ? DEFAULT_KEX.filter((n) => !names.includes(n))
      : [...new Set(names)];
  if (!out.length) throw new Error('no key exchange method left to offer');
  return out;
}
