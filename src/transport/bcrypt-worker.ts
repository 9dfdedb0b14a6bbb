/**
 * The worker thread htpasswd checks run on: one bcrypt hash at a time
 * (~70 ms of CPU at cost 10), so a flood of wrong passwords never holds
 * serve's event loop. Messages: `{ id, password, salt }` in, `{ id, hash }`
 * out (`hash` undefined when bcrypt refused the salt).
 */
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

parentPort?.on('message', (m: { id: number; password: string; salt: string }) => {
  let hash: string | undefined;
  try { hash = bcrypt.hashSync(m.password, m.salt); } catch { hash = undefined; }
  parentPort!.postMessage({ id: m.id, hash });
});
