/**
 * The smart-HTTP stack people deploy: nginx in front, fcgiwrap running
 * `git http-backend` per request (Debian packages: /usr/sbin/nginx,
 * /usr/sbin/fcgiwrap). Started on loopback with a temporary
 * configuration, no root needed: `nginx -p <dir> -c <conf>` with
 * `daemon off` and every pid, log and temp path under <dir>; fcgiwrap on a
 * unix socket there (`-s unix:…`).
 *
 * The configuration is Debian's defaults (worker_processes auto, sendfile,
 * tcp_nopush, response buffering) with git's http-backend location, and
 * two changes: no access log (gitwire serve runs --quiet in the bench) and
 * fcgiwrap preforks `children` processes (Debian's unit runs one, which
 * serves one request at a time; the bench's loads run 4 at once).
 *
 *   const s = await startNginxStack(root, dir);  s.port, s.pids(), s.stop()
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { children as childrenOf, freePort } from './proc.mjs';

export const NGINX = process.env.GITWIRE_BENCH_NGINX || '/usr/sbin/nginx';
export const FCGIWRAP = process.env.GITWIRE_BENCH_FCGIWRAP || '/usr/sbin/fcgiwrap';

/** Why the stack cannot run here, or undefined when it can. */
export function nginxMissing() {
  for (const [name, bin] of [['nginx', NGINX], ['fcgiwrap', FCGIWRAP]]) if (!existsSync(bin)) return `${name} is not installed (${bin}; Debian: apt-get install nginx fcgiwrap)`;
  return undefined;
}

/**
 * The top of a bench nginx.conf, up to inside `http {`: Debian's defaults
 * (sendfile, tcp_nopush), no access log, the pid, log and temp paths under
 * `dir`, in the foreground. As root, the workers run as this user (nobody
 * could not read the bench's private temporary directory).
 */
export function nginxPreamble({ dir, workers, connections }) {
  return `${process.getuid?.() === 0 ? `user ${userInfo().username};\n` : ''}worker_processes ${workers};
daemon off;
master_process on;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections ${connections}; }
http {
  sendfile on;
  tcp_nopush on;
  access_log off;
  client_body_temp_path ${dir}/client_body;
  fastcgi_temp_path ${dir}/fastcgi;
  proxy_temp_path ${dir}/proxy;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
`;
}

/** The nginx.conf the bench runs (exported for the test that checks it). */
export function nginxConf({ dir, port, socket, root, backend, env = {} }) {
  const p = (k, v) => `      fastcgi_param ${k} ${JSON.stringify(String(v))};\n`;
  // the same git environment as the other side (bench/fixtures.mjs env: no system or global config)
  const gitEnv = Object.entries(env).filter(([k]) => /^(GIT_CONFIG_NOSYSTEM|GIT_CONFIG_GLOBAL|HOME|LC_ALL|PATH)$/.test(k)).map(([k, v]) => p(k, v)).join('');
  return `# written by bench/nginx.mjs
${nginxPreamble({ dir, workers: 'auto', connections: 768 })}  server {
    listen 127.0.0.1:${port};
    client_max_body_size 0;
    location / {
      fastcgi_pass unix:${socket};
${p('SCRIPT_FILENAME', backend)}${p('GIT_PROJECT_ROOT', root)}${p('GIT_HTTP_EXPORT_ALL', '')}      fastcgi_param PATH_INFO $uri;
      fastcgi_param REMOTE_USER $remote_user;
      fastcgi_param QUERY_STRING $query_string;
      fastcgi_param REQUEST_METHOD $request_method;
      fastcgi_param CONTENT_TYPE $content_type;
      fastcgi_param CONTENT_LENGTH $content_length;
      fastcgi_param REQUEST_URI $request_uri;
      fastcgi_param SERVER_PROTOCOL $server_protocol;
      fastcgi_param GATEWAY_INTERFACE CGI/1.1;
      fastcgi_param REMOTE_ADDR $remote_addr;
      fastcgi_param SERVER_ADDR $server_addr;
      fastcgi_param SERVER_PORT $server_port;
      fastcgi_param SERVER_NAME $server_name;
${gitEnv}    }
  }
}
`;
}

