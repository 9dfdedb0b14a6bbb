/**
 * `npm start` stopped by its PID stops the server: npm passes SIGTERM and
 * SIGINT on to its child, and the start script execs node, so that child
 * is the server itself, not a shell that dies and leaves it holding the
 * port. (`npm start` serves the checkout on 8080; `-- --http 0` here.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { ROOT, gitEnv } from './helpers/git.js';

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} to npm start's PID stops the server and frees its port`, { timeout: 60_000 }, async () => {
    const npm = spawn('npm', ['start', '--silent', '--', '--http', '0'], { cwd: ROOT, env: gitEnv, stdio: ['ignore', 'pipe', 'inherit'] });
    let serverPid: number | undefined;
    try {
      const exited = new Promise<number | null>((r) => npm.once('exit', (code) => r(code)));
      const { pid, port } = await new Promise<{ pid: number; port: number }>((resolve, reject) => {
        let buf = '';
        npm.stdout!.on('data', (d: Buffer) => {
          buf += d.toString();
          const m = /"pid":(\d+),[^\n]*"url":"http:\/\/127\.0\.0\.1:(\d+)\//.exec(buf);
          if (m) resolve({ pid: Number(m[1]), port: Number(m[2]) });
        });
        npm.once('exit', (c) => reject(new Error(`npm start exited ${c}: ${buf}`)));
      });
      serverPid = pid;
      assert.notEqual(pid, npm.pid);
      npm.kill(signal);
      // (a shell between them would die and leave the server running: looked for over 20 s)
      for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(alive(pid), false, 'the server process is gone');
      await exited;
      const probe = createServer();
      await new Promise<void>((resolve, reject) => { probe.once('error', reject); probe.listen(port, '127.0.0.1', resolve); });
      await new Promise((r) => probe.close(r));
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
    }
  });
}
