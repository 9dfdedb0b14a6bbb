/**
 * How long other clients wait while one request works: a poller asks
 * `serve` for a small answer, one request at a time, for as long as the
 * attack runs, and reports its slowest answer. Raw HTTP helpers build the
 * attacks' bodies (pkt-lines, an empty pack).
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';

export interface HttpAnswer { status: number; body: Buffer }

/** One HTTP request with a raw body; the whole answer. */
export function httpRaw(url: string, method: string, headers: Record<string, string>, body?: Buffer): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: body ? { ...headers, 'Content-Length': String(body.length) } : headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export interface Polled<T> { result: T; maxWaitMs: number; polls: number }

/**
 * Run `attack` while polling `url` (GET, one request at a time, 5 ms
 * apart); the slowest poll is what another client waited at worst.
 */
export async function pollWhile<T>(url: string, attack: () => Promise<T>): Promise<Polled<T>> {
  let stop = false;
  let maxWaitMs = 0;
  let polls = 0;
  const poller = (async () => {
    while (!stop) {
      const t0 = performance.now();
      const a = await httpRaw(url, 'GET', {});
      if (a.status !== 200) throw new Error(`poll answered ${a.status}`);
      maxWaitMs = Math.max(maxWaitMs, performance.now() - t0);
      polls++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  // a first answer before the attack starts: the poller's own start is not counted as a wait
  while (polls === 0) await new Promise((r) => setTimeout(r, 5));
  maxWaitMs = 0;
  try {
    return { result: await attack(), maxWaitMs, polls };
  } finally {
    stop = true;
    await poller;
  }
}

/** pkt-line framing of `s` (a string is taken as UTF-8, a Buffer as its bytes) */
export function pktOf(s: string | Buffer): Buffer {
  const b = typeof s === 'string' ? Buffer.from(s) : s;
  return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]);
}

export const FLUSH = Buffer.from('0000');

/** A pack with no objects (what a push sends when every object is on the server already). */
export function emptyPack(): Buffer {
  const head = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1');
  return Buffer.concat([head, createHash('sha1').update(head).digest()]);
}

/**
 * A receive-pack request body: optional `shallow` lines, the commands
 * (the first with `caps`), a flush, and `pack` when given.
 */
export function pushBody(commands: Array<string | Buffer>, caps: string, opts: { shallow?: string[]; pack?: Buffer } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const s of opts.shallow ?? []) parts.push(pktOf(`shallow ${s}`));
  commands.forEach((c, i) => {
    const line = typeof c === 'string' ? Buffer.from(c) : c;
    parts.push(pktOf(i === 0 ? Buffer.concat([line, Buffer.from(`\0${caps}`)]) : line));
  });
  parts.push(FLUSH);
  if (opts.pack) parts.push(opts.pack);
  return Buffer.concat(parts);
}