/** bash's `times`, second line: the children's user and system time ("0m0.012s 0m0.004s") */
export function parseTimes(text) {
  const line = text.split('\n')[1] ?? '';
  const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(line.trim());
  if (!m) throw new Error(`not the output of bash's times: ${JSON.stringify(text)}`);
  return (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000;
}

function cgiCpuMs(timesDir) {
  let ms = 0;
  for (const f of readdirSync(timesDir)) {
    const path = join(timesDir, f);
    let text;
    try { text = readFileSync(path, 'utf8'); } catch { continue; }
    // a file still being written is left for the next call
    if (!text.endsWith('\n') || text.split('\n').length < 3) continue;
    ms += parseTimes(text);
    rmSync(path, { force: true });
  }
  return ms;
}

function waitFor(what, ok, ms = 10_000) {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      try { if (ok()) return resolve(); } catch (e) { return reject(e); }
      if (Date.now() > until) return reject(new Error(`${what} did not start`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

/**
 * Start fcgiwrap and nginx serving `root`. Each runs in its own process
 * group, stopped as a group (fcgiwrap's preforked children outlive a
 * SIGTERM to the first one).
 */
export async function startNginxStack(root, dir, { env = process.env, children = 4 } = {}) {
  const missing = nginxMissing();
  if (missing) throw new Error(missing);
  mkdirSync(dir, { recursive: true });
  const socket = join(dir, 'fcgiwrap.sock');
  // fcgiwrap's workers ignore SIGCHLD: the kernel reaps their CGIs and their CPU is counted
  // nowhere. So the CGI is a bash script that runs git http-backend, waits for it, and writes
  // bash's `times` (the CPU of its waited-for children: http-backend, upload-pack, pack-objects;
  // milliseconds) to a file of its own; cgiCpuMs() adds them up. Bash's own ~1 ms is left out.
  const http = join(execFileSync('git', ['--exec-path'], { env }).toString().trim(), 'git-http-backend');
  const timesDir = join(dir, 'times');
  mkdirSync(timesDir, { recursive: true });
  const backend = join(dir, 'http-backend.sh');
  writeFileSync(backend, `#!/bin/bash\n'${http}'\nrc=$?\ntimes > '${timesDir}'/$$\nexit $rc\n`, { mode: 0o755 });
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConf({ dir, port, socket, root, backend, env }));
  const procs = [];
  // a bench that dies leaves no server behind
  const killAll = () => { for (const c of procs) try { process.kill(-c.pid, 'SIGTERM'); } catch { /* gone */ } };
  process.once('exit', killAll);
  const stop = async () => {
    process.off('exit', killAll);
    await Promise.all(procs.map((c) => new Promise((resolve) => {
      if (c.exitCode !== null || c.signalCode !== null) return resolve();
      c.once('exit', resolve);
      try { process.kill(-c.pid, 'SIGTERM'); } catch { resolve(); }
    })));
  };
  try {
    // -f: the CGI's stderr goes to nginx's error log
    // (fcgiwrap leaves its socket behind when it exits, and will not bind over one)
    rmSync(socket, { force: true });
    const fcgi = spawn(FCGIWRAP, ['-f', '-c', String(children), '-s', `unix:${socket}`], { env, detached: true, stdio: ['ignore', 'ignore', 'inherit'] });
    procs.push(fcgi);
    await waitFor('fcgiwrap', () => { if (fcgi.exitCode !== null) throw new Error(`fcgiwrap exited ${fcgi.exitCode}`); return existsSync(socket) && childrenOf(fcgi.pid).length >= (children > 1 ? children : 0); });
    const nginx = spawn(NGINX, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')], { env, detached: true, stdio: ['ignore', 'ignore', 'inherit'] });
    procs.push(nginx);
    const pidFile = join(dir, 'nginx.pid');
    await waitFor('nginx', () => { if (nginx.exitCode !== null) throw new Error(`nginx exited ${nginx.exitCode}: ${readFileSync(join(dir, 'error.log'), 'utf8')}`); return existsSync(pidFile); });
    return {
      port,
      /** the roots of the stack's process trees (nginx master: its workers; fcgiwrap: its children and their CGIs) */
      pids: () => [nginx.pid, fcgi.pid],
      /** CPU of the CGIs that have finished since the last call (their files are read and removed) */
      cgiCpuMs: () => cgiCpuMs(timesDir),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
