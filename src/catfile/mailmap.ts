/**
 * .mailmap for `cat-file --use-mailmap` (and the `mailmap` batch command):
 * git's read_mailmap() sources and map_user() lookup, and
 * apply_mailmap_to_header() on the author/committer/tagger lines of an
 * object. Emails and names match case-insensitively (ASCII), as strcasecmp.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Repository } from '../repo/repository.js';
import { ObjType } from '../repo/object-type.js';
import { NameResolver } from './names.js';
import { worktreeOf } from './worktree.js';

interface Info { name?: Buffer; email?: Buffer }
interface Entry extends Info { names: Map<string, Info> }

const fold = (b: Buffer) => b.toString('latin1').replace(/[A-Z]/g, (c) => c.toLowerCase());
const isSpace = (c: number | undefined) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0b || c === 0x0c || c === 0x0d;

export class Mailmap {
  private readonly map = new Map<string, Entry>();

  /** read_mailmap(): work tree .mailmap (not bare), mailmap.blob (HEAD:.mailmap when bare), mailmap.file */
  static load(repo: Repository): Mailmap {
    const m = new Mailmap();
    const wt = worktreeOf(repo);
    let blob = repo.config.getString('mailmap.blob');
    if (blob === undefined && !wt) blob = 'HEAD:.mailmap';
    if (wt) { try { m.addText(readFileSync(join(wt, '.mailmap')), true); } catch { /* none */ } }
    if (blob) {
      const r = new NameResolver(repo).resolve(blob);
      const o = r.status === 'found' ? repo.odb.read(r.oid) : undefined;
      if (r.status === 'found' && !o) process.stderr.write(`error: unable to read mailmap object at ${blob}\n`);
      else if (o && o.type !== ObjType.Blob) process.stderr.write(`error: mailmap is not a blob: ${blob}\n`);
      else if (o) m.addText(o.data, false);
    }
    const file = repo.config.getString('mailmap.file');
    if (file) { try { m.addText(readFileSync(file.replace(/^~(?=\/)/, repo.env.HOME || homedir())), true); } catch { /* none */ } }
    return m;
  }

  get size(): number { return this.map.size; }

  /** one .mailmap text; `fromFile`: lines as fgets reads them (1023 bytes at most) */
  addText(text: Buffer, fromFile: boolean): void {
    let p = 0;
    while (p < text.length) {
      let nl = text.indexOf(10, p);
      if (nl < 0) nl = text.length;
      let line = text.subarray(p, fromFile ? nl + 1 : nl);
      p = nl + 1;
      if (fromFile) while (line.length > 1023) { this.addLine(line.subarray(0, 1023)); line = line.subarray(1023); }
      this.addLine(line);
    }
  }

  private addLine(line: Buffer): void {
    if (line[0] === 0x23) return; // '#'
    const first = parseNameEmail(line, false);
    if (!first) return;
    const second = first.rest ? parseNameEmail(first.rest, true) : undefined;
    this.add(first.name, first.email, second?.name, second?.email);
  }

  private add(newName: Buffer | undefined, newEmail: Buffer | undefined, oldName: Buffer | undefined, oldEmail: Buffer | undefined): void {
    if (!oldEmail) { oldEmail = newEmail; newEmail = undefined; }
    const key = fold(oldEmail!);
    let e = this.map.get(key);
    if (!e) { e = { names: new Map() }; this.map.set(key, e); }
    if (!oldName) {
      if (newName) e.name = newName;
      if (newEmail) e.email = newEmail;
    } else {
      e.names.set(fold(oldName), { name: newName, email: newEmail });
    }
  }

  /** map_user(): the replacement name and email, or undefined */
  mapUser(name: Buffer, email: Buffer): { name: Buffer; email: Buffer } | undefined {
    const e = this.map.get(fold(email));
    if (!e) return undefined;
    let item: Info = e;
    if (e.names.size) item = e.names.get(fold(name)) ?? e;
    if (!item.name && !item.email) return undefined;
    return { name: item.name ?? name, email: item.email ?? email };
  }

  /** apply_mailmap_to_header() for author, committer and tagger lines */
  rewrite(data: Buffer): Buffer {
    if (!this.map.size) return data;
    const parts: Buffer[] = [];
    let p = 0, changed = false;
    while (p < data.length && data[p] !== 10 && data[p] !== 0) {
      let nl = data.indexOf(10, p);
      if (nl < 0) nl = data.length;
      const line = data.subarray(p, nl);
      const hdr = ['author ', 'committer ', 'tagger '].find((h) => line.length >= h.length && line.toString('latin1', 0, h.length) === h);
      const r = hdr ? this.rewriteIdent(line, hdr.length) : undefined;
      if (r) { parts.push(r); changed = true; } else parts.push(line);
      if (nl < data.length) parts.push(data.subarray(nl, nl + 1));
      p = nl + 1;
    }
    if (!changed) return data;
    if (p < data.length) parts.push(data.subarray(p));
    return Buffer.concat(parts);
  }

  /** split_ident_line() + rewrite_ident_line() */
  private rewriteIdent(line: Buffer, at: number): Buffer | undefined {
    const lt = line.indexOf(0x3c, at);
    if (lt < 0) return undefined;
    let nameEnd = lt - 1;
    while (nameEnd >= at && isSpace(line[nameEnd])) nameEnd--;
    nameEnd = nameEnd >= at ? nameEnd + 1 : at;
    const gt = line.indexOf(0x3e, lt + 1);
    if (gt < 0) return undefined;
    const m = this.mapUser(line.subarray(at, nameEnd), line.subarray(lt + 1, gt));
    if (!m) return undefined;
    return Buffer.concat([line.subarray(0, at), m.name, Buffer.from(' <'), m.email, Buffer.from('>'), line.subarray(gt + 1)]);
  }
}

/** parse_name_and_email() */
function parseNameEmail(buf: Buffer, allowEmptyEmail: boolean): { name?: Buffer; email: Buffer; rest?: Buffer } | undefined {
  const left = buf.indexOf(0x3c);
  if (left < 0) return undefined;
  const right = buf.indexOf(0x3e, left + 1);
  if (right < 0) return undefined;
  if (!allowEmptyEmail && right === left + 1) return undefined;
  let s = 0;
  while (s < left && isSpace(buf[s])) s++;
  let e = left - 1;
  while (e > s && isSpace(buf[e])) e--;
  const name = s <= e ? buf.subarray(s, e + 1) : undefined;
  const rest = buf.subarray(right + 1);
  return { name: name && name.length ? name : undefined, email: buf.subarray(left + 1, right), rest: rest.length ? rest : undefined };
}
