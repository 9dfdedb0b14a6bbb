/**
 * A bare reftable repository made without a git that writes reftable: the
 * installed git makes the objects and the refs (files backend), and
 * gitwire's table writer writes them as a stack of `tables` tables (refs
 * split between them in name order; HEAD in the last), small blocks so
 * that a table has many blocks, restart points and an index.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git } from './git.js';
import { writeTable, RefValue, type RefRecord } from '../../src/repo/refs/index.js';

export interface ReftableRepo { dir: string; tables: string[]; refs: Array<{ name: string; oid: string }> }

export function tableName(min: number, max: number, suffix: string): string {
  const hex = (n: number) => `0x${n.toString(16).padStart(12, '0')}`;
  return `${hex(min)}-${hex(max)}-${suffix}.ref`;
}

/** `files` (a bare files-backend repository) turned into a reftable one in place. */
export function toReftable(dir: string, opts: { tables?: number; blockSize?: number; restartInterval?: number } = {}): ReftableRepo {
  const n = opts.tables ?? 2;
  const out = git(['--git-dir', dir, 'for-each-ref', '--format=%(objectname) %(refname)']).trim().split('\n').filter(Boolean)
    .map((l) => { const [oid, name] = l.split(' '); return { oid: oid!, name: name! }; })
    .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
  const head = git(['--git-dir', dir, 'symbolic-ref', 'HEAD']).trim();
  const peeled = new Map<string, string>();
  for (const r of out) {
    if (!r.name.startsWith('refs/tags/')) continue;
    const p = git(['--git-dir', dir, 'rev-parse', `${r.name}^{}`]).trim();
    if (p !== r.oid) peeled.set(r.name, p);
  }
  const hashLen = out[0] ? out[0].oid.length / 2 : 20;
  mkdirSync(join(dir, 'reftable'), { recursive: true });
  const tables: string[] = [];
  const per = Math.ceil(out.length / n);
  for (let i = 0; i < n; i++) {
    const idx = i + 1;
    const recs: RefRecord[] = out.slice(i * per, (i + 1) * per).map((r) => {
      const p = peeled.get(r.name);
      return p
        ? { name: Buffer.from(r.name), updateIndex: idx, type: RefValue.Val2, value: Buffer.from(r.oid, 'hex'), peeled: Buffer.from(p, 'hex') }
        : { name: Buffer.from(r.name), updateIndex: idx, type: RefValue.Val1, value: Buffer.from(r.oid, 'hex') };
    });
    if (i === n - 1) recs.unshift({ name: Buffer.from('HEAD'), updateIndex: idx, type: RefValue.Symref, target: Buffer.from(head) });
    const bytes = writeTable(recs, [], idx, idx, hashLen, { blockSize: opts.blockSize ?? 256, restartInterval: opts.restartInterval ?? 4 });
    const name = tableName(idx, idx, `${String(idx).padStart(8, '0')}`);
    writeFileSync(join(dir, 'reftable', name), bytes);
    tables.push(name);
  }
  writeFileSync(join(dir, 'reftable', 'tables.list'), tables.map((x) => `${x}\n`).join(''));
  rmSync(join(dir, 'refs'), { recursive: true, force: true });
  rmSync(join(dir, 'packed-refs'), { force: true });
  mkdirSync(join(dir, 'refs'));
  writeFileSync(join(dir, 'refs', 'heads'), 'this repository uses the reftable format\n');
  writeFileSync(join(dir, 'HEAD'), 'ref: refs/heads/.invalid\n');
  git(['config', '--file', join(dir, 'config'), 'core.repositoryformatversion', '1']);
  git(['config', '--file', join(dir, 'config'), 'extensions.refstorage', 'reftable']);
  return { dir, tables, refs: out };
}
