/**
 * An object's content as the other hash names it (git 2.55's
 * object-file-convert.c): trees, commits and tags carry ids, and each is
 * rewritten through the compat map; blobs are the same bytes. A missing
 * mapping or a malformed object fails the conversion, with git's error
 * line where git prints one (undefined is returned then).
 */
import { ObjType } from './object-type.js';

/** storage id → the other hash's id, or undefined when unmapped */
export type MapOid = (oid: Buffer) => Buffer | undefined;
export type ConvertDiag = (line: string) => void;

export interface ConvertHashes {
  /** raw id length the content is in, and the one it is converted to */
  fromLen: number;
  toLen: number;
  /** the header names for signatures of each hash (`gpgsig`, `gpgsig-sha256`) */
  fromSigHeader: string;
  toSigHeader: string;
}

export const SIG_HEADER: Record<number, string> = { 20: 'gpgsig', 32: 'gpgsig-sha256' };

const HEXVAL = (() => {
  const t = new Int8Array(256).fill(-1);
  for (let i = 0; i < 10; i++) t[48 + i] = i;
  for (let i = 0; i < 6; i++) { t[97 + i] = 10 + i; t[65 + i] = 10 + i; }
  return t;
})();

/** parse_oid_hex_algop(): `len` raw bytes of hex at b[at]; undefined on a non-hex digit or short input */
function hexAt(b: Buffer, at: number, len: number): Buffer | undefined {
  if (at + 2 * len > b.length) return undefined;
  const out = Buffer.allocUnsafe(len);
  for (let i = 0; i < len; i++) {
    const hi = HEXVAL[b[at + 2 * i]!]!, lo = HEXVAL[b[at + 2 * i + 1]!]!;
    if (hi < 0 || lo < 0) return undefined;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

const startsAt = (b: Buffer, at: number, s: string) => b.length - at >= s.length && b.toString('latin1', at, at + s.length) === s;

function convertTree(data: Buffer, h: ConvertHashes, map: MapOid, diag: ConvertDiag): Buffer | undefined {
  const out: Buffer[] = [];
  let p = 0;
  const from = h.fromLen;
  while (p < data.length) {
    const size = data.length - p;
    // decode_tree_entry_raw(): room for a mode, a name and an id, and the NUL before the last id
    if (size < from + 3 || data[p + size - (from + 1)] !== 0) { diag('error: failed to decode tree entry'); return undefined; }
    let q = p;
    if (data[q] === 0x20) { diag('error: failed to decode tree entry'); return undefined; }
    let ok = true;
    while (q < data.length && data[q] !== 0x20) { if (data[q]! < 0x30 || data[q]! > 0x37) { ok = false; break; } q++; }
    if (!ok || q >= data.length) { diag('error: failed to decode tree entry'); return undefined; }
    const name = q + 1;
    const nul = data.indexOf(0, name);
    if (nul < 0 || nul === name) { diag('error: failed to decode tree entry'); return undefined; }
    const oid = data.subarray(nul + 1, nul + 1 + from);
    const mapped = map(oid);
    if (!mapped) { diag(`error: failed to map tree entry for ${oid.toString('hex')}`); return undefined; }
    out.push(data.subarray(p, nul + 1), mapped);
    p = nul + 1 + from;
  }
  return Buffer.concat(out);
}

/** parse_signed_buffer(): where a trailing signature starts (data.length when there is none) */
function signedPayloadEnd(data: Buffer): number {
  const SIGS = ['-----BEGIN PGP SIGNATURE-----', '-----BEGIN PGP MESSAGE-----', '-----BEGIN SIGNED MESSAGE-----', '-----BEGIN SSH SIGNATURE-----'];
  let len = 0, match = data.length;
  while (len < data.length) {
    if (SIGS.some((s) => startsAt(data, len, s))) match = len;
    const eol = data.indexOf(10, len);
    len = eol < 0 ? data.length : eol + 1;
  }
  return match;
}

/** parse_buffer_signed_by_header(): the header lines of `sigHeader` out (as a signature), other `gpgsig*` headers dropped */
function splitHeaderSignature(data: Buffer, sigHeader: string): { payload: Buffer; signature: Buffer } {
  const payload: Buffer[] = [], signature: Buffer[] = [];
  let inSig = false, other = false;
  let line = 0;
  while (line < data.length) {
    const nl = data.indexOf(10, line);
    let next = nl < 0 ? data.length : nl + 1;
    let sig = -1;
    if (inSig && data[line] === 0x20) sig = line + 1;
    else if (startsAt(data, line, sigHeader) && data[line + sigHeader.length] === 0x20) { sig = line + sigHeader.length + 1; other = false; }
    else if (startsAt(data, line, 'gpgsig')) other = true;
    else if (other && data[line] !== 0x20) other = false;
    if (sig >= 0) {
      signature.push(data.subarray(sig, next));
      inSig = true;
    } else {
      if (data[line] === 10) next = data.length; // the rest is the body
      if (!other) payload.push(data.subarray(line, next));
      inSig = false;
    }
    line = next;
  }
  return { payload: Buffer.concat(payload), signature: Buffer.concat(signature) };
}

/** add_header_signature(): the signature as continuation lines of `header`, at the end of the header */
function addHeaderSignature(buf: Buffer, sig: Buffer, header: string): Buffer {
  const nul = sig.indexOf(0);
  const s = nul < 0 ? sig : sig.subarray(0, nul);
  const eoh = buf.indexOf('\n\n', 0, 'latin1');
  const ins = eoh < 0 ? buf.length : eoh + 1;
  const lines: Buffer[] = [];
  let p = 0;
  while (p < s.length) {
    const nl = s.indexOf(10, p);
    const e = nl < 0 ? s.length : nl + 1;
    lines.push(Buffer.from(p === 0 ? `${header} ` : ' ', 'latin1'), s.subarray(p, e));
    p = e;
  }
  return Buffer.concat([buf.subarray(0, ins), ...lines, buf.subarray(ins)]);
}

function convertTag(data: Buffer, h: ConvertHashes, map: MapOid, diag: ConvertDiag): Buffer | undefined {
  const entryLen = h.fromLen * 2 + 7;
  if (entryLen >= data.length || !startsAt(data, 0, 'object ') || data[entryLen] !== 10) { diag('error: bogus tag object'); return undefined; }
  const oid = hexAt(data, 7, h.fromLen);
  if (!oid) { diag('error: bad tag object ID'); return undefined; }
  const mapped = map(oid);
  if (!mapped) { diag(`error: unable to map tree ${oid.toString('hex')} in tag object`); return undefined; }
  const rest = data.subarray(entryLen + 1);
  const payloadEnd = signedPayloadEnd(rest);
  const ours = rest.subarray(payloadEnd);
  const { payload, signature: theirs } = splitHeaderSignature(rest.subarray(0, payloadEnd), h.toSigHeader);
  let out: Buffer = Buffer.concat([Buffer.from(`object ${mapped.toString('hex')}\n`, 'latin1'), payload]);
  if (ours.length) out = addHeaderSignature(out, ours, h.fromSigHeader);
  return Buffer.concat([out, theirs]);
}

function convertCommit(data: Buffer, h: ConvertHashes, map: MapOid, diag: ConvertDiag): Buffer | undefined {
  const out: Buffer[] = [];
  const tail = data.length;
  const hexLen = h.fromLen * 2;
  let p = 0;
  const mapLine = (what: 'tree' | 'parent', at: number, eol: number): boolean => {
    const skip = what.length + 1;
    const oid = eol - at === skip + hexLen ? hexAt(data, at + skip, h.fromLen) : undefined;
    if (!oid) { diag(`error: bad ${what} in commit`); return false; }
    const mapped = map(oid);
    if (!mapped) { diag(`error: unable to map ${what} ${oid.toString('hex')} in commit object`); return false; }
    out.push(Buffer.from(`${what} ${mapped.toString('hex')}\n`, 'latin1'));
    return true;
  };
  while (p < tail && data[p] !== 10) {
    let eol = data.indexOf(10, p);
    if (eol < 0) { diag('error: bad line in commit'); return undefined; }
    if (p + 5 < eol && startsAt(data, p, 'tree ')) {
      if (!mapLine('tree', p, eol)) return undefined;
    } else if (p + 7 < eol && startsAt(data, p, 'parent ')) {
      if (!mapLine('parent', p, eol)) return undefined;
    } else if (p + 9 < eol && startsAt(data, p, 'mergetag ')) {
      // the tag object, from the header and its continuation lines
      const tag: Buffer[] = [data.subarray(p + 9, eol + 1)];
      p = eol + 1;
      while (p < tail && data[p] === 0x20) {
        eol = data.indexOf(10, p);
        if (eol < 0) { diag('error: bad mergetag continuation in commit'); return undefined; }
        tag.push(data.subarray(p + 1, eol + 1));
        p = eol + 1;
      }
      const converted = convertTag(Buffer.concat(tag), h, map, diag);
      if (!converted) return undefined;
      // strbuf_add_lines(" "): every line of the new tag, a space before it
      out.push(Buffer.from('mergetag', 'latin1'));
      let q = 0;
      while (q < converted.length) {
        const nl = converted.indexOf(10, q);
        const e = nl < 0 ? converted.length : nl + 1;
        out.push(Buffer.from(' ', 'latin1'), converted.subarray(q, e));
        if (nl < 0) out.push(Buffer.from('\n', 'latin1'));
        q = e;
      }
      eol = p - 1; // the continuation lines are used up
    } else if ((p + 7 < tail && startsAt(data, p, 'author ')) || (p + 10 < tail && startsAt(data, p, 'committer '))
      || (p + 9 < tail && startsAt(data, p, 'encoding ')) || (p + 6 < tail && startsAt(data, p, 'gpgsig'))) {
      out.push(data.subarray(p, eol + 1));
    } else {
      return undefined; // an unknown header might carry an id: git gives up without a message
    }
    p = eol + 1;
    while (p < tail && data[p] === 0x20) {
      const e = data.indexOf(10, p);
      if (e < 0) { diag('error: bad continuation in commit'); return undefined; }
      out.push(data.subarray(p, e + 1));
      p = e + 1;
    }
  }
  if (p < tail) out.push(data.subarray(p));
  return Buffer.concat(out);
}

/**
 * convert_object_file(): the content of a tree, commit or tag with every
 * id it carries mapped; blobs come back as they are.
 */
export function convertObject(type: ObjType, data: Buffer, h: ConvertHashes, map: MapOid, diag: ConvertDiag = () => undefined): Buffer | undefined {
  switch (type) {
    case ObjType.Blob: return data;
    case ObjType.Tree: return convertTree(data, h, map, diag);
    case ObjType.Commit: return convertCommit(data, h, map, diag);
    case ObjType.Tag: return convertTag(data, h, map, diag);
    default: return undefined;
  }
}
