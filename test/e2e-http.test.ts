import { transportSuite } from './helpers/transport-suite.js';
import { startServe } from './helpers/server-process.js';

transportSuite({
  name: 'http',
  async start(root, opts) {
    const s = await startServe(root, ['--http', '0', '--export-all'], opts?.namespace ? { GIT_NAMESPACE: opts.namespace } : {});
    return { url: (rel) => `http://127.0.0.1:${s.httpPort}/${rel}`, cloneArgs: [], close: async () => { await s.stop(); } };
  },
}, [0, 2]);
