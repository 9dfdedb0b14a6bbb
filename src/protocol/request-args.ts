/**
 * The fetch arguments and features each protocol version knows, as one
 * table (gitoxide's gix-protocol command table): parsing reads it for v0/v1
 * `want` capabilities and request lines and for v2 `fetch` argument lines,
 * and every row sets its part of the one FetchRequest (./request.ts).
 *
 * A row names where it may appear per version: in v0 as a capability word
 * on a want line (`thin-pack`, `session-id=<v>`) or as a line of its own
 * (`deepen <n>`), in v2 as an argument line. Rows gated by configuration
 * (`filter`, `want-ref`, `sideband-all`) are unknown when off, as in git.
 * Rows run as their line arrives, so errors come in git's order.
 */
import { notOurRef, protocolError } from '../errors.js';
import { parseFilter } from './filter.js';
import { STRTOUMAX_OVERFLOW, strtoC } from '../util/ulong.js';
import { gotHave, negotiationState } from './negotiation.js';
import { tooManyHaves } from './limits.js';
import { addClientShallow } from './shallow.js';
import { countRefMatches } from './deepen.js';
import type { UploadPackSession } from './session.js';
import { isHex, parseHex, rawFromHexBytes, type RawOid } from '../repo/oid.js';
import { featureValue, hasFeature, type MultiAck } from './request.js';

export interface ArgRow {
  /** the word as the client sends it */
  readonly name: string;
  /** v0/v1: a capability word on a want line, or a request line of its own; absent: not in v0 */
  readonly v0?: 'capability' | 'line';
  /** v2: a `fetch` argument line */
  readonly v2?: boolean;
  /** `name <value>` as a line, `name=<value>` as a capability; otherwise a bare word */
  readonly value?: boolean;
  /** configuration that must allow it; otherwise the word is unknown */
  readonly allowed?: (s: UploadPackSession) => boolean;
  /** record it in the request (and hand ids to the request's state); `line` is the whole line for git's messages */
  readonly apply: (s: UploadPackSession, value: string, line: string) => void;
}

const flag = (name: string, set: (s: UploadPackSession) => void, where: { v0?: 'capability'; v2?: boolean }): ArgRow =>
  ({ name, ...where, apply: (s) => set(s) });
const multiAck = (n: MultiAck) => (s: UploadPackSession) => { s.req.multiAck = n; };
const envOn = (v: string | undefined) => /^(1|true|yes|on)$/i.test(v ?? '');

/**
 * parse_want_ref(): the name is checked (check_refname_format, inside
 * RefStore.resolve) before anything is read, then hidden refs and the
 * per-request refFilter decide on the name asked for and on the ref a
 * symref leads to. Anything else is git's `unknown ref <name>`.
 */
function resolveWantRef(s: UploadPackSession, name: string): RawOid {
  const full = s.repo.namespace + name;
  const unknown = () => protocolError(`unknown ref ${name}`, { wire: true, data: { ref: name } });
  if (s.isHidden(Buffer.from(name), Buffer.from(full))) throw unknown();
  const res = s.repo.refs.resolve(full);
  if (!res?.hex) throw unknown();
  if (res.target !== full && s.opts.refFilter) {
    const ns = s.repo.namespace;
    const stripped = ns ? (res.target.startsWith(ns) ? res.target.slice(ns.length) : undefined) : res.target;
    if (stripped === undefined || s.isHidden(Buffer.from(stripped), Buffer.from(res.target))) throw unknown();
  }
  return rawFromHexBytes(res.hex);
}

/** A want of an object we have (parse_want: unknown ids are `not our ref` at once). */
function want(s: UploadPackSession, hex: string): void {
  const oid = parseHex(hex);
  if (!s.repo.odb.has(oid)) throw notOurRef(hex);
  s.addWant(oid);
}

/**
 * A `have <id>` line, v0 negotiation round or v2 argument: git's check of
 * the id and the per-request limit. `n` counts the haves so far, this one
 * included.
 */
export function parseHave(s: UploadPackSession, hex: string, n: number, maxHaves: number): RawOid {
  const id = leadingHex(hex, s.repo.hexLen);
  if (!id) throw protocolError(`git upload-pack: expected SHA1 object, got '${hex}'`);
  if (n > maxHaves) throw tooManyHaves(maxHaves);
  return parseHex(id);
}

/**
 * get_oid_hex(): the id in the first `len` characters, in either case
 * (lowercased); what follows them is not looked at, as in git.
 */
