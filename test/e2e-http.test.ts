import { transportSuite } from './helpers/transport-suite.js';
import { startServe } from './helpers/server-process.js';

transportSuite({
  name: 'http',
  isomorphicGit: true,
  async start(root, opts) {
    const args = ['--http', '0', '--export-all', ...(opts?.maxPacks ? ['--max-packs', String(opts.maxPacks)] : [])];
    const s = await startServe(root, args, { ...opts?.env, ...(opts?.namespace ? { GIT_NAMESPACE: opts.namespace } : {}) });
    return { url: (rel) => `http://127.0.0.1:${s.httpPort}/${rel}`, cloneArgs: [], close: async () => { await s.stop(); } };
  },
}, [0, 2]);
