/**
 * Typed errors with stable codes. Each knows how to render itself for the
 * wire (`ERR <msg>` or sideband band 3) and for the CLI (`fatal: <msg>`, 128).
 */
const BRAND = Symbol.for('gitwire.error');

export type ErrorCode =
  | 'GW_PKT_BAD_LENGTH_CHAR'
  | 'GW_PKT_BAD_LENGTH'
  | 'GW_PKT_TOO_LONG'
  | 'GW_PKT_EOF'
  | 'GW_PKT_REMOTE_ERR'
  | 'GW_NOT_A_REPO'
  | 'GW_UNSUPPORTED_REPO'
  | 'GW_CONFIG'
  | 'GW_OBJECT_MISSING'
  | 'GW_OBJECT_CORRUPT'
  | 'GW_PROTOCOL'
  | 'GW_NOT_OUR_REF'
  | 'GW_PACK_FAILED'
  | 'GW_CLIENT_GONE'
  | 'GW_USAGE'
  | 'GW_TIMEOUT'
  | 'GW_LIMIT'
  | 'GW_REF_UPDATE'
  | 'GW_PUSH_REJECTED';

export class GitwireError extends Error {
  readonly code: ErrorCode;
  /** message as sent on the wire (git's wording); defaults to `message`. */
  readonly wire: string;
  readonly exitCode: number;
  /** `error:` lines git prints before dying (e.g. a config callback's complaint) */
  readonly errors: readonly string[];
  /** the HTTP status this error answers with before a response has started (413, 415, 400, …) */
  readonly httpStatus?: number;
  constructor(code: ErrorCode, message: string, opts: { wire?: string; exitCode?: number; httpStatus?: number; cause?: unknown; errors?: string[] } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.wire = opts.wire ?? message;
    this.exitCode = opts.exitCode ?? 128;
    this.errors = opts.errors ?? [];
    if (opts.httpStatus !== undefined) this.httpStatus = opts.httpStatus;
    this.name = 'GitwireError';
  }
  get [BRAND]() { return true; }
  static override [Symbol.hasInstance](x: unknown): boolean {
    return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[BRAND] === true;
  }
  /** `fatal: <msg>` as git's die() prints it. */
  toCli(): string { return `${this.errors.map((e) => `error: ${e}\n`).join('')}fatal: ${this.message}\n`; }
}

export const pktBadLengthChar = (hdr: string) =>
  new GitwireError('GW_PKT_BAD_LENGTH_CHAR', `protocol error: bad line length character: ${hdr}`);
export const pktBadLength = (len: number) =>
  new GitwireError('GW_PKT_BAD_LENGTH', `protocol error: bad line length ${len}`);
export const pktEof = () => new GitwireError('GW_PKT_EOF', 'the remote end hung up unexpectedly');
export const clientGone = (cause?: unknown) =>
  new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly', { cause });
export const protocolError = (msg: string) => new GitwireError('GW_PROTOCOL', msg);
export const notARepo = (dir: string) =>
  new GitwireError('GW_NOT_A_REPO', `'${dir}' does not appear to be a git repository`);