function leadingHex(v: string, len: number): string | undefined {
  const h = v.slice(0, len);
  return isHex(h, len, true) ? h.toLowerCase() : undefined;
}

export const FETCH_ARGS: readonly ArgRow[] = [
  {
    name: 'want', v0: 'line', v2: true, value: true,
    apply(s, value, line) {
      const hexLen = s.repo.hexLen;
      // git's get_oid_hex (v2) and parse_oid_hex (v0): either case, and in v2 nothing after the id is looked at
      const hex = leadingHex(value, hexLen);
      if (s.req.version === 2) {
        if (!hex) throw protocolError(`git upload-pack: protocol error, expected to get oid, not '${line}'`);
        return want(s, hex);
      }
      // v0: `want <id>[ <features>]`
      if (!hex) throw unknownLine(s, line);
      const features = value.slice(hexLen);
      if (features) applyFeatures(s, features);
      want(s, hex);
    },
  },
  {
    name: 'want-ref', v2: true, value: true, allowed: (s) => s.cfg.allowRefInWant,
    apply(s, name) {
      const oid = resolveWantRef(s, name);
      if (s.req.wantedRefs.some((w) => w.name === name)) throw protocolError(`duplicate want-ref ${name}`, { wire: true, data: { ref: name } });
      s.req.wantedRefs.push({ name, oid });
      s.addWant(oid);
    },
  },
  {
    name: 'have', v2: true, value: true,
    apply(s, hex) {
      // only new haves we have are kept (s.haves, git's have_obj): memory does not grow with unknown ones
      gotHave(s, parseHave(s, hex, ++s.req.haveLines, maxHaves(s)));
    },
  },
  { name: 'shallow', v0: 'line', v2: true, value: true, apply: (s, hex, line) => addClientShallow(s, hex, line) },
  {
    name: 'deepen', v0: 'line', v2: true, value: true,
    apply(s, arg, line) {
      // process_deepen(): (int)strtol(arg, &end, 0), so a value past int wraps (2^32+1 is 1) and one past long is -1
      const r = strtoC(arg, false);
      const n = Number(BigInt.asIntN(32, r.value));
      if (r.rest !== '' || n <= 0) throw protocolError(`Invalid deepen: ${line}`);
      s.req.depth = n;
    },
  },
  {
    name: 'deepen-since', v0: 'line', v2: true, value: true,
    apply(s, arg, line) {
      // process_deepen_since(): parse_timestamp (strtoumax, base 0); only the overflow value (-1) is refused,
      // so 0 and a negative number (wrapped past every commit date) are taken
      const r = strtoC(arg, true);
      if (r.rest !== '' || r.value === STRTOUMAX_OVERFLOW) throw protocolError(`Invalid deepen-since: ${line}`);
      s.req.deepenSince = Number(r.value);
      s.req.deepenRevList = true;
    },
  },
  {
    name: 'deepen-not', v0: 'line', v2: true, value: true,
    apply(s, arg, line) {
      // git resolves the name while parsing (process_deepen_not): exactly one ref must match
      const n = countRefMatches(s, arg);
      if (n > 1) throw protocolError(`git upload-pack: ambiguous deepen-not: ${line}`);
      if (n < 1) throw protocolError(`git upload-pack: deepen-not is not a ref: ${line}`);
      s.req.deepenNot.push(arg);
      s.req.deepenRevList = true;
    },
  },
  {
    // v0 needs the `filter` capability first; v2 needs uploadpack.allowFilter
    name: 'filter', v0: 'line', v2: true, value: true, allowed: (s) => s.req.version === 0 || s.cfg.allowFilter,
    apply(s, spec) {
      if (s.req.version === 0 && !s.req.filterRequested) throw protocolError('git upload-pack: filtering capability not negotiated');
      if (s.req.filter) throw protocolError('multiple filter-specs cannot be combined');
      s.req.filter = parseFilter(spec);
      const banned = s.cfg.filterPolicy.check(s.req.filter);
      if (banned) throw protocolError(banned, { wire: true });
    },
  },
  { name: 'filter', v0: 'capability', allowed: (s) => s.cfg.allowFilter, apply: (s) => { s.req.filterRequested = true; } },
  // a later word wins over an earlier one: multi_ack_detailed over multi_ack, side-band-64k over side-band
  flag('multi_ack', multiAck(1), { v0: 'capability' }),
  flag('multi_ack_detailed', multiAck(2), { v0: 'capability' }),
  flag('side-band', (s) => { s.sideband = 'side-band'; }, { v0: 'capability' }),
  flag('side-band-64k', (s) => { s.sideband = 'side-band-64k'; }, { v0: 'capability' }),
  flag('no-done', (s) => { s.req.noDone = true; }, { v0: 'capability' }),
  flag('thin-pack', (s) => { s.req.thinPack = true; }, { v0: 'capability', v2: true }),
  flag('ofs-delta', (s) => { s.req.ofsDelta = true; }, { v0: 'capability', v2: true }),
  flag('no-progress', (s) => { s.req.noProgress = true; }, { v0: 'capability', v2: true }),
  flag('include-tag', (s) => { s.req.includeTag = true; }, { v0: 'capability', v2: true }),
  flag('deepen-relative', (s) => { s.req.deepenRelative = true; }, { v0: 'capability', v2: true }),
  flag('done', (s) => { s.req.done = true; }, { v2: true }),
  flag('wait-for-done', (s) => { s.req.waitForDone = true; }, { v2: true }),
  {
    name: 'sideband-all', v2: true, allowed: (s) => s.cfg.allowSidebandAll || envOn(s.repo.env.GIT_TEST_SIDEBAND_ALL),
    // framing starts at once, as git sets use_sideband while parsing: later errors go on band 3
    apply(s) { s.req.sidebandAll = true; s.writer.sidebandAll = true; },
  },
  {
    // git takes it only with uploadpack.blobPackfileUri set (else: unexpected line); gitwire sends no URIs, so it is ignored then
    name: 'packfile-uris', v2: true, value: true, allowed: (s) => !!s.repo.config.get('uploadpack.blobpackfileuri'),
    apply: () => { /* no packfile URIs are sent */ },
  },
  {
    name: 'session-id', v0: 'capability', value: true,
    apply(s, sid) { if (sid) s.opts.trace?.data('transfer', 'client-sid', sid); },
  },
];

