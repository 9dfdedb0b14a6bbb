/**
 * Typed errors with stable codes. Each renders itself at one boundary per
 * service: for the wire (`ERR <msg>`, or band 3 under v2 sideband-all,
 * through the packet writer) and for the CLI (`fatal: <msg>`, 128), as
 * git's die() and packet_writer_error() do. Code below a boundary throws;
 * it never writes an error itself.
 */
const BRAND = Symbol.for('gitwire.error');

/**
 * Every code, with what it means and whether its message goes on the wire
 * by default (`wire: true`). Most of git's fatal errors go to stderr only;
 * those that also reach the client name their wire text when thrown.
 */
export const ERROR_CODES = {
  GW_PKT_BAD_LENGTH_CHAR: { wire: false, summary: 'a pkt-line header is not four hex digits' },
  GW_PKT_BAD_LENGTH: { wire: false, summary: 'a pkt-line length is 1, 2 or 3, or past the end' },
  GW_PKT_TOO_LONG: { wire: false, summary: 'a pkt-line payload is larger than 65516 bytes' },
  GW_PKT_EOF: { wire: false, summary: 'the stream ended inside a conversation' },
  GW_PKT_REMOTE_ERR: { wire: false, summary: 'the other side sent ERR' },
  GW_NOT_A_REPO: { wire: false, summary: 'the directory is no git repository' },
  GW_UNSUPPORTED_REPO: { wire: false, summary: 'a repository feature gitwire does not read' },
  GW_NO_GIT: { wire: false, summary: 'a push needs git on the server (index-pack), and none was found' },
  GW_CONFIG: { wire: false, summary: 'bad configuration' },
  GW_OBJECT_MISSING: { wire: false, summary: 'an object is not in the repository' },
  GW_OBJECT_CORRUPT: { wire: false, summary: 'an object cannot be read' },
  GW_PROTOCOL: { wire: false, summary: 'the client broke the protocol' },
  GW_NOT_OUR_REF: { wire: false, summary: 'a want the policy does not allow' },
  GW_PACK_FAILED: { wire: false, summary: 'pack-objects failed' },
  GW_CLIENT_GONE: { wire: false, summary: 'the client went away' },
  GW_USAGE: { wire: false, summary: 'bad command-line usage' },
  GW_TIMEOUT: { wire: false, summary: 'the client was idle too long' },
  GW_LIMIT: { wire: true, summary: 'a request passed a server limit (the server says so on the wire)' },
  GW_REF_UPDATE: { wire: false, summary: 'a ref could not be updated' },
  GW_REFS_CORRUPT: { wire: false, summary: 'ref storage cannot be read (a corrupt reftable or packed-refs); the service boundary tells the client (refsUnreadable)' },
  GW_PUSH_REJECTED: { wire: false, summary: 'a push was refused' },
  GW_DUBIOUS_OWNERSHIP: { wire: false, summary: 'the repository belongs to another user and safe.directory does not list it' },
  GW_REPO_EXISTS: { wire: false, summary: 'a repository (or something else) is already at the path to create' },
  GW_REPO_NAME: { wire: false, summary: 'a repository name that may not be created (characters, depth, length, inside another repository)' },
  GW_REPO_ADMIN: { wire: false, summary: 'a repository could not be forked, renamed or pooled as asked (admin/)' },
  GW_BUNDLE: { wire: false, summary: 'a bundle could not be made, stored or read (bundle/)' },
} as const satisfies Record<string, { wire: boolean; summary: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Where wire errors go: the packet writer (pktline/writer.ts) chooses ERR or band 3. */
export interface ErrorWriter { error(msg: string): void }

export interface GitwireErrorOptions {
  /** the text sent to the client at the boundary (git's packet_writer_error); false: nothing is sent */
  wire?: string | false;
  exitCode?: number;
  httpStatus?: number;
  cause?: unknown;
  errors?: string[];
  /** structured details for logs and library users (ids, names, limits) */
  data?: Readonly<Record<string, unknown>>;
}

const NO_DATA: Readonly<Record<string, unknown>> = Object.freeze({});

export class GitwireError extends Error {
  readonly code: ErrorCode;
  /** what the boundary sends on the wire (git's wording), or undefined for git's stderr-only die() */
  readonly wire: string | undefined;
  readonly exitCode: number;
  /** `error:` lines git prints before dying (e.g. a config callback's complaint) */
  readonly errors: readonly string[];
  /** the HTTP status this error answers with before a response has started (413, 415, 400, …) */
  readonly httpStatus?: number;
  /** structured details (e.g. `{ oid }` for GW_NOT_OUR_REF, `{ limit }` for GW_LIMIT) */
  readonly data: Readonly<Record<string, unknown>>;
  constructor(code: ErrorCode, message: string, opts: GitwireErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    const wire = opts.wire ?? (ERROR_CODES[code].wire ? message : false);
    this.wire = wire === false ? undefined : wire;
    this.exitCode = opts.exitCode ?? 128;
    this.errors = opts.errors ?? [];
    if (opts.httpStatus !== undefined) this.httpStatus = opts.httpStatus;
    this.data = opts.data ? Object.freeze({ ...opts.data }) : NO_DATA;
    this.name = 'GitwireError';
  }
  get [BRAND]() { return true; }
  static override [Symbol.hasInstance](x: unknown): boolean {
    return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[BRAND] === true;
  }
  /**
   * Send the error to the client, if git does (ERR, or band 3 when the
   * writer frames every packet). Returns whether anything was written.
   */
  toWire(w: ErrorWriter): boolean {
    if (this.wire === undefined) return false;
    w.error(this.wire);
    return true;
  }
  /** `error: …` lines and `fatal: <msg>`, as git's die() prints them. */
  toCli(): string { return `${this.errors.map((e) => `error: ${e}\n`).join('')}fatal: ${this.message}\n`; }
  /** The CLI text and exit code for anything thrown (non-gitwire errors die as git's do: 128). */
  static forCli(e: unknown): { text: string; exitCode: number } {
    if (e instanceof GitwireError) return { text: e.toCli(), exitCode: e.exitCode };
    const m = (e as { message?: unknown } | null | undefined)?.message;
    const msg = m === undefined || m === null ? String(e) : typeof m === 'string' ? m : JSON.stringify(m);
    return { text: `fatal: ${msg}\n`, exitCode: 128 };
  }
}

export const pktBadLengthChar = (hdr: string) =>
  new GitwireError('GW_PKT_BAD_LENGTH_CHAR', `protocol error: bad line length character: ${hdr}`);
export const pktBadLength = (len: number) =>
  new GitwireError('GW_PKT_BAD_LENGTH', `protocol error: bad line length ${len}`);
export const pktEof = () => new GitwireError('GW_PKT_EOF', 'the remote end hung up unexpectedly');
export const clientGone = (cause?: unknown) =>
  new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly', { cause });
/** A protocol violation in git's words; `wire` when git also tells the client (packet_writer_error before die). */
export const protocolError = (msg: string, opts: { wire?: boolean; data?: Record<string, unknown> } = {}) =>
  new GitwireError('GW_PROTOCOL', msg, { wire: opts.wire ? msg : false, data: opts.data });
/** check_non_tip()/parse_want(): the client is told `upload-pack: not our ref`, stderr says `git upload-pack: …`. */
export const notOurRef = (hex: string) =>
  new GitwireError('GW_NOT_OUR_REF', `git upload-pack: not our ref ${hex}`, { wire: `upload-pack: not our ref ${hex}`, data: { oid: hex } });
/** A server limit (protocol/limits.ts): said on the wire, with the limit in `data`. */
export const limitError = (msg: string, limit: number) => new GitwireError('GW_LIMIT', msg, { data: { limit } });
export const notARepo = (dir: string) =>
  new GitwireError('GW_NOT_A_REPO', `'${dir}' does not appear to be a git repository`, { data: { directory: dir } });

/**
 * Ref storage that cannot be read (a damaged reftable table or stack, a
 * packed-refs line): the message names the file, for the log; `kind` is
 * git's phrase for it ("corrupt reftable file", "unexpected line in …").
 */
export const refsCorrupt = (file: string, kind: string, why: string) =>
  new GitwireError('GW_REFS_CORRUPT', `${kind}: ${file}: ${why}`, { data: { file, kind } });

/**
 * A GW_REFS_CORRUPT error as a service's boundary says it to the client
 * (ERR, band 3 under sideband-all), naming the repository as the client
 * named it; the message (with the file) stays the log's.
 */
export function refsUnreadable(e: GitwireError, repository: string): GitwireError {
  const kind = typeof e.data.kind === 'string' ? e.data.kind : 'ref storage cannot be read';
  return new GitwireError('GW_REFS_CORRUPT', e.message, { wire: `refs of '${wirePath(repository)}' cannot be read: ${kind}`, data: { ...e.data, repository }, cause: e });
}

/**
 * A path the client sent, fit to be said back to it: control bytes as `?`
 * (no terminal escapes, no second line), at most 256 characters.
 */
export function wirePath(p: string): string {
  const clean = p.replace(/[\x00-\x1f\x7f]/g, '?');
  return clean.length > 256 ? `${clean.slice(0, 253)}...` : clean;
}
