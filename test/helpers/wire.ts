/** Raw requests to a running `gitwire serve` over HTTP and git://, and to `gitwire upload-pack` over stdio. */
import { request } from 'node:http';
import { connect } from 'node:net';
import { spawn } from 'node:child_process';
import { BIN, gitEnv } from './git.js';
import { finished, noteLine } from './child-wait.js';

/** `reset`: the connection ended with an error (a reset) rather than a clean close */
export interface WireReply { body: Buffer; status?: number; stderr?: string; reset?: boolean }

export type WireService = 'upload-pack' | 'receive-pack';

/** POST a stateless request to `<path>/git-<service>` (`extra`: more headers); rejects on a reset before the response ended. */
export function httpPost(port: number, path: string, body: Buffer, proto = '', service: WireService = 'upload-pack', extra: Record<string, string> = {}): Promise<WireReply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'Content-Type': `application/x-git-${service}-request`, ...extra };
    if (proto) headers['Git-Protocol'] = proto;
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: `${path}/git-${service}`, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * One git:// conversation: the request line, then `body`; everything the
 * server says until it closes, or until it has been quiet for `quietMs`
 * (a server that answered and waits for the client's next request).
 */
export function gitDaemon(port: number, path: string, body: Buffer, proto = '', timeoutMs = 60_000, quietMs = 3000, service: WireService = 'upload-pack'): Promise<WireReply> {
  return new Promise((resolve, reject) => {
    const line = Buffer.from(`git-${service} ${path}\0host=127.0.0.1\0${proto ? `\0${proto}\0` : ''}`);
    const hdr = Buffer.from((line.length + 4).toString(16).padStart(4, '0'));
    const s = connect(port, '127.0.0.1', () => { s.write(Buffer.concat([hdr, line, body])); armQuiet(); });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => { s.destroy(); reject(new Error('git:// conversation timed out')); }, timeoutMs);
    let quiet: NodeJS.Timeout | undefined;
    const armQuiet = () => { if (quiet) clearTimeout(quiet); quiet = setTimeout(() => s.destroy(), quietMs); };
    let reset = false;
    s.on('data', (c: Buffer) => { chunks.push(c); armQuiet(); });
    s.on('error', () => { reset = true; /* a reset is an answer too: the server closed (callers may check) */ });
    s.on('close', () => { clearTimeout(timer); if (quiet) clearTimeout(quiet); resolve({ body: Buffer.concat(chunks), reset }); });
  });
}

/** `gitwire upload-pack --stateless-rpc <dir>` with `body` on stdin. */
export function stdio(dir: string, body: Buffer, proto = '', stateless = true): Promise<WireReply> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...gitEnv };
    if (proto) env.GIT_PROTOCOL = proto;
    const child = spawn(BIN, ['upload-pack', ...(stateless ? ['--stateless-rpc'] : []), dir], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
    child.stdin.on('error', () => { /* it may stop reading early */ });
    child.stdin.end(body);
    // past the deadline it and what it started (pack-objects) are killed; stderr's last line says what was left
    void finished(child, 'gitwire upload-pack', { timeoutMs: 300_000, group: true }).then((f) => {
      if (f.error) reject(f.error);
      else resolve({ body: Buffer.concat(out), status: f.code ?? -1, stderr: err + noteLine(f) });
    });
  });
}
