/**
 * An S3-compatible server for the tests: s3rver (npm, a devDependency) in
 * a child process on a free loopback port, with one bucket, storing under
 * a directory the test can look into. Stopped by its PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { killLeftovers, stopChild, track } from './child-wait.js';

export interface S3Server { port: number; child: ChildProcess; dir: string; env: NodeJS.ProcessEnv; stop(): Promise<void> }

const SCRIPT = `
const S3rver = require('s3rver');
const [dir, bucket] = process.argv.slice(1);
new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true, configureBuckets: [{ name: bucket }] }).run().then((addr) => {
  process.stdout.write('port ' + addr.port + '\\n');
}, (e) => { process.stderr.write(String(e) + '\\n'); process.exit(1); });
process.on('SIGTERM', () => process.exit(0));
`;

/** Start s3rver with `bucket`; its objects are kept under `dir`. */
export function startS3(dir: string, bucket: string, cwd: string): Promise<S3Server> {
  return new Promise((resolve, reject) => {
    const child = track(spawn(process.execPath, ['-e', SCRIPT, dir, bucket], { cwd, stdio: ['ignore', 'pipe', 'pipe'] }), 's3rver');
    let out = '', err = '';
    const timer = setTimeout(() => { child.off('exit', onExit); reject(new Error(`s3rver did not start (${killLeftovers(child) || 'nothing left'}): ${err}`)); }, 20_000);
    child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /port (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      const port = Number(m[1]);
      resolve({
        port, child, dir,
        // s3rver's fixed credentials (S3RVER/S3RVER), path-style on loopback
        env: { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}` },
        // (a child killed by a signal has no exit code, and sends no second 'exit': stopChild knows)
        stop: () => stopChild(child, 's3rver', { exitMs: 20_000 }).then(() => undefined),
      });
    });
    const onExit = (c: number | null, sig: NodeJS.Signals | null) => { clearTimeout(timer); reject(new Error(`s3rver exited ${c ?? sig}: ${err}`)); };
    child.once('exit', onExit);
  });
}