/**
 * v2's `fetch=<features>` advertisement: each word is gated by the row it
 * names, so what is advertised is exactly what is accepted. In git's order.
 */
const V2_FETCH_FEATURES: ReadonlyArray<readonly [word: string, row: string]> = [
  ['shallow', 'shallow'], ['wait-for-done', 'wait-for-done'], ['filter', 'filter'], ['ref-in-want', 'want-ref'], ['sideband-all', 'sideband-all'],
];

const V0_LINES = new Map(FETCH_ARGS.filter((r) => r.v0 === 'line').map((r) => [r.name, r]));
const V0_CAPABILITIES = FETCH_ARGS.filter((r) => r.v0 === 'capability');
const V2_LINES = new Map(FETCH_ARGS.filter((r) => r.v2).map((r) => [r.name, r]));

function maxHaves(s: UploadPackSession): number {
  return negotiationState(s).limits.maxHaves;
}

function unknownLine(s: UploadPackSession, line: string) {
  return s.req.version === 2
    ? protocolError(`unexpected line: '${line}'`)
    : protocolError(`git upload-pack: protocol error, expected to get object ID, not '${line}'`);
}

/** The capability words of a v0 want line, in table order. */
function applyFeatures(s: UploadPackSession, features: string): void {
  for (const row of V0_CAPABILITIES) {
    if (row.allowed && !row.allowed(s)) continue;
    if (row.value) {
      const v = featureValue(features, row.name);
      if (v !== undefined) row.apply(s, v, features);
    } else if (hasFeature(features, row.name)) row.apply(s, '', features);
  }
}

/** One request line (v0/v1 want list, or v2 `fetch` arguments) into the request. */
export function parseFetchLine(s: UploadPackSession, line: string): void {
  const sp = line.indexOf(' ');
  const name = sp < 0 ? line : line.slice(0, sp);
  const value = sp < 0 ? undefined : line.slice(sp + 1);
  const row = (s.req.version === 2 ? V2_LINES : V0_LINES).get(name);
  if (!row || (row.allowed && !row.allowed(s)) || (value !== undefined) !== !!row.value) throw unknownLine(s, line);
  row.apply(s, value ?? '', line);
}

/** The value of the v2 `fetch` capability for this repository's configuration. */
export function fetchFeatures(s: UploadPackSession): string {
  const words: string[] = [];
  for (const [word, name] of V2_FETCH_FEATURES) {
    const row = V2_LINES.get(name);
    if (row && (!row.allowed || row.allowed(s))) words.push(word);
  }
  return words.join(' ');
}
