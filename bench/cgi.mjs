/**
 * git http-backend run per request as a CGI program: the reference
 * smart-HTTP server the benchmarks compare gitwire serve with.
 * Usage: node bench/cgi.mjs <root> (prints {"port":N} when listening).
 */
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';

const root = process.argv[2];
const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const env = {
    ...process.env,
    GIT_PROJECT_ROOT: root, GIT_HTTP_EXPORT_ALL: '1', PATH_INFO: decodeURIComponent(url.pathname),
    REQUEST_METHOD: req.method, QUERY_STRING: url.search.slice(1), CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_ADDR: req.socket.remoteAddress ?? '', GATEWAY_INTERFACE: 'CGI/1.1', SERVER_PROTOCOL: 'HTTP/1.1',
  };
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
  if (req.headers['git-protocol']) env.HTTP_GIT_PROTOCOL = req.headers['git-protocol'];
  const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  req.pipe(child.stdin);
  child.stdin.on('error', () => {});
  let head = Buffer.alloc(0);
  let started = false;
  child.stdout.on('data', (d) => {
    if (started) { if (!res.write(d)) { child.stdout.pause(); res.once('drain', () => child.stdout.resume()); } return; }
    head = Buffer.concat([head, d]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    started = true;
    let status = 200;
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const i = line.indexOf(':');
      const k = line.slice(0, i), v = line.slice(i + 1).trim();
      if (k.toLowerCase() === 'status') status = parseInt(v, 10);
      else res.setHeader(k, v);
    }
    res.writeHead(status);
    const rest = head.subarray(end + 4);
    if (rest.length) res.write(rest);
  });
  child.on('close', () => res.end());
  res.on('close', () => { if (child.exitCode === null) child.kill(); });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));
