/** The repository's alternate object directories (objects/info/alternates, recursively, and the environment). */
import { join, resolve } from 'node:path';
import { readAlternates } from '../../repo/alternates.js';
import type { Repository } from '../../repo/repository.js';

export function alternateObjectDirs(repo: Repository): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (objectsDir: string, depth: number) => {
    for (const p of readAlternates(objectsDir).dirs) {
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
