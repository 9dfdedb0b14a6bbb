/**
 * Unlocks of one lock id racing in separate processes (as two serve nodes
 * sharing the repository root, docs/cluster.md): exactly one succeeds, and
 * none removes a lock someone took after it (issue 40, item 7).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { once } from 'node:events';
import { LockStore } from '../src/lfs/index.js';
import { tmp } from './helpers/git.js';

const locksModule = pathToFileURL(join(fileURLToPath(new URL('.', import.meta.url)), '..', 'src', 'lfs', 'locks.js')).href;

/** a process that, told a lock id and a moment, unlocks it at that moment and then takes the path itself */
const CHILD = `
import { LockStore } from ${JSON.stringify(locksModule)};
const store = new LockStore(process.argv[2]);
const me = process.argv[3];
const now = () => performance.timeOrigin + performance.now();
process.on('message', async (m) => {
  if (m === 'quit') process.exit(0);
  while (now() < m.at + m.delay) { /* start together (to a few microseconds) */ }
  const u = await store.unlock(m.id, me, true);
  const c = u.ok ? await store.create(m.path, me) : undefined;
  process.send({ round: m.round, unlocked: u.ok, created: c?.ok ? c.lock.id : undefined });
});
process.send('ready');
`;

interface Answer { round: number; unlocked: boolean; created?: string }

test('concurrent unlocks of one id in two processes: exactly one wins, and a lock taken meanwhile survives', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-lfs-lockrace-');
  const kids: ChildProcess[] = [];
  try {
    const lfsDir = join(t.dir, 'lfs');
    const script = join(t.dir, 'child.mjs');
    writeFileSync(script, CHILD);
    for (const name of ['n1', 'n2']) {
      const k = fork(script, [lfsDir, name], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      kids.push(k);
      await once(k, 'message');
    }
    const store = new LockStore(lfsDir);
    const rounds = 300;
    const bad: string[] = [];
    for (let round = 0; round < rounds && bad.length < 5; round++) {
      const path = `art/${round % 7}.psd`;
      const made = await store.create(path, 'alice');
      assert.ok(made.ok, `round ${round}: the path is free`);
      const at = performance.timeOrigin + performance.now() + 3;
      const answers = kids.map((k) => new Promise<Answer>((resolve) => k.once('message', (a: Answer) => resolve(a))));
      // one of them a little later now and then, so that its unlock meets the other's new lock
      kids.forEach((k, i) => k.send({ round, id: made.lock.id, path, at, delay: i === 1 ? (round % 5) * 0.15 : 0 }));
      const [a, b] = await Promise.all(answers);
      const unlocked = [a!, b!].filter((x) => x.unlocked).length;
      if (unlocked !== 1) bad.push(`round ${round}: ${unlocked} unlocks succeeded`);
      const created = [a!, b!].map((x) => x.created).filter((x) => x !== undefined);
      const now = await store.byPath(path);
      if (created.length !== 1 || now?.id !== created[0]) bad.push(`round ${round}: the new lock ${created.join(',')} is ${now ? `replaced by ${now.id}` : 'gone'}`);
      if (now) assert.ok((await store.unlock(now.id, 'alice', true)).ok);
    }
    assert.deepEqual(bad, []);
  } finally {
    for (const k of kids) { k.send('quit'); await once(k, 'exit').catch(() => undefined); }
    t.cleanup();
  }
});
