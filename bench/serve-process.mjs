/**
 * `gitwire serve` for a bench: HTTP and metrics on free ports, --quiet,
 * --export-all; resolves once both listeners are announced.
 *
 *   const { p, port, metricsPort } = await spawnServe(BIN, root, extraArgs, env);
 */
import { spawn } from 'node:child_process';

export async function spawnServe(bin, root, extra, env) {
  const p = spawn(bin, ['serve', root, '--http', '0', '--metrics', '0', '--quiet', '--export-all', ...extra], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const { port, metricsPort } = await new Promise((resolve, reject) => {
    let b = '';
    p.stdout.on('data', (d) => {
      b += d;
      const m = /"url":"http:\/\/[^:]+:(\d+)\//.exec(b), mm = /"metrics":"http:\/\/[^"]*:(\d+)\/metrics"/.exec(b);
      if (m && mm) resolve({ port: Number(m[1]), metricsPort: Number(mm[1]) });
    });
    p.on('exit', (c) => reject(new Error(`serve exited ${c}`)));
  });
  p.stdout.resume();
  return { p, port, metricsPort };
}
