/**
 * git's bundle header (gitformat-bundle): the signature line, capabilities
 * (v3 only), prerequisites (`-<oid>`; gitwire's bundles are full and have
 * none), one `<oid> <refname>` line per ref, and an empty line; the pack
 * follows. A SHA-1 repository gets v2, as `git bundle create` writes it; a
 * SHA-256 one v3 with `@object-format=sha256` (v2 has no way to say it).
 */
import { GitwireError } from '../errors.js';
import type { ObjectFormat } from '../repo/repository.js';
import { Slicer } from '../util/budget.js';

export interface BundleRef { name: string; hex: string }

export interface BundleHeader {
  version: 2 | 3;
  objectFormat: ObjectFormat;
  prerequisites: string[];
  refs: BundleRef[];
  /** bytes up to and including the empty line: where the pack starts */
  length: number;
}

const V2 = '# v2 git bundle\n';
const V3 = '# v3 git bundle\n';
/** a header longer than this is not one gitwire wrote (refs are bounded by what a repository holds, but a header is read whole) */
export const MAX_HEADER_BYTES = 64 * 1024 * 1024;

/**
 * The header for a full bundle of `refs` in a repository of `format`,
 * built a batch of refs at a time, giving the event loop away on
 * `slicer`'s budget between batches (a header of 300,000 refs is 30 MB).
 */
export async function bundleHeader(format: ObjectFormat, refs: readonly BundleRef[], slicer = new Slicer()): Promise<Buffer> {
  const parts: Buffer[] = [Buffer.from(format === 'sha1' ? V2 : `${V3}@object-format=${format}\n`, 'utf8')];
  let length = parts[0]!.length + 1;
  for (let i = 0; i < refs.length; i += HEADER_BATCH) {
    let s = '';
    for (const r of refs.slice(i, i + HEADER_BATCH)) s += `${r.hex} ${r.name}\n`;
    parts.push(Buffer.from(s, 'utf8'));
    length += parts[parts.length - 1]!.length;
    // refused rather than written: a server reads a header back whole, up to this; past it a bundle could be
    // neither checked (the withdrawal of deleted history reads its refs) nor told apart from garbage
    if (length > MAX_HEADER_BYTES) {
      throw new GitwireError('GW_BUNDLE', `too many refs for a bundle: its header would be over the ${MAX_HEADER_BYTES} bytes a server reads back (${refs.length} refs)`);
    }
    const due = slicer.due();
    if (due) await due;
  }
  parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

/** refs per batch of the header (one clock read each) */
const HEADER_BATCH = 1024;

const bad = (why: string) => new GitwireError('GW_BUNDLE', `not a bundle gitwire can read: ${why}`);

/** Parse a header from the start of `buf` (which must hold all of it). */
export function parseBundleHeader(buf: Buffer): BundleHeader {
  const p = parseSteps(buf);
  for (;;) { const s = p.next(); if (s.done) return s.value; }
}

/** As parseBundleHeader, giving the event loop away on `slicer`'s budget (a header may have 300,000 refs). */
export async function parseBundleHeaderSliced(buf: Buffer, slicer = new Slicer()): Promise<BundleHeader> {
  const p = parseSteps(buf);
  for (;;) {
    const s = p.next();
    if (s.done) return s.value;
    const due = slicer.due();
    if (due) await due;
  }
}

/** The parse, pausing after each batch of lines. */
function* parseSteps(buf: Buffer): Generator<void, BundleHeader> {
  const first = buf.indexOf(0x0a);
  if (first < 0) throw bad('no signature line');
  const sig = buf.toString('latin1', 0, first + 1);
  const version = sig === V2 ? 2 : sig === V3 ? 3 : 0;
  if (!version) throw bad('unknown signature');
  let objectFormat: ObjectFormat = 'sha1';
  const prerequisites: string[] = [];
  const refs: BundleRef[] = [];
  let at = first + 1;
  for (let n = 1; ; n++) {
    if (n % HEADER_BATCH === 0) yield;
    const nl = buf.indexOf(0x0a, at);
    if (nl < 0) throw bad('the header does not end');
    const line = buf.toString('utf8', at, nl);
    at = nl + 1;
    if (line === '') break;
    if (line.startsWith('@')) {
      if (version === 2) throw bad('a capability in a v2 bundle');
      const m = /^@object-format=(sha1|sha256)$/.exec(line);
      if (m) objectFormat = m[1] as ObjectFormat;
      else if (!line.startsWith('@filter=')) throw bad(`unknown capability '${line.slice(0, 80)}'`);
      continue;
    }
    const hexLen = objectFormat === 'sha1' ? 40 : 64;
    if (line.startsWith('-')) {
      const hex = line.slice(1, 1 + hexLen);
      if (!/^[0-9a-f]+$/.test(hex) || hex.length !== hexLen) throw bad('a bad prerequisite line');
      prerequisites.push(hex);
      continue;
    }
    const hex = line.slice(0, hexLen);
    if (!/^[0-9a-f]+$/.test(hex) || hex.length !== hexLen || line[hexLen] !== ' ') throw bad('a bad ref line');
    refs.push({ hex, name: line.slice(hexLen + 1) });
  }
  return { version, objectFormat, prerequisites, refs, length: at };
}
