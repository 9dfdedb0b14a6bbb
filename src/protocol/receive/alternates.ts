/** The repository's alternate object directories (objects/info/alternates, recursively, and the environment). */
import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { Repository } from '../../repo/repository.js';

function unquote(line: string): string {
  if (!line.startsWith('"')) return line;
  try { return JSON.parse(line) as string; } catch { return line.slice(1, -1); }
}

export function alternateObjectDirs(repo: Repository): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (objectsDir: string, depth: number) => {
    let text: string;
    try { text = readFileSync(join(objectsDir, 'info', 'alternates'), 'utf8'); } catch { return; }
    for (const raw of text.split('\n')) {
      const l = raw.trim();
      if (!l || l.startsWith('#')) continue;
      const p = resolve(objectsDir, isAbsolute(unquote(l)) ? unquote(l) : unquote(l));
      if (seen.has(p)) continue;
      seen.add(p);
      out.push(p);
      if (depth < 5) visit(p, depth + 1);
    }
  };
  const env = repo.env.GIT_ALTERNATE_OBJECT_DIRECTORIES;
  if (env) for (const p of env.split(':').filter(Boolean)) { const a = resolve(p); if (!seen.has(a)) { seen.add(a); out.push(a); } }
  visit(repo.env.GIT_OBJECT_DIRECTORY ?? join(repo.commonDir, 'objects'), 0);
  return out;
}
